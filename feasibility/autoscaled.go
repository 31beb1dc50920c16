package feasibility

// Autoscaled pools: nodes that an autoscaler adds to for the pods it sees
// Pending, and does not add to for pods whose devices come from claims
// (Karpenter's default; translate.AutoscalingRule). A pod as submitted that
// waits in such a pool gets a node; its translation waiting there gets
// none. decide keeps such a pod as submitted rather than make it wait for
// DRA devices; the cutover forecast marks the workloads whose pods would
// need the autoscaler after the switch.

import (
	"context"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/claimbridge/claimbridge/feasibility/legacy"
	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/podfacts"
)

// AutoscaledPool names the autoscaled nodes a pod may run on with its
// devices: the pool of the first (in name order), and how many there are.
// The zero value (Node "") says there is none.
type AutoscaledPool struct {
	// Label is the node-label key that puts the node in its pool and Pool
	// its value, the pool's name ("karpenter.sh/nodepool", "gpu").
	Label, Pool string
	// Node is the first such node in name order, one that runs the pod as
	// submitted when there is one; Nodes counts them, in every pool.
	Node  string
	Nodes int
	// AsSubmitted counts those of Nodes that run the pod as submitted: it
	// passes their node filters, and they advertise what it asks of every
	// extended resource (a device plugin), or DeviceClasses map every one
	// of them (extendedResourceName, KEP-5004) and their DRA devices could
	// serve its translation. A node like them that the autoscaler adds for
	// the pod Pending as submitted runs it; a node that only the
	// translation could use does not.
	AsSubmitted int
}

// AutoscaledInput is what [Checker.Autoscaled] looks at.
type AutoscaledInput struct {
	// Labels are the node-label keys that put a node in an autoscaled pool
	// (translate.Policy.AutoscaledPoolLabels); none: no node is in one.
	Labels []string
	// Legacy is the pod as submitted, as the scheduler sees it. Required.
	Legacy *corev1.Pod
	// Translated is its translation and Claims the specs of its claims;
	// nil when there is none, and then only the device plugin's side
	// counts.
	Translated *corev1.Pod
	Claims     []*resourceapi.ResourceClaimSpec
	// Provisions reports whether the autoscaler of a node's pool (by its
	// labels) is known to add nodes for pods with claims (the platform's:
	// Karpenter with its DRA support on, the Cluster Autoscaler with
	// --enable-dynamic-resource-allocation): such nodes do not count. Nil:
	// none is. ProvisionsKey identifies the answer it gives, for the
	// cache (the platform's pools).
	Provisions    func(nodeLabels map[string]string) bool
	ProvisionsKey string
}

// Autoscaled finds the nodes of autoscaled pools where the pod may run
// with devices of the kind it asks for — where a pool's autoscaler would
// add a node like them for it:
//
//   - the device plugin's side: the pod as submitted passes the node's
//     schedulability, its node selector, affinity and taints, and the node
//     advertises at least what the pod asks of every extended resource, as
//     [Snapshot.LegacyNodes] counts (what runs there does not matter: this
//     is where the pool grows, not what is free);
//   - DRA's: the translation passes them and the node's devices could serve
//     its claims were they all free, by the device index that prunes nodes
//     before the allocator runs (conservative: it never rules out a node
//     that could). Where DeviceClasses map every extended resource of the
//     pod (extendedResourceName), such a node runs the pod as submitted too
//     if it passes the pod's own node filters.
//
// A node of an autoscaled pool that has no such devices (a CPU pool of the
// same autoscaler) does not count. The nodes of the pools are found once
// per snapshot and set of labels, the device index is asked once per node
// class, and answers are cached by inventory snapshot and pod shape (as
// verdicts are): a pod of a shape seen before costs a lookup.
func (c *Checker) Autoscaled(ctx context.Context, snap *Snapshot, in AutoscaledInput) AutoscaledPool {
	if snap == nil || in.Legacy == nil || len(in.Labels) == 0 {
		return AutoscaledPool{}
	}
	pooled := snap.pooled(in.Labels)
	if len(pooled) == 0 {
		return AutoscaledPool{}
	}
	var defaulted []*resourceapi.ResourceClaim
	if in.Translated != nil && len(in.Claims) > 0 {
		defaulted, _ = upstream.DefaultClaims(in.Translated, in.Claims) // invalid claims: the device plugin's side alone
	}
	// The answer reads the nodes, their devices and the classes, which
	// only a new inventory snapshot changes (claims, reservations and pods
	// derive snapshots from it), and the pods' node selection, requests
	// and claims: the pods of one Deployment after the first are a lookup.
	key, err := autoscaledKey(snap, append(slices.Clone(in.Labels), in.ProvisionsKey), in.Legacy, in.Translated, defaulted)
	if err == nil {
		c.mu.Lock()
		v, ok := c.autoscaled.get(key)
		c.mu.Unlock()
		if ok {
			return v
		}
	}
	out := c.autoscaledIn(ctx, snap, pooled, in, defaulted)
	if err == nil && ctx.Err() == nil {
		c.mu.Lock()
		c.autoscaled.add(key, out)
		c.mu.Unlock()
	}
	return out
}

