package explain

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/reason"
)

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

// Unservable is the LegacyUnservable reason of a pod no node can serve:
// what no node offers, what happens to the pod, what the namespace's rule
// does with it (rule, from source: decide.OnUnservable; "" says nothing
// of a refusal, as the controllers and the live report, which tell pods
// already admitted) and the remedy.
func Unservable(u *decide.Unservable, pod *corev1.Pod, mode api.Mode, rule v1alpha1.OnUnservable, source string) reason.Reason {
	denied := u.Denied(rule, mode, pod)
	msg := unservableMessage(u.Gaps, u.DRA) + consequence(pod, denied)
	switch {
	case rule != v1alpha1.OnUnservableDeny:
	case decide.OptedOut(pod):
		msg += "; not denied: the pod opted out (" + api.AnnotationSkip + ")"
	case mode == api.ModeEnforce:
		msg += "; denied (" + source + ")"
	default:
		msg += "; it would be denied in enforce mode (" + source + ")"
	}
	msg += ": " + catalog.Remedy(ReasonLegacyUnservable)
	return reason.Reason{Code: ReasonLegacyUnservable, Severity: reason.SeverityWarning, Message: msg}
}

// refusal is the status of a pod refused as unservable. kubectl prints an
// Invalid status by its causes alone ("The Pod "x" is invalid: <field>:
// Forbidden: <detail>"; the message is dropped,
// k8s.io/kubectl/pkg/cmd/util.checkErr): each cause says who refused, the
// code and what chose Deny. The message is the warning's, so that a
// ReplicaSet's FailedCreate (and any client that prints the message) says
// what to do.
func refusal(u *decide.Unservable, pod *corev1.Pod, name, source string, said reason.Reason) *metav1.Status {
	var errs field.ErrorList
	for _, g := range u.Gaps {
		errs = append(errs, field.Forbidden(resourcePath(pod, g.Resource), fmt.Sprintf("claimbridge %s: %s; denied (%s)",
			ReasonLegacyUnservable, unservableMessage([]feasibility.Unservable{g}, u.DRA), source)))
	}
	st := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, name, errs).Status()
	st.Message = "claimbridge: " + said.String()
	return &st
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
