package webhook

// After the switch to DRA: a pod that claimbridge does not translate and
// that asks for an extended resource no node offers any more (the device
// plugin is gone) would wait Pending forever without a word. Admission says
// so (warning, report reason, metric; a denial where the namespace or the
// policy asks for onUnservable: Deny) and the leader's StrandController
// puts a Warning Event on such pods and their owners.

import (
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/translate"
)

// OutcomeDeny is the outcome of a denied admission in the metric
// claimbridge_admissions_total (the report keeps the decision's outcome).
const OutcomeDeny = "Deny"

// unservable is what admission found about a pod no node can serve.
type unservable struct {
	gaps   []feasibility.Unservable
	reason translate.Reason
	// deny: the pod is refused (onUnservable: Deny in an enforce
	// namespace); status is the refusal, with a field path per resource.
	deny   bool
	status *metav1.Status
}

// unservableRule is the namespace's onUnservable rule (its label, read from
// the namespace looked up when the cache did not have it yet), else the
// policy's, else Admit; and where it comes from, for the messages.
func (h *PodHandler) unservableRule(ns string, looked *corev1.Namespace) (translate.OnUnservable, string) {
	r := h.Inventory.OnUnservable(ns)
	if looked != nil {
		r = onUnservableOf(looked)
	}
	if r != "" {
		return r, "namespace label " + translate.LabelOnUnservable + "=" + string(r)
	}
	if r = h.Policy().Spec().OnUnservable; r != "" {
		return r, "policy onUnservable: " + string(r)
	}
	return translate.OnUnservableAdmit, ""
}

// checkUnservable: a pod admitted without translation (any outcome but
// Translate) that asks for an extended resource no node advertises as much
// of as it needs (feasibility.Snapshot.LegacyUnservable) is unservable;
// nil otherwise, and when the inventory is not synced or lists no nodes.
// Mirror pods (the kubelet's copies of static pods) are never judged;
// resources the policy reads as capacities of a device (capacityOf, e.g.
// HAMi's gpumem) are no node's allocatable where they are served, so they
// are not judged either. A pod that opted out (claimbridge.io/skip) is
// warned but never denied.
func (h *PodHandler) checkUnservable(pod *corev1.Pod, snap *feasibility.Snapshot, mode Mode, rule translate.OnUnservable, source string) *unservable {
	if snap == nil || pod.Annotations[corev1.MirrorPodAnnotationKey] != "" {
		return nil
	}
	gaps := judged(h.Policy(), snap.LegacyUnservable(pod))
	if len(gaps) == 0 {
		return nil
	}
	optedOut := pod.Annotations[translate.AnnotationSkip] == "true"
	u := &unservable{gaps: gaps, deny: rule == translate.OnUnservableDeny && mode == ModeEnforce && !optedOut}
	msg := unservableMessage(gaps, snap.DRADevices() > 0) + consequence(pod, u.deny)
	switch {
	case rule != translate.OnUnservableDeny:
	case optedOut:
		msg += "; not denied: the pod opted out (" + translate.AnnotationSkip + ")"
	case mode == ModeEnforce:
		msg += "; denied (" + source + ")"
	default:
		msg += "; it would be denied in enforce mode (" + source + ")"
	}
	msg += ": " + catalog.Remedy(ReasonLegacyUnservable)
	u.reason = translate.Reason{Code: ReasonLegacyUnservable, Severity: translate.SeverityWarning, Message: msg}
	if u.deny {
		var errs field.ErrorList
		for _, g := range gaps {
			errs = append(errs, field.Forbidden(resourcePath(pod, g.Resource), unservableMessage([]feasibility.Unservable{g}, snap.DRADevices() > 0)))
		}
		st := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, podName(pod), errs).Status()
		// The causes name the fields; the message is the warning's, so that
		// `kubectl apply` and a ReplicaSet's FailedCreate say what to do.
		st.Message = "claimbridge: " + u.reason.String()
		u.status = &st
	}
	return u
}

// judged drops the resources the policy reads as capacities of a device.
func judged(p *translate.Policy, gaps []feasibility.Unservable) []feasibility.Unservable {
	rules := p.Spec().Resources
	return slices.DeleteFunc(gaps, func(g feasibility.Unservable) bool {
		return slices.ContainsFunc(rules, func(r translate.ResourceRule) bool {
			return r.CapacityOf != "" && matchesResource(r.Name, g.Resource)
		})
	})
}

