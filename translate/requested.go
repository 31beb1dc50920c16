package translate

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/podfacts"
)

// DevicesRequested counts the devices a pod asks for, per extended resource
// the policy maps as a device count (not capacity or companion rules), as
// the pod's effective request ([podfacts.DeviceCounts]: app containers and
// sidecars add up, an init container that runs alone asks for its own
// count, a container's limit counts, else its request). Resources with no
// device asked for are absent; nil when there is none.
//
// It reads the pod as submitted, whatever translation decides, so a report
// can say how many devices a pod that stays legacy holds on the device
// plugin.
func (p *Policy) DevicesRequested(pod *corev1.Pod) map[corev1.ResourceName]int64 {
	return podfacts.DeviceCounts(pod, func(n corev1.ResourceName) bool {
		rule, _, ok := p.resourceRule(string(n))
		return ok && rule.Capacity == "" && len(rule.OnlyWith) == 0
	})
}
