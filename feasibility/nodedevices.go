package feasibility

import (
	"context"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/claimbridge/claimbridge/feasibility/legacy"
	"github.com/claimbridge/claimbridge/feasibility/signature"
	"github.com/claimbridge/claimbridge/translate"
)

// The devices of one node as the legacy view reads them (package legacy),
// and the words that describe a node's devices in explanations.

// nodeDevices answers which of a node's devices match a DeviceClass and
// selectors, evaluating each selector once per device: the legacy.Devices
// of the node.
type nodeDevices struct {
	ctx  context.Context
	cc   *cel.Cache
	snap *Snapshot
	ni   *nodeInfo
	// family devices, memoised
	rules  map[string][]translate.DeviceRule
	family map[string][]translate.LegacyDevice
}

func newNodeDevices(ctx context.Context, cc *cel.Cache, snap *Snapshot, ni *nodeInfo, rules map[string][]translate.DeviceRule) *nodeDevices {
	return &nodeDevices{ctx: ctx, cc: cc, snap: snap, ni: ni, rules: rules, family: map[string][]translate.LegacyDevice{}}
}

// matching returns the node's devices of the class that pass the selectors,
// in (device name, driver) order. A selector that cannot be evaluated on a
// device does not match it.
func (nd *nodeDevices) matching(className string, selectors []string) []*deviceRef {
	if _, ok := nd.snap.classes[className]; !ok {
		return nil
	}
	var out []*deviceRef
	for i := range nd.ni.devices {
		d := &nd.ni.devices[i]
		if deviceMatches(nd.ctx, nd.cc, nd.snap, d, className, selectors) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b *deviceRef) int {
		if c := strings.Compare(a.device.Name, b.device.Name); c != 0 {
			return c
		}
		return strings.Compare(a.driver, b.driver)
	})
	return out
}

// Matching is matching as the legacy view reads it.
func (nd *nodeDevices) Matching(className string, selectors []string) []legacy.Device {
	refs := nd.matching(className, selectors)
	out := make([]legacy.Device, len(refs))
	for i, d := range refs {
		out[i] = legacy.Device{Driver: d.driver, Device: d.device}
	}
	return out
}

// deviceMatches reports whether the device passes the class's selectors and
// these. A selector that cannot be evaluated on the device does not match
// it; a class the snapshot does not have matches nothing.
func deviceMatches(ctx context.Context, cc *cel.Cache, snap *Snapshot, d *deviceRef, className string, selectors []string) bool {
	class, ok := snap.classes[className]
	if !ok {
		return false
	}
	m := snap.selectorMemo()
	sd := d.sig()
	for _, s := range class.Spec.Selectors {
		if s.CEL != nil && m.Expr(cc, s.CEL.Expression).Match(ctx, m, sd) != signature.MatchYes {
			return false
		}
	}
	for _, e := range selectors {
		if m.Expr(cc, e).Match(ctx, m, sd) != signature.MatchYes {
			return false
		}
	}
	return true
}

// Family is a translate.FamilyDevices over this node.
func (nd *nodeDevices) Family(family string) []translate.LegacyDevice {
	if ds, ok := nd.family[family]; ok {
		return ds
	}
	seen := map[*resourceapi.Device]bool{}
	var refs []*deviceRef
	for _, r := range nd.rules[family] {
		for _, d := range nd.matching(r.DeviceClassName, r.Selectors) {
			if !seen[d.device] {
				seen[d.device] = true
				refs = append(refs, d)
			}
		}
	}
	slices.SortFunc(refs, func(a, b *deviceRef) int {
		if c := strings.Compare(a.device.Name, b.device.Name); c != 0 {
			return c
		}
		return strings.Compare(a.driver, b.driver)
	})
	out := make([]translate.LegacyDevice, 0, len(refs))
	for _, d := range refs {
		out = append(out, translate.LegacyDevice{Name: d.device.Name, Driver: d.driver, Attributes: d.attributes(), Capacity: d.device.Capacity,
			AllowMultipleAllocations: d.device.AllowMultipleAllocations != nil && *d.device.AllowMultipleAllocations})
	}
	nd.family[family] = out
	return out
}

// hardware describes a node's devices in a few words for explanations
// (legacy.Hardware).
func hardware(ni *nodeInfo) string {
	descs := make([]string, len(ni.devices))
	for i, d := range ni.devices {
		descs[i] = legacy.Describe(d.driver, d.device)
	}
	return legacy.Hardware(descs)
}