// autoscaledKey identifies an answer of Autoscaled: the snapshot the
// inventory was built as (its nodes and devices), the labels and the two
// pods' shapes.
func autoscaledKey(snap *Snapshot, labels []string, legacy, translated *corev1.Pod, claims []*resourceapi.ResourceClaim) (string, error) {
	root := snap.fleetSnapshot()
	l, err := shapeKey(legacy, nil)
	if err != nil {
		return "", err
	}
	t := "-"
	if translated != nil {
		if t, err = shapeKey(translated, claims); err != nil {
			return "", err
		}
	}
	return strconv.FormatUint(root.id, 10) + "/" + strings.Join(labels, ",") + "/" + l + "/" + t, nil
}

// autoscaledIn is Autoscaled over the nodes of the pools.
func (c *Checker) autoscaledIn(ctx context.Context, snap *Snapshot, pooled []int, in AutoscaledInput, defaulted []*resourceapi.ResourceClaim) AutoscaledPool {
	var out AutoscaledPool
	want := podfacts.ExtendedRequests(in.Legacy)
	legacyReq := nodeaffinity.GetRequiredNodeAffinity(in.Legacy)
	var (
		p        *plan
		cc       = c.celCache(snap.features)
		transReq nodeaffinity.RequiredNodeAffinity
	)
	if len(defaulted) > 0 {
		if pl, reasons := c.plan(snap, cc, defaulted); len(reasons) == 0 {
			p, transReq = pl, nodeaffinity.GetRequiredNodeAffinity(in.Translated)
			// The device index answers alike for the nodes of one class
			// (the same devices up to names and identities, classes.go):
			// it is asked once per class. The classes are the placement
			// check's, once per snapshot.
			snap.nodeClassList(&c.classes)
		}
	}
	// DeviceClasses map every extended resource the pod asks for: the
	// scheduler serves it as submitted from DRA devices (KEP-5004).
	mapped := len(want) > 0
	for n := range want {
		mapped = mapped && snap.draServes(n)
	}
	served := map[string]bool{}
	devicesServe := func(ni *nodeInfo) bool {
		key := ni.class()
		if v, seen := served[key]; seen && key != "" {
			return v
		}
		ok := p.prune(ctx, ni, true) == ""
		served[key] = ok
		return ok
	}
	var first *nodeInfo // the first node, whether or not it runs the pod as submitted
	for _, i := range pooled {
		ni := snap.nodeAt(i)
		if in.Provisions != nil && in.Provisions(ni.node.Labels) {
			continue // its autoscaler adds nodes for claims too
		}
		legacyPasses := upstream.NodeRejects(legacyReq, in.Legacy, ni.node) == ""
		asSubmitted := legacyPasses && len(want) > 0 && legacy.Advertises(ni.node, want)
		dra := false
		if !asSubmitted && p != nil && len(ni.devices) > 0 && upstream.NodeRejects(transReq, in.Translated, ni.node) == "" {
			dra = devicesServe(ni)
			asSubmitted = dra && mapped && legacyPasses
		}
		if !asSubmitted && !dra {
			continue
		}
		if first == nil {
			first = ni
		}
		if asSubmitted {
			if out.AsSubmitted == 0 {
				out.Node = ni.node.Name
				out.Label, out.Pool = poolOf(ni.node, in.Labels)
			}
			out.AsSubmitted++
		}
		out.Nodes++
	}
	if out.Node == "" && first != nil {
		out.Node = first.node.Name
		out.Label, out.Pool = poolOf(first.node, in.Labels)
	}
	return out
}

// pooled lists, in name order, the positions of the nodes that carry one
// of the labels, computed once per snapshot and set of labels (the nodes
// of snapshots derived from one are its own).
func (s *Snapshot) pooled(labels []string) []int {
	if len(labels) == 0 {
		return nil
	}
	root := s.fleetSnapshot()
	key := strings.Join(labels, "\x00")
	root.pooledMu.Lock()
	defer root.pooledMu.Unlock()
	if l, ok := root.pooledBy[key]; ok {
		return l
	}
	l := []int{} // remembered even when empty
	for i, ni := range root.nodes {
		if label, _ := poolOf(ni.node, labels); label != "" {
			l = append(l, i)
		}
	}
	if root.pooledBy == nil {
		root.pooledBy = map[string][]int{}
	}
	root.pooledBy[key] = l
	return l
}

// poolOf is the first of the labels the node carries, and its value.
func poolOf(node *corev1.Node, labels []string) (string, string) {
	for _, k := range labels {
		if v, ok := node.Labels[k]; ok {
			return k, v
		}
	}
	return "", ""
}
