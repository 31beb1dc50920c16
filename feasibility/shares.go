package feasibility

import (
	"context"
	"maps"
	"slices"

	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/claimbridge/claimbridge/translate"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// FleetSharing is what the fleet's devices say of sharing, by family
// (translate.Input.Shares and translate.Input.Memory).
type FleetSharing struct {
	// Shares: how many shares the fleet's shared devices publish — devices
	// that allow multiple allocations and publish the family's share
	// capacity (translate.Policy.ShareCapacity; the NVIDIA DRA driver's
	// consumable shares); 0 for such devices that any number of claims
	// share for nothing (celgen.SharedForNothing: the driver's unlimited
	// mode), where a whole device cannot be had. Distinct and sorted; a
	// family without shared devices is absent, and the map is never nil:
	// with a fleet, what it does not hold is not shared.
	Shares map[string][]int64
	// Memory: the devices shared by memory — they allow multiple
	// allocations, publish the family's memory capacity
	// (translate.Policy.MemoryCapacity) and no share count
	// (celgen.DeviceMemoryShared).
	Memory map[string]celgen.SharedMemory
	// Renamed: the counts of Shares published only on nodes whose labels
	// say the device plugin renamed their shared resource
	// (translate.Policy.SharesRenamed).
	Renamed map[string][]int64
}

// Sharing says what the fleet's devices that match one of a family's
// resource rules (its DeviceClass and selectors) say of sharing. Computed
// once per inventory and policy; the snapshots WithClaims derives share
// the answer (allocations do not change which devices are shared).
func (c *Checker) Sharing(ctx context.Context, snap *Snapshot, p *translate.Policy) FleetSharing {
	out := FleetSharing{Shares: map[string][]int64{}, Memory: map[string]celgen.SharedMemory{}, Renamed: map[string][]int64{}}
	if snap == nil || p == nil {
		return out
	}
	root := snap.fleetSnapshot()
	key := p.Fingerprint()
	root.mu.Lock()
	cached, ok := root.shares[key]
	root.mu.Unlock()
	if ok {
		return cached
	}
	s := sharingScan{c: c, ctx: ctx, snap: snap, root: root, rules: p.FamilyDeviceRules(), seen: map[string]map[int64]bool{}, plain: map[string]map[int64]bool{}, memory: map[string]map[memoryKind]bool{}}
	capacities, memories := map[string]string{}, map[string]string{}
	for _, f := range slices.Sorted(maps.Keys(s.rules)) {
		if capacity, ok := p.ShareCapacity(f); ok {
			capacities[f] = capacity
			if m, ok := p.MemoryCapacity(f); ok {
				memories[f] = m
			}
		}
	}
	for _, ni := range root.nodes {
		for i := range ni.devices {
			d := &ni.devices[i]
			if !d.multi {
				continue
			}
			for _, f := range slices.Sorted(maps.Keys(capacities)) {
				s.device(d, f, capacities[f], memories[f], p.SharesRenamed(f, ni.node.Labels))
			}
		}
	}
	for f, ns := range s.seen {
		out.Shares[f] = slices.Sorted(maps.Keys(ns))
		if renamed := slices.DeleteFunc(slices.Clone(out.Shares[f]), func(n int64) bool { return s.plain[f][n] }); len(renamed) > 0 {
			out.Renamed[f] = renamed
		}
	}
	for f, kinds := range s.memory {
		var m celgen.SharedMemory
		for k := range kinds {
			m.Sizes = append(m.Sizes, k.bytes)
			m.TakesAll = m.TakesAll || k.takesAll
			m.ForNothing = m.ForNothing || !k.takesAll
		}
		slices.Sort(m.Sizes)
		m.Sizes = slices.Compact(m.Sizes)
		out.Memory[f] = m
	}
	root.mu.Lock()
	if root.shares == nil {
		root.shares = map[string]FleetSharing{}
	}
	root.shares[key] = out
	root.mu.Unlock()
	return out
}

// sharingScan gathers Sharing's answer over the fleet's devices.
type sharingScan struct {
	c     *Checker
	ctx   context.Context
	snap  *Snapshot
	root  *Snapshot
	rules map[string][]translate.DeviceRule
	cc    *cel.Cache
	// seen: share counts by family, plain those on nodes that do not rename
	// them; memory: devices shared by memory.
	seen, plain map[string]map[int64]bool
	memory      map[string]map[memoryKind]bool
}

// memoryKind is a device shared by memory: its memory and whether a claim
// that asks for none takes it all.
type memoryKind struct {
	bytes    int64
	takesAll bool
}

// device records what the device d says of family f's sharing, when it
// matches one of the family's rules; renamed: its node renames the shared
// resource.
func (s *sharingScan) device(d *deviceRef, f, capacity, memory string, renamed bool) {
	n, ok := celgen.DeviceShares(d.driver, d.device, capacity)
	if !ok && celgen.SharedForNothing(d.device) {
		n, ok = 0, true // any number of claims share it: 0 shares
	}
	var mk memoryKind
	var byMemory bool
	if memory != "" {
		mk.bytes, mk.takesAll, byMemory = celgen.DeviceMemoryShared(d.driver, d.device, capacity, memory)
	}
	if (!ok || s.seen[f][n] && (renamed || s.plain[f][n])) && (!byMemory || s.memory[f][mk]) {
		return
	}
	if s.cc == nil {
		s.cc = s.c.celCache(s.snap.features)
	}
	if !slices.ContainsFunc(s.rules[f], func(r translate.DeviceRule) bool {
		return deviceMatches(s.ctx, s.cc, s.root, d, r.DeviceClassName, r.Selectors)
	}) {
		return
	}
	if ok {
		addSeen(s.seen, f, n)
		if !renamed {
			addSeen(s.plain, f, n)
		}
	}
	if byMemory {
		addSeen(s.memory, f, mk)
	}
}

func addSeen[K comparable](seen map[string]map[K]bool, f string, k K) {
	if seen[f] == nil {
		seen[f] = map[K]bool{}
	}
	seen[f][k] = true
}
