package feasibility

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/claimbridge/claimbridge/feasibility/allocview"
	"github.com/claimbridge/claimbridge/feasibility/signature"
	"github.com/claimbridge/claimbridge/feasibility/upstream"
)

// viewSelectors lets the allocator read the selector memo's answers
// (package allocview); off, it evaluates every selector itself.
var viewSelectors = true

// viewAllocator asks the allocator on the view of the node (allocview)
// with the snapshot's selector answers written in, and full, the allocator
// over every slice, where there is no exact view or the view's allocator
// fails: full gives the errors.
type viewAllocator struct {
	full   structured.Allocator
	snap   *Snapshot
	free   bool // over an empty allocated state
	empty  structured.AllocatedState
	lister upstream.ClassLister
	cc     *cel.Cache
}

func (s *Snapshot) viewed(full structured.Allocator, free bool, lister upstream.ClassLister, cc *cel.Cache) structured.Allocator {
	if !viewSelectors || s.unknowns || s.selectorMemo() == nil {
		return full
	}
	return &viewAllocator{full: full, snap: s, free: free, empty: upstream.EmptyAllocatedState(), lister: lister, cc: cc}
}

func (a *viewAllocator) Allocate(ctx context.Context, node *corev1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	s := a.snap
	view, ok := allocview.Build(s.nodeSlices.ForNode(s.slices, node.Name), claims, a.lister, s.answers(ctx, a.cc, node.Name))
	if !ok {
		return a.full.Allocate(ctx, node, claims)
	}
	st := a.empty
	if !a.free {
		st = s.allocated
	}
	alloc, err := structured.NewAllocator(ctx, s.features, st, view.Classes, view.Slices, a.cc)
	if err == nil {
		var out []resourceapi.AllocationResult
		if out, err = alloc.Allocate(ctx, node, view.Claims); err == nil {
			return out, nil
		}
	}
	return a.full.Allocate(ctx, node, claims)
}

// answers answers selectors from the snapshot's memo, on the node's
// devices by their slots and on others by signature.
func (s *Snapshot) answers(ctx context.Context, cc *cel.Cache, node string) allocview.Answer {
	slots := map[*resourceapi.Device]int{}
	if i, ok := s.nodeIndex(node); ok {
		for _, d := range s.nodeAt(i).devices {
			slots[d.device] = d.slot
		}
	}
	m := s.selectorMemo()
	return func(expression string) func(string, *resourceapi.Device) (bool, bool) {
		e := m.Expr(cc, expression)
		return func(driver string, d *resourceapi.Device) (bool, bool) {
			slot, ok := slots[d]
			if !ok {
				slot = -1
			}
			v := e.Match(ctx, m, signature.Device{Slot: slot, Driver: driver, Device: d})
			return v == signature.MatchYes, v != signature.MatchError
		}
	}
}
