package legacy

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/podfacts"
)

// Room is what the device plugin's nodes have free for pods as submitted:
// each node's allocatable after the requests of the pods bound to it (its
// usage) and of the pods Take placed there.
type Room struct {
	n       int
	node    func(i int) *corev1.Node
	usageOf func(i int) upstream.Usage
	used    map[int]upstream.Usage // by node position, once read, with what Take placed
}

// NewRoom is the room of n nodes, in name order: node gives the one at a
// position, usage what the pods bound to it request (read once per node,
// for the nodes that offer what a pod asks for).
func NewRoom(n int, node func(i int) *corev1.Node, usage func(i int) upstream.Usage) *Room {
	return &Room{n: n, node: node, usageOf: usage, used: map[int]upstream.Usage{}}
}

// UsageOf sums the requests of the pods bound to the node and not
// finished, as kube-scheduler's NodeResourcesFit counts them.
func UsageOf(node string, pods []*corev1.Pod) upstream.Usage {
	u := upstream.Usage{Used: corev1.ResourceList{}, Known: true}
	for _, p := range pods {
		if p.Spec.NodeName != node || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		add(u.Used, podfacts.EffectiveRequests(p))
		u.Pods++
	}
	return u
}

// add adds requests to used.
func add(used, requests corev1.ResourceList) {
	for name, q := range requests {
		sum := used[name]
		sum.Add(q)
		used[name] = sum
	}
}

// Take places the pods, in order, each on the first node that runs it now
// (Fits) with the pods placed before it; a pod no node runs now takes
// nothing.
func (r *Room) Take(pods []*corev1.Pod) {
	for _, p := range pods {
		r.Fits(p, func(i int) bool {
			u := r.usage(i)
			used := u.Used.DeepCopy()
			if used == nil {
				used = corev1.ResourceList{}
			}
			add(used, podfacts.EffectiveRequests(p))
			r.used[i] = upstream.Usage{Used: used, Pods: u.Pods + 1, Known: u.Known}
			return false
		})
	}
}

// Fits calls yield with the position of each node, in name order, that
// runs the pod as submitted now on its extended resources, until yield
// returns false: the node advertises every extended resource the pod asks
// for, passes its node selector, affinity, taints and schedulability, and
// has room for all its requests (CPU, memory, extended resources, pods),
// as NodeResourcesFit counts. A pod that asks for no extended resource is
// not the device plugin's: it fits nowhere here.
func (r *Room) Fits(pod *corev1.Pod, yield func(i int) bool) {
	requests := podfacts.EffectiveRequests(pod)
	var extended []corev1.ResourceName
	for n := range requests {
		if podfacts.IsExtendedResource(n) {
			extended = append(extended, n)
		}
	}
	if len(extended) == 0 {
		return
	}
	// Every resource is compared: this is the device plugin's own capacity.
	compared := upstream.CompareRequests(requests, func(corev1.ResourceName) bool { return false })
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for i := range r.n {
		node := r.node(i)
		alloc := node.Status.Allocatable
		if slices.ContainsFunc(extended, func(n corev1.ResourceName) bool { q, ok := alloc[n]; return !ok || q.IsZero() }) {
			continue
		}
		if upstream.NodeRejects(required, pod, node) != "" || compared.Short(node, r.usage(i)) != "" {
			continue
		}
		if !yield(i) {
			return
		}
	}
}

// usage is what the pods bound to the node at i request, with what Take
// placed there.
func (r *Room) usage(i int) upstream.Usage {
	u, ok := r.used[i]
	if !ok {
		u = r.usageOf(i)
		r.used[i] = u
	}
	return u
}
