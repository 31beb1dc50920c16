package feasibility

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/feasibility/legacy"
)

// LegacyNodes counts the nodes where the pod as submitted could run on the
// device plugin at all, whatever runs there now: nodes that pass its node
// selector, affinity, taints and schedulability, advertise in their
// allocatable at least what it asks of every extended resource, and have
// room in their allocatable for every resource it requests (the
// comparison the verdict makes, upstream.Requests.Rejects). A DeviceClass
// that maps an extended resource (KEP-5004) does not count: this is the
// device plugin's own capacity. It is 0 for a pod that asks for no
// extended resource. A pod with spec.nodeName runs on that node or nowhere
// (the kubelet admits it against the node's allocatable). It answers
// "where does this pod run today" and "where could it still run after the
// switch to DRA" for the cutover forecast: capacity, not what is free now.
func (s *Snapshot) LegacyNodes(pod *corev1.Pod) int {
	_, offers := s.LegacyOffers(pod)
	return len(offers)
}

// LegacyOffer is a node where a pod as submitted could run on the device
// plugin, with what it advertises of the extended resources the pod asks
// for (its allocatable).
type LegacyOffer = legacy.Offer

// LegacyOffers lists, in name order, the nodes LegacyNodes counts, each
// with what it offers of the extended resources the pod asks for, and
// want, the pod's effective request of each (kube-scheduler's count: init
// containers and sidecars included). A caller that places several pods
// counts down what each node still offers.
func (s *Snapshot) LegacyOffers(pod *corev1.Pod) (want corev1.ResourceList, offers []LegacyOffer) {
	return s.devicePlugin.Offers(pod, s.draServes)
}

// LegacyWhyNone says why no node runs the pod as submitted (LegacyOffers
// is empty), naming what is really missing: a resource it requests that no
// node has as much of, else what keeps it off the nodes that have room
// (legacy.Nodes.WhyNone); "" when a node runs it or it asks for no
// extended resource.
func (s *Snapshot) LegacyWhyNone(pod *corev1.Pod) string {
	return s.devicePlugin.WhyNone(pod, s.draServes)
}
