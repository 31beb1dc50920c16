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

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/reason"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/inventory"
)

// OutcomeDeny is the outcome of a denied admission in the metric
// claimbridge_admissions_total (the report keeps the decision's outcome).
const OutcomeDeny = "Deny"

// unservable is what admission found about a pod no node can serve.
type unservable struct {
	gaps   []feasibility.Unservable
	reason reason.Reason
	// deny: the pod is refused (onUnservable: Deny in an enforce
	// namespace); status is the refusal, with a field path per resource.
	deny   bool
	status *metav1.Status
}

// unservableRule is the namespace's onUnservable rule (its label, read from
// the namespace looked up when the cache did not have it yet), else the
// policy's, else Admit; and where it comes from, for the messages.
func (h *PodHandler) unservableRule(ns string, looked *corev1.Namespace) (v1alpha1.OnUnservable, string) {
	r := h.Inventory.OnUnservable(ns)
	if looked != nil {
		r = inventory.OnUnservableOf(looked)
	}
	if r != "" {
		return r, "namespace label " + api.LabelOnUnservable + "=" + string(r)
	}
	if r = h.Policy().Spec().OnUnservable; r != "" {
		return r, "policy onUnservable: " + string(r)
	}
	return v1alpha1.OnUnservableAdmit, ""
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
func (h *PodHandler) checkUnservable(pod *corev1.Pod, snap *feasibility.Snapshot, mode api.Mode, rule v1alpha1.OnUnservable, source string) *unservable {
	if snap == nil || pod.Annotations[corev1.MirrorPodAnnotationKey] != "" {
		return nil
	}
	gaps := explain.Judged(h.Policy(), snap.LegacyUnservable(pod))
	if len(gaps) == 0 {
		return nil
	}
	optedOut := pod.Annotations[api.AnnotationSkip] == "true"
	u := &unservable{gaps: gaps, deny: rule == v1alpha1.OnUnservableDeny && mode == api.ModeEnforce && !optedOut}
	msg := explain.UnservableMessage(gaps, snap.DRADevices() > 0) + explain.Consequence(pod, u.deny)
	switch {
	case rule != v1alpha1.OnUnservableDeny:
	case optedOut:
		msg += "; not denied: the pod opted out (" + api.AnnotationSkip + ")"
	case mode == api.ModeEnforce:
		msg += "; denied (" + source + ")"
	default:
		msg += "; it would be denied in enforce mode (" + source + ")"
	}
	msg += ": " + explain.Reasons().Remedy(explain.ReasonLegacyUnservable)
	u.reason = reason.Reason{Code: explain.ReasonLegacyUnservable, Severity: reason.SeverityWarning, Message: msg}
	if u.deny {
		// kubectl prints an Invalid status by its causes alone ("The Pod
		// "x" is invalid: <field>: Forbidden: <detail>"; the message is
		// dropped, k8s.io/kubectl/pkg/cmd/util.checkErr): each cause says
		// who refused, the code and what chose Deny.
		var errs field.ErrorList
		for _, g := range gaps {
			errs = append(errs, field.Forbidden(resourcePath(pod, g.Resource), fmt.Sprintf("claimbridge %s: %s; denied (%s)",
				explain.ReasonLegacyUnservable, explain.UnservableMessage([]feasibility.Unservable{g}, snap.DRADevices() > 0), source)))
		}
		st := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, podName(pod), errs).Status()
		// The message is the warning's, so that a ReplicaSet's FailedCreate
		// (and any client that prints the message) says what to do.
		st.Message = "claimbridge: " + u.reason.String()
		u.status = &st
	}
	return u
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
