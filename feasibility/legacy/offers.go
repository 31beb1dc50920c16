package legacy

// What the device plugins offer: the fleet's nodes as a pod as submitted
// meets them, by the extended resources their allocatable advertises.
// Capacity, not what is free at one moment: what runs on the nodes does
// not count here.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
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
// run on the device plugin at all: nodes that advertise in their
// allocatable at least what it asks of every extended resource and that
// kube-scheduler's filters let it on whatever runs there
// (upstream.Requests.Rejects: its node selector, affinity, taints,
// schedulability, and every resource it requests — cpu, memory,
// ephemeral-storage, hugepages, extended resources — against allocatable,
// the very comparison the verdict makes; dra names the extended resources
// a DeviceClass maps, which it leaves to DRA), each with what it offers of
// the extended resources; and want, the pod's effective request of each
// (ExtendedRequests). A pod with spec.nodeName runs on that node or
// nowhere (the kubelet admits it against the node's allocatable, every
// resource alike). None for a pod that asks for no extended resource.
func (x *Nodes) Offers(pod *corev1.Pod, dra func(corev1.ResourceName) bool) (want corev1.ResourceList, offers []Offer) {
	want = podfacts.ExtendedRequests(pod)
	if len(want) == 0 {
		return want, nil
	}
	requests := upstream.CompareRequests(podfacts.EffectiveRequests(pod), dra)
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, node := range x.list {
		if !x.runs(pod, required, requests, node) || !Advertises(node, want) {
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

// runs: the node can ever hold the pod — its spec.nodeName's node, with
// room in allocatable for its requests, or a node kube-scheduler's filters
// let it on (upstream.Requests.Rejects).
func (x *Nodes) runs(pod *corev1.Pod, required nodeaffinity.RequiredNodeAffinity, requests upstream.Requests, node *corev1.Node) bool {
	if pod.Spec.NodeName != "" {
		return node.Name == pod.Spec.NodeName && requests.Short(node, upstream.Usage{}) == ""
	}
	return requests.Rejects(required, pod, node) == ""
}

// WhyNone says why no node runs the pod as submitted, in the order that
// names what is really missing: first a resource it requests that no node
// of the fleet has as much of in its allocatable (whatever the pod's
// selectors: "no node offers nvidia.com/gpumem"), then, when some nodes
// have every resource, what keeps the pod off them (its node selector,
// affinity, taints, spec.nodeName: kube-scheduler's own message), else that
// no one node has them all. dra names the extended resources a DeviceClass
// maps (DRA serves them; not compared). "" when some node runs it, or it
// asks for no extended resource (the device plugin's side says nothing).
func (x *Nodes) WhyNone(pod *corev1.Pod, dra func(corev1.ResourceName) bool) string {
	if _, offers := x.Offers(pod, dra); len(offers) > 0 || len(podfacts.ExtendedRequests(pod)) == 0 {
		return ""
	}
	requests := podfacts.EffectiveRequests(pod)
	for _, n := range slices.Sorted(maps.Keys(requests)) {
		if n == corev1.ResourcePods || podfacts.IsExtendedResource(n) && dra(n) {
			continue
		}
		want, most := requests[n], x.most(n)
		switch {
		case most.IsZero():
			return fmt.Sprintf("no node offers %s (the pod asks for %s)", n, want.String())
		case want.Cmp(most) > 0:
			return fmt.Sprintf("no node has room for %s %s (the most one node has allocatable is %s)", want.String(), n, most.String())
		}
	}
	compared := upstream.CompareRequests(requests, dra)
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	var holding []string
	why := ""
	for _, node := range x.list {
		if compared.Short(node, upstream.Usage{}) != "" || !Advertises(node, podfacts.ExtendedRequests(pod)) {
			continue
		}
		holding = append(holding, node.Name)
		if why == "" && pod.Spec.NodeName == "" {
			why = upstream.NodeRejects(required, pod, node)
		}
	}
	switch {
	case len(holding) == 0:
		return x.noRoom(pod, compared)
	case pod.Spec.NodeName != "":
		return fmt.Sprintf("its spec.nodeName %s names none of the nodes with room for what it requests (%s)", pod.Spec.NodeName, nodeList(holding))
	}
	return fmt.Sprintf("every node with room for what it requests (%s) rejects it: %s %s", nodeList(holding), holding[0], why)
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

// noRoom says why no node has room for everything the pod requests,
// though each resource is on some node: the nodes that advertise its
// extended resources lack room for the rest (NodeResourcesFit's words for
// the first of them), or no one node advertises them all.
func (x *Nodes) noRoom(pod *corev1.Pod, compared upstream.Requests) string {
	extended := podfacts.ExtendedRequests(pod)
	names := make([]string, 0, len(extended))
	for _, n := range slices.Sorted(maps.Keys(extended)) {
		names = append(names, string(n))
	}
	var offering []string
	short := ""
	for _, node := range x.list {
		if Advertises(node, extended) {
			offering = append(offering, node.Name)
			if short == "" {
				short = compared.Short(node, upstream.Usage{})
			}
		}
	}
	if len(offering) == 0 {
		return "no one node offers " + strings.Join(names, " and ") + " together"
	}
	return fmt.Sprintf("the nodes that offer %s (%s) have no room for the rest: %s %s", strings.Join(names, ", "), nodeList(offering), offering[0], short)
}

// nodeList names up to three nodes, and how many more.
func nodeList(nodes []string) string {
	if len(nodes) > 3 {
		return strings.Join(nodes[:3], ", ") + fmt.Sprintf(" and %d more", len(nodes)-3)
	}
	return strings.Join(nodes, ", ")
}
