package feasibility

// The legacy side of the fleet: where the device plugin would run a pod as
// submitted now. A pod that DRA cannot serve now is kept on the device
// plugin when a node there has room for it (decide, DRABusyLegacyFree):
// translating it would make it wait for DRA devices that are in use, or
// held by pods admitted a moment ago, while a device-plugin node is free.

import (
	"slices"
	"sync"

	"github.com/claimbridge/claimbridge/podfacts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	requests := podfacts.EffectiveRequests(pod)
	extended := podfacts.ExtendedNames(requests)
	if !fit.Known || len(extended) == 0 {
		return fit
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for i := range s.nodes {
		ni := s.nodeAt(i) // with the usage of s
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

// LegacyUnservable lists, in name order, the extended resources of the pod
// as submitted that no node it can run on advertises in its allocatable
// with at least the pod's effective request (what one node must give it):
// kube-scheduler rejects the pod on every node, so it stays Pending until a
// node offers them — after a cluster switched from the device plugin to
// DRA, never. Two cases: no node of the fleet advertises that much at all
// (Most is less than Requested: the resource is gone), or the nodes that
// do are all excluded by the pod's node selector, required affinity,
// tolerations or spec.nodeName (Elsewhere names them: the nodes that kept
// the device plugin are not where the pod may go). What runs on the nodes
// does not count: this is about capacity, not about a busy moment.
// Extended resources that a DeviceClass maps (KEP-5004) are served from
// DRA and never listed.
//
// It says nothing (nil) when the snapshot has no nodes, or when a node
// reports no allocatable at all (a node registering: what it offers is not
// known yet).
func (s *Snapshot) LegacyUnservable(pod *corev1.Pod) []Unservable {
	if len(s.nodes) == 0 || s.legacy.registering(s.nodes) {
		return nil
	}
	requests := podfacts.EffectiveRequests(pod)
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	var out []Unservable
	for _, n := range podfacts.ExtendedNames(requests) {
		if s.draServes(n) {
			continue
		}
		u := Unservable{Resource: n, Requested: requests[n], Most: s.legacy.most(s.nodes, n)}
		if u.Requested.Cmp(u.Most) > 0 {
			out = append(out, u)
			continue
		}
		if elsewhere := s.excludedOffering(pod, required, n, u.Requested); len(elsewhere) > 0 {
			u.Elsewhere = elsewhere
			out = append(out, u)
		}
	}
	return out
}

// excludedOffering lists the nodes that advertise at least want of the
// resource when the pod can run on none of them (its selector, affinity,
// tolerations or nodeName exclude every one); nil when it can run on one.
func (s *Snapshot) excludedOffering(pod *corev1.Pod, required nodeaffinity.RequiredNodeAffinity, name corev1.ResourceName, want resource.Quantity) []string {
	var offering []string
	for _, ni := range s.nodes {
		if !advertises(ni.node, corev1.ResourceList{name: want}) {
			continue
		}
		if pod.Spec.NodeName == ni.node.Name || pod.Spec.NodeName == "" && nodeRejects(required, pod, ni.node) == "" {
			return nil
		}
		offering = append(offering, ni.node.Name)
	}
	slices.Sort(offering)
	return offering
}

// DRADevices is the number of DRA devices the snapshot's nodes see.
func (s *Snapshot) DRADevices() int { return s.devices }

// legacyOffers remembers, for the nodes of a fleet snapshot (shared by the
// snapshots derived from it: their nodes are the same objects), whether a
// node reports no allocatable yet and the most of each extended resource a
// node advertises: what LegacyUnservable asks of every node for every pod.
type legacyOffers struct {
	once   sync.Once
	unsure bool
	mu     sync.Mutex
	byName map[corev1.ResourceName]resource.Quantity
}

// registering: a node reports no allocatable at all.
func (o *legacyOffers) registering(nodes []*nodeInfo) bool {
	o.once.Do(func() {
		for _, ni := range nodes {
			if len(ni.node.Status.Allocatable) == 0 {
				o.unsure = true
				return
			}
		}
	})
	return o.unsure
}

// most is the most of name a node advertises (zero when none does).
func (o *legacyOffers) most(nodes []*nodeInfo, name corev1.ResourceName) resource.Quantity {
	o.mu.Lock()
	defer o.mu.Unlock()
	if q, ok := o.byName[name]; ok {
		return q.DeepCopy()
	}
	var most resource.Quantity
	for _, ni := range nodes {
		if have, ok := ni.node.Status.Allocatable[name]; ok && have.Cmp(most) > 0 {
			most = have.DeepCopy()
		}
	}
	if o.byName == nil {
		o.byName = map[corev1.ResourceName]resource.Quantity{}
	}
	o.byName[name] = most
	return most.DeepCopy()
}
