package feasibility

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/claimbridge/claimbridge/podfacts"
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
	_, offers := s.LegacyOffers(pod)
	return len(offers)
}

// LegacyOffer is a node where a pod as submitted could run on the device
// plugin, with what it advertises of the extended resources the pod asks
// for (its allocatable).
type LegacyOffer struct {
	Node    string
	Offered corev1.ResourceList
}

// LegacyOffers lists, in name order, the nodes LegacyNodes counts, each
// with what it offers of the extended resources the pod asks for, and
// want, the pod's effective request of each (kube-scheduler's count: init
// containers and sidecars included). A caller that places several pods
// counts down what each node still offers.
func (s *Snapshot) LegacyOffers(pod *corev1.Pod) (want corev1.ResourceList, offers []LegacyOffer) {
	want = podfacts.ExtendedRequests(pod)
	if len(want) == 0 {
		return want, nil
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, ni := range s.nodes {
		if pod.Spec.NodeName != "" && ni.node.Name != pod.Spec.NodeName || !advertises(ni.node, want) {
			continue
		}
		if pod.Spec.NodeName == "" && nodeRejects(required, pod, ni.node) != "" {
			continue
		}
		offered := corev1.ResourceList{}
		for n := range want {
			offered[n] = ni.node.Status.Allocatable[n].DeepCopy()
		}
		offers = append(offers, LegacyOffer{Node: ni.node.Name, Offered: offered})
	}
	return want, offers
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
