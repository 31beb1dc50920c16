package translate

import (
	"fmt"

	"github.com/claimbridge/claimbridge/translate/celgen"
)

// Shares by memory. The NVIDIA DRA driver's --consumable-shares=memory and
// unlimited publish a GPU that allows multiple allocations with its memory
// as a capacity and no share count: in memory mode a claim that asks for no
// memory takes all of it, in unlimited mode none. A share then asks for 1/N
// of a device's memory (PolicySpec.MemoryShares: N, the time-slicing
// replicas), one alternative per memory size of the fleet's devices, so at
// most N such claims share a device. In unlimited mode, without N, a share
// asks for nothing and any number share a device, as the mode means.

// memoryServes says whether devices of the family that claims share by
// memory can take a share: N is set, or they all give a claim that asks for
// no memory none of it (unlimited).
func (t *translation) memoryServes(family string) bool {
	m := t.in.Memory[family]
	_, ok := t.p.MemoryCapacity(family)
	return ok && len(m.Sizes) > 0 && (t.p.MemoryShares(family) > 0 || !m.TakesAll)
}

// memoryShares are the variants of a share's alternative a on the devices
// of family f shared by memory: one per memory size asking for 1/N of it,
// or, in unlimited mode without N, one that asks for nothing.
func (t *translation) memoryShares(a *alt, f string) []*alt {
	if !t.memoryServes(f) {
		return nil
	}
	shares, _ := t.p.shareCapacity(f)
	qualified, _ := t.p.MemoryCapacity(f)
	memory := celgen.SplitAttr(qualified)
	n := t.p.MemoryShares(f)
	if n == 0 {
		v := *a
		v.selectors = append(v.selectors[:len(v.selectors):len(v.selectors)], celgen.MemoryShareSelector(shares, memory, 0))
		return []*alt{&v}
	}
	var out []*alt
	for _, size := range t.in.Memory[f].Sizes {
		v := *a
		v.selectors = append(v.selectors[:len(v.selectors):len(v.selectors)], celgen.MemoryShareSelector(shares, memory, size))
		v.shareCap, v.shares, v.memory = memory.ID, celgen.MemoryShare(size, n).Value(), true
		out = append(out, &v)
	}
	return out
}

// memoryUnavailable says why devices of the family shared by memory take
// no share, "" when there are none or they do.
func (t *translation) memoryUnavailable(family string) string {
	m := t.in.Memory[family]
	if len(m.Sizes) == 0 || t.memoryServes(family) {
		return ""
	}
	if _, ok := t.p.MemoryCapacity(family); !ok {
		return fmt.Sprintf("; its devices are shared by memory, and the policy names no memory capacity for %s (shareCapacities[].memory)", family)
	}
	return "; its devices are shared by memory and a claim that asks for no memory takes all of it (the NVIDIA driver's --consumable-shares=memory), and the policy does not say how many ways a share splits it (spec.memoryShares)"
}

// memoryWhole is the variant of a whole device's alternative on devices
// shared by memory in memory mode, where a claim that asks for no memory
// holds the device alone; nil when some of the family's devices give such
// a claim none (unlimited), which a selector cannot tell apart.
func (t *translation) memoryWhole(a *alt, f string) *alt {
	m := t.in.Memory[f]
	qualified, ok := t.p.MemoryCapacity(f)
	if !ok || len(m.Sizes) == 0 || m.ForNothing {
		return nil
	}
	shares, _ := t.p.shareCapacity(f)
	v := *a
	memory := celgen.SplitAttr(qualified)
	v.selectors = append(v.selectors[:len(v.selectors)-1:len(v.selectors)-1], celgen.MemoryShareSelector(shares, memory, 0))
	v.shareCap, v.memory = memory.ID, true
	return &v
}
