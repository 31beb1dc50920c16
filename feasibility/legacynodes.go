package feasibility

import (
	"github.com/claimbridge/claimbridge/translate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// LegacyNodes counts the nodes where the pod as submitted could run on the
// device plugin at all, whatever runs there now: nodes that pass its node
// selector, affinity, taints and schedulability and advertise in their
// allocatable at least what it asks of every extended resource. A
// DeviceClass that maps an extended resource (KEP-5004) does not count:
// this is the device plugin's own capacity. It is 0 for a pod that asks for
// no extended resource. A pod with spec.nodeName runs on that node or
// nowhere (the kubelet admits it against the node's allocatable).
//
// It answers "where does this pod run today" and "where could it still run
// after the switch to DRA" for the cutover forecast, which compares capacity,
// not what is free at one moment.
func (s *Snapshot) LegacyNodes(pod *corev1.Pod) int {
	requests := podRequests(withDefaultRequests(pod))
	extended := corev1.ResourceList{}
	for n, q := range requests {
		if translate.IsExtendedResource(n) {
			extended[n] = q
		}
	}
	if len(extended) == 0 {
		return 0
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	count := 0
	for _, ni := range s.nodes {
		if pod.Spec.NodeName != "" {
			if ni.node.Name == pod.Spec.NodeName && advertises(ni.node, extended) {
				count++
			}
			continue
		}
		if advertises(ni.node, extended) && nodeRejects(required, pod, ni.node) == "" {
			count++
		}
	}
	return count
}

// advertises: the node's allocatable holds at least each quantity.
func advertises(node *corev1.Node, want corev1.ResourceList) bool {
	for n, q := range want {
		have, ok := node.Status.Allocatable[n]
		if !ok || have.Cmp(q) < 0 {
			return false
		}
	}
	return true
}
