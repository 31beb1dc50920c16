package feasibility

// Checks in a burst. Every admission of a burst holds devices for its pod
// (a reservation), so every check of the next pod runs on a new snapshot
// and misses the verdict cache. The snapshots of a burst form a lineage
// (Snapshot.WithClaimsAfter): the same fleet and pods, each holding every
// allocation of the one before and more. Fewer free devices never let the
// allocator serve a node it could not serve before, nor get a better
// alternative on it; so when the node a verdict chose still serves the pod
// with the same alternatives, no node before it in name order nor any with
// a better score can now, and the full search would choose it again. A
// verdict that no node could ever serve does not read the allocations at
// all.

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/claimbridge/claimbridge/feasibility/identity"
	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/podfacts"
)

// lineageEntry is the last verdict of a pod shape that the next snapshots
// of its lineage may reuse, with the score of its allocation.
type lineageEntry struct {
	epoch   uint64
	verdict Verdict
	searchInfo
}

// searchInfo is what a FitsNow search tells the next checks of the
// lineage: the score of its allocation, and the first node in name order
// the allocator served at all.
type searchInfo struct {
	score int64
	first string
}

// checkIn answers a check that missed the verdict cache: from the verdict
// of an earlier snapshot of snap's lineage when it still holds
// (revalidate), by the search otherwise.
func (c *Checker) checkIn(ctx context.Context, snap *Snapshot, pod *corev1.Pod, claims []*resourceapi.ResourceClaim, shape string) Verdict {
	c.mu.Lock()
	prev, ok := c.lineage.get(shape)
	c.mu.Unlock()
	if ok && prev.epoch == snap.epoch {
		if v, score, ok := c.revalidate(ctx, snap, pod, claims, prev); ok {
			c.revalidated.Add(1)
			prev.verdict, prev.score = v, score
			c.remember(shape, prev)
			return v
		}
		// Its node is full: the nodes before the first one the allocator
		// served then serve none now; the scan, or else the search,
		// starts there.
		if prev.verdict.Kind == FitsNow && prev.first != "" {
			if v, info, ok := c.scanFrom(ctx, snap, pod, claims, prev.first); ok {
				c.scanned.Add(1)
				c.remember(shape, lineageEntry{epoch: snap.epoch, verdict: v, searchInfo: info})
				return v
			}
			if v, info := c.check(ctx, snap, pod, claims, prev.first); v.Kind == FitsNow {
				c.searchedFrom.Add(1)
				c.remember(shape, lineageEntry{epoch: snap.epoch, verdict: v, searchInfo: info})
				return v
			}
		}
	}
	v, info := c.check(ctx, snap, pod, claims, "")
	if reusable(v) {
		c.remember(shape, lineageEntry{epoch: snap.epoch, verdict: v, searchInfo: info})
	}
	return v
}

func (c *Checker) remember(shape string, e lineageEntry) {
	c.mu.Lock()
	c.lineage.add(shape, e)
	c.mu.Unlock()
}

// reusable: FitsNow (asked again on its node) and NeverFits for want of
// candidate nodes or matching devices (neither reads the allocations: the
// nodes' allocatable and the pass with every device free). A fatal
// allocator error is searched again.
func reusable(v Verdict) bool {
	switch v.Kind {
	case FitsNow:
		return v.Node != ""
	case NeverFits:
		return v.Code == ReasonNoCandidateNodes || v.Code == ReasonNoMatchingDevices
	}
	return false
}

// maxScanRuns bounds the allocator runs of a scan (scanFrom) before the
// search takes over: the nodes it asks in turn, the search asks in
// parallel.
const maxScanRuns = 8