// matchesResource: a rule's name, exact or a pattern with a trailing *.
func matchesResource(rule string, name corev1.ResourceName) bool {
	if prefix, ok := strings.CutSuffix(rule, "*"); ok {
		return strings.HasPrefix(string(name), prefix)
	}
	return rule == string(name)
}

// unservableMessage says what no node offers: "no node offers
// nvidia.com/gpu any more (DRA replaced the device plugin)", or "no node
// offers 8 nvidia.com/gpu (at most 4 on one node)".
func unservableMessage(gaps []feasibility.Unservable, dra bool) string {
	var parts, excluded []string
	var elsewhere []string
	gone := true
	for _, g := range gaps {
		switch {
		case len(g.Elsewhere) > 0:
			excluded = append(excluded, string(g.Resource))
			for _, n := range g.Elsewhere {
				if !slices.Contains(elsewhere, n) {
					elsewhere = append(elsewhere, n)
				}
			}
		case g.Most.IsZero():
			parts = append(parts, string(g.Resource))
		default:
			gone = false
			parts = append(parts, fmt.Sprintf("%s %s (at most %s on one node)", g.Requested.String(), g.Resource, g.Most.String()))
		}
	}
	var msgs []string
	if len(parts) > 0 {
		msg := "no node offers " + strings.Join(parts, ", ")
		if gone && dra {
			msg += " any more (DRA replaced the device plugin)"
		}
		msgs = append(msgs, msg)
	}
	if len(excluded) > 0 {
		msgs = append(msgs, fmt.Sprintf("no node this pod may run on offers %s: only %s, which its node selector, affinity, tolerations or nodeName exclude",
			strings.Join(excluded, ", "), nodeList(elsewhere)))
	}
	return strings.Join(msgs, "; ")
}

// nodeList names up to three nodes: "a, b, c and 4 more".
func nodeList(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}

// consequence is what happens to the pod, or would had it not been
// denied: it waits Pending, or the kubelet of the node it is bound to
// refuses it.
func consequence(pod *corev1.Pod, denied bool) string {
	switch {
	case pod.Spec.NodeName != "" && denied:
		return "; the kubelet of " + pod.Spec.NodeName + " would refuse this pod"
	case pod.Spec.NodeName != "":
		return "; the kubelet of " + pod.Spec.NodeName + " will refuse this pod"
	case denied:
		return "; this pod would stay Pending"
	}
	return "; this pod stays Pending"
}

// resourcePath is the field of the first container (app containers first,
// then init containers) that asks for the resource, by limit or request.
func resourcePath(pod *corev1.Pod, name corev1.ResourceName) *field.Path {
	find := func(cs []corev1.Container, p *field.Path) *field.Path {
		for i, c := range cs {
			if _, ok := c.Resources.Limits[name]; ok {
				return p.Index(i).Child("resources", "limits").Key(string(name))
			}
			if _, ok := c.Resources.Requests[name]; ok {
				return p.Index(i).Child("resources", "requests").Key(string(name))
			}
		}
		return nil
	}
	if p := find(pod.Spec.Containers, field.NewPath("spec", "containers")); p != nil {
		return p
	}
	if p := find(pod.Spec.InitContainers, field.NewPath("spec", "initContainers")); p != nil {
		return p
	}
	return field.NewPath("spec")
}

// denied is the refusal of a pod, with the warnings besides its own.
func (u *unservable) denied(warnings []string) admission.Response {
	resp := admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: u.status}}
	return resp.WithWarnings(warnings...)
}

// withoutLine drops the warning that says what the denial says.
func withoutLine(warnings []string, line string) []string {
	return slices.DeleteFunc(warnings, func(w string) bool { return w == line })
}

// onUnservableOf is a namespace's rule from its label, "" when it has none
// (or an unknown value: the policy's rule then applies).
func onUnservableOf(ns *corev1.Namespace) translate.OnUnservable {
	r, _ := translate.ParseOnUnservable(ns.Labels[translate.LabelOnUnservable])
	return r
}

// asksExtended: some container of the pod names a domain-prefixed resource
// (a cheap test for the pod index; LegacyUnservable decides).
func asksExtended(p *corev1.Pod) bool {
	has := func(cs []corev1.Container) bool {
		return slices.ContainsFunc(cs, func(c corev1.Container) bool {
			for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
				for n := range l {
					if strings.Contains(string(n), "/") {
						return true
					}
				}
			}
			return false
		})
	}
	return has(p.Spec.Containers) || has(p.Spec.InitContainers)
}
