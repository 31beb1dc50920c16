package feasibility

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/claimbridge/claimbridge/feasibility/legacy"
	"github.com/claimbridge/claimbridge/podfacts"
)

// Summary is the inventory at a glance, for reports: what each node offers
// through DRA and through device plugins, and the DRA devices of each
// DeviceClass.
type Summary struct {
	// Nodes in name order.
	Nodes []NodeSummary
	// Devices visible to at least one node; DevicesByClass how many of them
	// each DeviceClass selects (a device may count for several classes; a
	// class that selects none is listed with 0).
	Devices        int
	DevicesByClass map[string]int
}

// NodeSummary is one node of a [Summary].
type NodeSummary struct {
	Name string
	// Labels of the node (shared with the inventory: do not modify).
	Labels map[string]string
	// DRADevices is the number of DRA devices the node can see; Hardware
	// describes them, most numerous first, then by name, so that nodes with
	// the same devices read the same ("8× NVIDIA H100 80GB HBM3, 1× dra.net
	// device").
	DRADevices int
	Hardware   string
	// Extended are the extended resources of the node's allocatable
	// (podfacts.IsExtendedResource): what device plugins advertise. Nil
	// when there is none.
	Extended map[corev1.ResourceName]int64
}

// Summary describes the snapshot. It evaluates every class's selectors
// once per device, under ctx; a selector that cannot be evaluated on a
// device (ctx ended included) does not select it.
func (s *Snapshot) Summary(ctx context.Context) Summary {
	out := Summary{Devices: s.devices, DevicesByClass: map[string]int{}}
	for _, ni := range s.nodes {
		ns := NodeSummary{Name: ni.node.Name, Labels: ni.node.Labels, DRADevices: len(ni.devices)}
		if len(ni.devices) > 0 {
			ns.Hardware = sortedHardware(ni)
		}
		for _, name := range slices.Sorted(maps.Keys(ni.node.Status.Allocatable)) {
			if q := ni.node.Status.Allocatable[name]; podfacts.IsExtendedResource(name) && q.Value() > 0 {
				if ns.Extended == nil {
					ns.Extended = map[corev1.ResourceName]int64{}
				}
				ns.Extended[name] = q.Value()
			}
		}
		out.Nodes = append(out.Nodes, ns)
	}

	cc := cel.NewCache(max(1, 2*len(s.classes)), cel.Features{EnableConsumableCapacity: s.features.ConsumableCapacity, EnableListTypeAttributes: s.features.ListTypeAttributes})
	seen := map[structured.DeviceID]bool{}
	names := slices.Sorted(maps.Keys(s.classes))
	for _, name := range names {
		out.DevicesByClass[name] = 0
	}
	for _, ni := range s.nodes {
		for i := range ni.devices {
			d := &ni.devices[i]
			id := structured.MakeDeviceID(d.driver, d.pool, d.device.Name)
			if seen[id] {
				continue
			}
			seen[id] = true
			input := d.sig().CEL()
			for _, name := range names {
				if classSelects(ctx, cc, s.classes[name].Spec.Selectors, input) {
					out.DevicesByClass[name]++
				}
			}
		}
	}
	return out
}

func classSelects(ctx context.Context, cc *cel.Cache, selectors []resourceapi.DeviceSelector, d cel.Device) bool {
	for _, sel := range selectors {
		if sel.CEL == nil {
			continue
		}
		ok, _, err := cc.GetOrCompile(sel.CEL.Expression).DeviceMatches(ctx, d)
		if err != nil || !ok {
			return false
		}
	}
	return true
}

// sortedHardware describes a node's devices like hardware, in an order that
// does not depend on the order of the slices.
func sortedHardware(ni *nodeInfo) string {
	counts := map[string]int{}
	for _, d := range ni.devices {
		counts[legacy.Describe(d.driver, d.device)]++
	}
	descs := slices.Sorted(maps.Keys(counts))
	slices.SortStableFunc(descs, func(a, b string) int { return cmp.Compare(counts[b], counts[a]) })
	parts := make([]string, 0, len(descs))
	for _, desc := range descs {
		parts = append(parts, fmt.Sprintf("%d× %s", counts[desc], desc))
	}
	return strings.Join(parts, ", ")
}
