package legacy

// What the device plugins offer: the fleet's nodes as a pod as submitted
// meets them, by the extended resources their allocatable advertises.
// Capacity, not what is free at one moment: what runs on the nodes does
// not count here.

import (
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/podfacts"
)

// Nodes are the nodes of a fleet, in name order, with what the questions
// of every pod ask of all of them remembered: whether a node reports no
// allocatable yet, and the most of each extended resource a node
// advertises. It is safe for concurrent use; the nodes must not be
// modified.
type Nodes struct {
	list []*corev1.Node

	once   sync.Once
	unsure bool
	mu     sync.Mutex
	byName map[corev1.ResourceName]resource.Quantity
}

// NewNodes holds nodes, which must be in name order.
func NewNodes(nodes []*corev1.Node) *Nodes { return &Nodes{list: nodes} }

// Offer is a node where a pod as submitted could run on the device
// plugin, with what it advertises of the extended resources the pod asks
// for (its allocatable).
type Offer struct {
	Node    string
	Offered corev1.ResourceList
}

// Offers lists, in name order, the nodes where the pod as submitted could
// run on the device plugin at all: nodes that pass its node selector,
// affinity, taints and schedulability and advertise in their allocatable
// at least what it asks of every extended resource, each with what it
// offers of them; and want, the pod's effective request of each
// (ExtendedRequests). A pod with spec.nodeName runs on that node or
// nowhere (the kubelet admits it against the node's allocatable). None
// for a pod that asks for no extended resource.
func (x *Nodes) Offers(pod *corev1.Pod) (want corev1.ResourceList, offers []Offer) {
	want = podfacts.ExtendedRequests(pod)
	if len(want) == 0 {
		return want, nil
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, node := range x.list {
		if pod.Spec.NodeName != "" && node.Name != pod.Spec.NodeName || !Advertises(node, want) {
			continue
		}
		if pod.Spec.NodeName == "" && upstream.NodeRejects(required, pod, node) != "" {
			continue
		}
		offered := corev1.ResourceList{}
		for n := range want {
			offered[n] = node.Status.Allocatable[n].DeepCopy()
		}
		offers = append(offers, Offer{Node: node.Name, Offered: offered})
	}
	return want, offers
}

// Unservable is an extended resource that no node could give a pod: no
// node advertises as much of it in its allocatable as the pod asks for.
type Unservable struct {
	Resource corev1.ResourceName
	// Requested is the pod's effective request of the resource, counted as
	// kube-scheduler counts it (init containers and sidecars included).
	Requested resource.Quantity
	// Most is the largest amount of it one node advertises; zero when no
	// node advertises it at all.
	Most resource.Quantity
	// Elsewhere, when Requested fits Most, lists (in name order) the nodes
	// that advertise enough of it but where the pod cannot run: its node
	// selector, affinity, tolerations or spec.nodeName exclude them all.
	Elsewhere []string
}

// Unservable lists, in name order, the extended resources of the pod that
// no node it can run on advertises in its allocatable with at least the
// pod's effective request: no node advertises that much at all (Most is
// less than Requested), or the nodes that do are all excluded by the pod's
// node selector, required affinity, tolerations or spec.nodeName
// (Elsewhere names them). Resources dra says DRA serves are never listed.
// It says nothing (nil) when there are no nodes, or when a node reports no
// allocatable at all (a node registering: what it offers is not known yet).
func (x *Nodes) Unservable(pod *corev1.Pod, dra func(corev1.ResourceName) bool) []Unservable {
	if len(x.list) == 0 || x.registering() {
		return nil
	}
	requests := podfacts.EffectiveRequests(pod)
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	var out []Unservable
	for _, n := range slices.Sorted(maps.Keys(requests)) {
		if !podfacts.IsExtendedResource(n) || dra(n) {
			continue
		}
		u := Unservable{Resource: n, Requested: requests[n], Most: x.most(n)}
		if u.Requested.Cmp(u.Most) > 0 {
			out = append(out, u)
			continue
		}
		if elsewhere := x.excludedOffering(pod, required, n, u.Requested); len(elsewhere) > 0 {
			u.Elsewhere = elsewhere
			out = append(out, u)
		}
	}
	return out
}

// excludedOffering lists the nodes that advertise at least want of the
// resource when the pod can run on none of them (its selector, affinity,
// tolerations or nodeName exclude every one); nil when it can run on one.
func (x *Nodes) excludedOffering(pod *corev1.Pod, required nodeaffinity.RequiredNodeAffinity, name corev1.ResourceName, want resource.Quantity) []string {
	var offering []string
	for _, node := range x.list {
		if !Advertises(node, corev1.ResourceList{name: want}) {
			continue
		}
		if pod.Spec.NodeName == node.Name || pod.Spec.NodeName == "" && upstream.NodeRejects(required, pod, node) == "" {
			return nil
		}
		offering = append(offering, node.Name)
	}
	slices.Sort(offering)
	return offering
}

// registering: a node reports no allocatable at all.
func (x *Nodes) registering() bool {
	x.once.Do(func() {
		for _, node := range x.list {
			if len(node.Status.Allocatable) == 0 {
				x.unsure = true
				return
			}
		}
	})
	return x.unsure
}

// most is the most of name a node advertises (zero when none does).
func (x *Nodes) most(name corev1.ResourceName) resource.Quantity {
	x.mu.Lock()
	defer x.mu.Unlock()
	if q, ok := x.byName[name]; ok {
		return q.DeepCopy()
	}
	var most resource.Quantity
	for _, node := range x.list {
		if have, ok := node.Status.Allocatable[name]; ok && have.Cmp(most) > 0 {
			most = have.DeepCopy()
		}
	}
	if x.byName == nil {
		x.byName = map[corev1.ResourceName]resource.Quantity{}
	}
	x.byName[name] = most
	return most.DeepCopy()
}

// Advertises reports whether the node's allocatable holds at least each
// quantity.
func Advertises(node *corev1.Node, want corev1.ResourceList) bool {
	for n, q := range want {
		have, ok := node.Status.Allocatable[n]
		if !ok || have.Cmp(q) < 0 {
			return false
		}
	}
	return true
}
