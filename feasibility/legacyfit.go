package feasibility

// The legacy side of the fleet: where the device plugin would run a pod as
// submitted now. A pod that DRA cannot serve now is kept on the device
// plugin when a node there has room for it (decide, DRABusyLegacyFree):
// translating it would make it wait for DRA devices that are in use, or
// held by pods admitted a moment ago, while a device-plugin node is free.

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// LegacyFit says whether the device plugin would run a pod as submitted now.
type LegacyFit struct {
	// Known is false when the inventory lists no pods: without the
	// requests of the pods bound to each node, what is free is not known.
	Known bool
	// Node is the first node, in name order, that advertises every
	// extended resource the pod asks for and has room for the pod after the
	// pods bound to it; "" when none has.
	Node string
	// Nodes counts the nodes that have room.
	Nodes int
}

// LegacyFitsNow finds the nodes where the pod as submitted would run now on
// its extended resources (device plugins): nodes that pass its node
// selector, affinity, taints and schedulability, advertise every extended
// resource it asks for in their allocatable, and have room for all its
// requests (CPU, memory, extended resources, pods) after those of the pods
// bound to them, as NodeResourcesFit counts. A DeviceClass that maps an
// extended resource (KEP-5004) does not count here: this is the device
// plugin's own capacity.
func (s *Snapshot) LegacyFitsNow(pod *corev1.Pod) LegacyFit {
	fit := LegacyFit{Known: len(s.nodes) > 0 && s.nodes[0].usageKnown}
	requests := podRequests(withDefaultRequests(pod))
	var extended []corev1.ResourceName
	for n := range requests {
		if isExtendedResourceName(n) {
			extended = append(extended, n)
		}
	}
	if !fit.Known || len(extended) == 0 {
		return fit
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, ni := range s.nodes {
		alloc := ni.node.Status.Allocatable
		if slices.ContainsFunc(extended, func(n corev1.ResourceName) bool { q, ok := alloc[n]; return !ok || q.IsZero() }) {
			continue
		}
		// Every resource is compared: this is the device plugin's own capacity.
		if nodeRejects(required, pod, ni.node) != "" || s.short(ni, requests, func(corev1.ResourceName) bool { return false }) != "" {
			continue
		}
		if fit.Node == "" {
			fit.Node = ni.node.Name
		}
		fit.Nodes++
	}
	return fit
}
