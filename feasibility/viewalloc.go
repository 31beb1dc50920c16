package feasibility

import (
	"context"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/claimbridge/claimbridge/feasibility/allocview"
	"github.com/claimbridge/claimbridge/feasibility/upstream"
)

// viewSelectors lets the allocator read the selector memo's answers
// (allocview); off, it evaluates every selector itself.
var viewSelectors = true

// viewed is full answering on each node's view (allocview.Allocator) with
// the memo's answers on the node's devices, over the snapshot's allocated
// state or none (free). A snapshot whose devices leave attributes unknown
// has no exact answers to write in.
func (s *Snapshot) viewed(full structured.Allocator, free bool, lister upstream.ClassLister, cc *cel.Cache) structured.Allocator {
	if !viewSelectors || s.unknowns || s.selectorMemo() == nil {
		return full
	}
	allocated := func() structured.AllocatedState { return s.allocated }
	if free {
		empty := upstream.EmptyAllocatedState()
		allocated = func() structured.AllocatedState { return empty }
	}
	return &allocview.Allocator{Full: full, Features: s.features, Allocated: allocated, Classes: lister, CEL: cc,
		Node: func(ctx context.Context, node string) ([]*resourceapi.ResourceSlice, allocview.Answer) {
			slots := map[*resourceapi.Device]int{}
			if i, ok := s.nodeIndex(node); ok {
				for _, d := range s.nodeAt(i).devices {
					slots[d.device] = d.slot
				}
			}
			return s.nodeSlices.ForNode(s.slices, node), s.selectorMemo().Answers(ctx, cc, slots)
		}}
}
