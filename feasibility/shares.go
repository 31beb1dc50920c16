package feasibility

import (
	"context"
	"maps"
	"slices"

	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/claimbridge/claimbridge/translate"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// Shares says, by device family, how many shares the fleet's shared devices
// publish: devices that allow multiple allocations and publish the family's
// share capacity (translate.Policy.ShareCapacity; the NVIDIA DRA driver's
// consumable shares) and match one of the family's resource rules (its
// DeviceClass and selectors); 0 for such devices that any number of claims
// share for nothing (celgen.SharedForNothing: the driver's unlimited
// mode), where a whole device cannot be had. The counts are distinct and sorted; a family
// without shared devices is absent, and the map is never nil: with a fleet,
// what it does not hold is not shared (translate.Input.Shares). Computed
// once per inventory and policy; the snapshots WithClaims derives share
// the answer (allocations do not change which devices are shared).
func (c *Checker) Shares(ctx context.Context, snap *Snapshot, p *translate.Policy) map[string][]int64 {
	out := map[string][]int64{}
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
	rules := p.FamilyDeviceRules()
	capacities := map[string]string{}
	for _, f := range slices.Sorted(maps.Keys(rules)) {
		if capacity, ok := p.ShareCapacity(f); ok {
			capacities[f] = capacity
		}
	}
	var cc *cel.Cache
	seen := map[string]map[int64]bool{}
	for _, ni := range root.nodes {
		for i := range ni.devices {
			d := &ni.devices[i]
			if !d.multi {
				continue
			}
			for _, f := range slices.Sorted(maps.Keys(capacities)) {
				n, ok := celgen.DeviceShares(d.driver, d.device, capacities[f])
				if !ok && celgen.SharedForNothing(d.device) {
					n, ok = 0, true // any number of claims share it: 0 shares
				}
				if !ok || seen[f][n] {
					continue
				}
				if cc == nil {
					cc = c.celCache(snap.features)
				}
				if !slices.ContainsFunc(rules[f], func(r translate.DeviceRule) bool {
					return deviceMatches(ctx, cc, root, d, r.DeviceClassName, r.Selectors)
				}) {
					continue
				}
				if seen[f] == nil {
					seen[f] = map[int64]bool{}
				}
				seen[f][n] = true
			}
		}
	}
	for f, ns := range seen {
		out[f] = slices.Sorted(maps.Keys(ns))
	}
	root.mu.Lock()
	if root.shares == nil {
		root.shares = map[string]map[string][]int64{}
	}
	root.shares[key] = out
	root.mu.Unlock()
	return out
}
