package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/feasibility"
)

// FleetSummary is the inventory a report was checked against.
type FleetSummary struct {
	// Nodes in the inventory; DRANodes those that see DRA devices,
	// DevicePluginNodes those with extended resources in their allocatable
	// (a node with both counts for both).
	Nodes             int `json:"nodes"`
	DRANodes          int `json:"draNodes"`
	DevicePluginNodes int `json:"devicePluginNodes"`
	// Devices: the DRA devices visible to some node; DevicesByClass how
	// many of them each DeviceClass selects.
	Devices        int            `json:"devices"`
	DevicesByClass map[string]int `json:"devicesByClass,omitempty"`
	// DevicePluginResources sums the extended resources of the nodes'
	// allocatable: what device plugins advertise.
	DevicePluginResources map[string]int64 `json:"devicePluginResources,omitempty"`
	// Groups of nodes that offer the same hardware the same way, DRA
	// first, then by number of nodes and hardware.
	Groups []FleetGroup `json:"groups,omitempty"`
}

// FleetGroup is a set of nodes offering the same hardware the same way.
type FleetGroup struct {
	// Via is DRA or DevicePlugin.
	Via FleetVia `json:"via"`
	// Hardware describes one node's devices: for DRA what the devices say
	// ("8× NVIDIA H100 80GB HBM3"), for device plugins the extended
	// resources ("8× nvidia.com/gpu").
	Hardware string `json:"hardware"`
	// Kind is the decisions.HardwareKind of a device-plugin node, from its labels
	// and its largest extended resource ("NVIDIA-A100-SXM4-40GB").
	Kind string `json:"kind,omitempty"`
	// Nodes is how many; Names the first ten of them in name order.
	Nodes int      `json:"nodes"`
	Names []string `json:"names"`
}

// FleetVia says how a group of nodes offers devices.
type FleetVia string

// How nodes offer devices.
const (
	ViaDRA          FleetVia = "DRA"
	ViaDevicePlugin FleetVia = "DevicePlugin"
)

// maxGroupNames is how many node names a FleetGroup lists.
const maxGroupNames = 10

// NewFleetSummary summarises an inventory snapshot's summary.
func NewFleetSummary(s feasibility.Summary) *FleetSummary {
	out := &FleetSummary{Nodes: len(s.Nodes), Devices: s.Devices}
	if len(s.DevicesByClass) > 0 {
		out.DevicesByClass = maps.Clone(s.DevicesByClass)
	}
	type groupKey struct {
		via            FleetVia
		hardware, kind string
	}
	groups := map[groupKey]*FleetGroup{}
	add := func(key groupKey, node string) {
		g, ok := groups[key]
		if !ok {
			g = &FleetGroup{Via: key.via, Hardware: key.hardware, Kind: key.kind}
			groups[key] = g
		}
		g.Nodes++
		if len(g.Names) < maxGroupNames {
			g.Names = append(g.Names, node)
		}
	}
	for _, n := range s.Nodes {
		if n.DRADevices > 0 {
			out.DRANodes++
			add(groupKey{via: ViaDRA, hardware: n.Hardware}, n.Name)
		}
		if len(n.Extended) == 0 {
			continue
		}
		out.DevicePluginNodes++
		if out.DevicePluginResources == nil {
			out.DevicePluginResources = map[string]int64{}
		}
		counts := map[string]int64{}
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(n.Extended)) {
			out.DevicePluginResources[string(name)] += n.Extended[name]
			counts[string(name)] = n.Extended[name]
			parts = append(parts, fmt.Sprintf("%d× %s", n.Extended[name], name))
		}
		labels := map[string][]string{}
		for k, v := range n.Labels {
			labels[k] = []string{v}
		}
		add(groupKey{via: ViaDevicePlugin, hardware: strings.Join(parts, ", "), kind: decisions.HardwareKind(counts, labels)}, n.Name)
	}
	for _, g := range groups {
		out.Groups = append(out.Groups, *g)
	}
	viaOrder := func(v FleetVia) int {
		if v == ViaDRA {
			return 0
		}
		return 1
	}
	slices.SortFunc(out.Groups, func(a, b FleetGroup) int {
		return cmp.Or(cmp.Compare(viaOrder(a.Via), viaOrder(b.Via)), cmp.Compare(b.Nodes, a.Nodes),
			strings.Compare(a.Kind, b.Kind), strings.Compare(a.Hardware, b.Hardware), strings.Compare(a.Names[0], b.Names[0]))
	})
	return out
}