// scanFrom answers a check of the lineage whose node chosen before is full
// by asking the nodes in name order from from, the first node served
// before, until one gets every request's first alternative: the node the
// search from there would choose (it ends at the first such node). A burst
// fills its nodes in name order, so that node is a few nodes on; the scan
// reads those, where the search filters every node of the fleet first. ok
// is false, for the search to run, when a node serves with a worse
// alternative (the search weighs every node then), the allocator fails
// otherwise than for want of devices, maxScanRuns runs serve none, or no
// node is left.
func (c *Checker) scanFrom(ctx context.Context, snap *Snapshot, pod *corev1.Pod, claims []*resourceapi.ResourceClaim, from string) (Verdict, searchInfo, bool) {
	start, found := snap.nodeIndex(from)
	if !found {
		return Verdict{}, searchInfo{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	p, allocs, failed := c.prepare(ctx, snap, claims)
	if failed != nil {
		return Verdict{}, searchInfo{}, false
	}
	var err error
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	requests := snap.compared(podfacts.EffectiveRequests(pod), nil)
	top := upstream.TopScore(p.claims)
	pruned, runs := 0, 0
	for i := start; i < len(snap.nodes) && ctx.Err() == nil; i++ {
		ni := snap.nodeAt(i)
		if len(ni.devices) == 0 || requests.Rejects(required, pod, ni.node) != "" ||
			requests.Short(ni.node, ni.usage()) != "" || p.prune(ctx, ni, false) != "" {
			pruned++
			continue
		}
		if runs == maxScanRuns {
			break
		}
		runs++
		var out []resourceapi.AllocationResult
		if ni.busy {
			out, err = allocs.now.Allocate(ctx, ni.node, p.claims)
		} else {
			out, err = p.answers.allocate(ctx, allocs.now, p.freeQuery(), ni.node)
		}
		switch {
		case err != nil && !errors.Is(err, structured.ErrFailedAllocationOnNode):
			return Verdict{}, searchInfo{}, false
		case err != nil || len(out) != len(p.claims):
			continue
		case upstream.Score(p.claims, out) != top:
			return Verdict{}, searchInfo{}, false
		}
		v := Verdict{Kind: FitsNow, Code: ReasonFits, Node: ni.node.Name, NodesConsidered: len(snap.nodes), NodesPruned: pruned}
		for _, a := range out {
			v.Results = append(v.Results, a.Devices.Results...)
		}
		return v, searchInfo{score: top, first: ni.node.Name}, true
	}
	return Verdict{}, searchInfo{}, false
}

// revalidate answers from prev, a verdict on an earlier snapshot of snap's
// lineage, when it holds on snap: a NeverFits as it is, a FitsNow when its
// node passes the same filters and the allocator serves the claims there
// with alternatives of the same score. ok is false when the search must
// run.
func (c *Checker) revalidate(ctx context.Context, snap *Snapshot, pod *corev1.Pod, claims []*resourceapi.ResourceClaim, prev lineageEntry) (v Verdict, got int64, ok bool) {
	v = prev.verdict
	v.Cached = false
	v.NodesConsidered = len(snap.nodes)
	if v.Kind == NeverFits {
		return v, prev.score, true
	}
	i, found := snap.nodeIndex(v.Node)
	if !found {
		return Verdict{}, 0, false
	}
	ni := snap.nodeAt(i)
	if upstream.NodeRejects(nodeaffinity.GetRequiredNodeAffinity(pod), pod, ni.node) != "" || snap.insufficient(ni, podfacts.EffectiveRequests(pod)) != "" {
		return Verdict{}, 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	p, allocs, failed := c.prepare(ctx, snap, claims)
	if failed != nil || p.prune(ctx, ni, false) != "" {
		return Verdict{}, 0, false
	}
	out, err := allocs.now.Allocate(ctx, ni.node, p.claims)
	if err != nil || len(out) != len(p.claims) {
		return Verdict{}, 0, false // the search says why, or finds another node
	}
	if s := upstream.Score(p.claims, out); s != prev.score {
		return Verdict{}, 0, false
	}
	v.Results = nil
	for _, a := range out {
		v.Results = append(v.Results, a.Devices.Results...)
	}
	return v, prev.score, true
}

// nodeAllocator answers Allocate with an allocator over the slices the
// node reads (upstream.SliceIndex), whole (identity.Whole), built for the
// call: what an allocator over all the snapshot's slices answers, without
// indexing them all.
type nodeAllocator struct {
	structured.Allocator // over no slice: the methods besides Allocate
	snap                 *Snapshot
	lister               upstream.ClassLister
	celCache             *cel.Cache
	// allocated is the state to start from: the snapshot's, read at each
	// call, or every device free.
	allocated func() structured.AllocatedState
}

func newNodeAllocator(ctx context.Context, s *Snapshot, lister upstream.ClassLister, celCache *cel.Cache, free bool) (*nodeAllocator, error) {
	a := &nodeAllocator{snap: s, lister: lister, celCache: celCache,
		allocated: func() structured.AllocatedState { return s.allocated }}
	if free {
		empty := upstream.EmptyAllocatedState()
		a.allocated = func() structured.AllocatedState { return empty }
	}
	none, err := structured.NewAllocator(ctx, s.features, a.allocated(), lister, nil, celCache)
	if err != nil {
		return nil, err
	}
	a.Allocator = none
	return a, nil
}

func (a *nodeAllocator) Allocate(ctx context.Context, node *corev1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	slices := identity.Whole(a.snap.nodeSlices.ForNode(a.snap.slices, node.Name))
	alloc, err := structured.NewAllocator(ctx, a.snap.features, a.allocated(), a.lister, slices, a.celCache)
	if err != nil {
		return nil, fmt.Errorf("new allocator: %w", err)
	}
	return alloc.Allocate(ctx, node, claims)
}

// CheckOn asks one node whether it serves the pod and its claims now, with
// the devices of snap that are free: a FitsNow verdict on that node with
// the devices the allocator picks there, or NeverFits when it does not
// (the node is not the fleet's, rejects the pod, has no room, or its free
// devices cannot serve the claims), Unknown on an error. It is not cached;
// to ask node after node, use ForNodes once.
func (c *Checker) CheckOn(ctx context.Context, snap *Snapshot, pod *corev1.Pod, claims []*resourceapi.ResourceClaimSpec, node string) Verdict {
	return c.ForNodes(snap, pod, claims).On(ctx, snap, node)
}
