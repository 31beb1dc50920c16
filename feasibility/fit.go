package feasibility

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/podfacts"
)

// Node fit for everything a pod asks for besides its claims: CPU, memory,
// hugepages, ephemeral storage, pods and the extended resources it still
// requests, as kube-scheduler's NodeResourcesFit filter does
// (upstream.Requests.Short) — the pod's
// effective requests (k8s.io/component-helpers/resource, with init
// containers, sidecars and overhead) against the node's allocatable minus
// what the pods already bound to it request. Usage is only known when the
// inventory lists pods (offline fleets, `audit --kubeconfig`); the webhook
// compares with allocatable alone. Extended resources that a DeviceClass
// maps (KEP-5004) are served from DRA on nodes without them, so they are
// not compared.

// addUsage sums the requests of bound, unfinished pods per node.
func addUsage(nodes []*nodeInfo, byName map[string]int, pods []*corev1.Pod, listed bool) {
	if len(pods) == 0 && !listed {
		return
	}
	for _, ni := range nodes {
		ni.usageKnown = true
	}
	for _, p := range pods {
		i, ok := byName[p.Spec.NodeName]
		if !ok || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		ni := nodes[i]
		if ni.used == nil {
			ni.used = corev1.ResourceList{}
		}
		for n, q := range podfacts.EffectiveRequests(p) {
			cur := ni.used[n]
			cur.Add(q)
			ni.used[n] = cur
		}
		ni.pods++
	}
}

// insufficient returns why the node cannot hold the requests, or "". A node
// that reports no allocatable resources at all is not judged. Extended
// resources a DeviceClass maps (KEP-5004) are not compared: DRA serves them.
func (s *Snapshot) insufficient(ni *nodeInfo, requests corev1.ResourceList) string {
	return s.short(ni, requests, s.draServes)
}

// short is insufficient, with skip naming the resources not compared.
func (s *Snapshot) short(ni *nodeInfo, requests corev1.ResourceList, skip func(corev1.ResourceName) bool) string {
	return s.compared(requests, skip).Short(ni.node, ni.usage())
}

// usage is what the pods bound to the node request.
func (ni *nodeInfo) usage() upstream.Usage {
	return upstream.Usage{Used: ni.used, Pods: ni.pods, Known: ni.usageKnown}
}

// compared gives the requests insufficient (skip nil) or short compares.
func (s *Snapshot) compared(requests corev1.ResourceList, skip func(corev1.ResourceName) bool) upstream.Requests {
	if skip == nil {
		skip = s.draServes
	}
	return upstream.CompareRequests(requests, skip)
}

// draServes reports whether a DeviceClass maps the extended resource
// (extendedResourceName, KEP-5004): the scheduler then serves it from DRA
// on nodes that do not advertise it.
func (s *Snapshot) draServes(name corev1.ResourceName) bool {
	for _, c := range s.classes {
		if c.Spec.ExtendedResourceName != nil && *c.Spec.ExtendedResourceName == string(name) {
			return true
		}
	}
	return false
}
