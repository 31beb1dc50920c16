package decide

// After the switch to DRA, a pod that claimbridge does not translate and
// that asks for an extended resource no node offers any more (the device
// plugin is gone) would wait Pending forever without a word. Admission,
// the strand controller and the live report judge it here, alike, and say
// so through explain.

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/translate"
)

// Unservable is a pod no node can serve as submitted: what it asks for
// that no node offers as much of.
type Unservable struct {
	Gaps []feasibility.Unservable
	// DRA: the fleet has DRA devices (the device plugin was replaced).
	DRA bool
}

// JudgeUnservable says whether a pod no node can serve as submitted
// (feasibility.Snapshot.LegacyUnservable) is unservable; nil when it is
// served and when the inventory is not synced (snap nil). Resources the policy reads
// as capacities of a device (capacityOf, e.g. HAMi's gpumem) are no node's
// allocatable where they are served, so they are not judged.
func JudgeUnservable(p *translate.Policy, snap *feasibility.Snapshot, pod *corev1.Pod) *Unservable {
	if snap == nil {
		return nil
	}
	gaps := snap.LegacyUnservable(pod)
	if p != nil {
		rules := p.Spec().Resources
		gaps = slices.DeleteFunc(gaps, func(g feasibility.Unservable) bool {
			return slices.ContainsFunc(rules, func(r v1alpha1.ResourceRule) bool {
				return r.CapacityOf != "" && matchesResource(r.Name, g.Resource)
			})
		})
	}
	if len(gaps) == 0 {
		return nil
	}
	return &Unservable{Gaps: gaps, DRA: snap.DRADevices() > 0}
}

// Denied says whether the pod is refused: the rule is Deny, the namespace
// enforces, and the pod did not opt out (claimbridge.io/skip: it is warned,
// never denied).
func (u *Unservable) Denied(rule v1alpha1.OnUnservable, mode api.Mode, pod *corev1.Pod) bool {
	return u != nil && rule == v1alpha1.OnUnservableDeny && mode == api.ModeEnforce && !OptedOut(pod)
}

// OptedOut: the pod carries claimbridge.io/skip: "true".
func OptedOut(pod *corev1.Pod) bool {
	return pod.Annotations[api.AnnotationSkip] == "true"
}

// matchesResource: a rule's name, exact or a pattern with a trailing *.
func matchesResource(rule string, name corev1.ResourceName) bool {
	if prefix, ok := strings.CutSuffix(rule, "*"); ok {
		return strings.HasPrefix(string(name), prefix)
	}
	return rule == string(name)
}
