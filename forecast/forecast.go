package forecast

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/translate"
)

// GFDLabels says whether GPU Feature Discovery's labels stay on switched nodes.
type GFDLabels string

// GFDLabels modes.
const (
	GFDLabelsDrop GFDLabels = "drop" // default: GPU Operator's DRA mode does not deploy GFD
	GFDLabelsKeep GFDLabels = "keep"
)

// ParseGFDLabels reads a GFDLabels mode: "" is drop.
func ParseGFDLabels(s string) (GFDLabels, error) {
	switch g := GFDLabels(s); g {
	case "":
		return GFDLabelsDrop, nil
	case GFDLabelsDrop, GFDLabelsKeep:
		return g, nil
	}
	return "", fmt.Errorf("unknown GFD labels mode %q (allowed: %s, %s)", s, GFDLabelsDrop, GFDLabelsKeep)
}

// TimeSlicing overrides how the forecast makes GPUs the device plugin
// time-slices (GFD's nvidia.com/gpu.replicas above 1 with strategy
// time-slicing, GKE's time-sharing); by default the platform's
// consumable-shares mode says it.
type TimeSlicing string

// TimeSlicing modes.
const (
	// TimeSlicingPlatform (""): as the platform's NVIDIA DRA driver runs
	// (--consumable-shares; disabled, the driver's default, where nothing
	// says).
	TimeSlicingPlatform TimeSlicing = ""
	// TimeSlicingShares: consumable shares, as the NVIDIA DRA driver v0.5+
	// publishes them with its ConsumableShares feature gate and
	// --consumable-shares=<the node's replicas>, whatever the platform says.
	TimeSlicingShares TimeSlicing = "shares"
	// TimeSlicingWhole: whole GPUs, as a driver without consumable shares
	// publishes them.
	TimeSlicingWhole TimeSlicing = "whole"
)

// ParseTimeSlicing reads a TimeSlicing mode: "" is the platform's.
func ParseTimeSlicing(s string) (TimeSlicing, error) {
	switch m := TimeSlicing(s); m {
	case TimeSlicingPlatform, TimeSlicingShares, TimeSlicingWhole:
		return m, nil
	}
	return "", fmt.Errorf("unknown time-slicing mode %q (allowed: %s, %s, or none for the platform's consumable-shares mode)", s, TimeSlicingShares, TimeSlicingWhole)
}

// OptOutLabel is GPU Operator's per-node opt-out: a node labelled
// nvidia.com/gpu.deploy.operands=false gets none of its operands, DRA
// driver included, and does not switch.
const OptOutLabel = "nvidia.com/gpu.deploy.operands"

// Options of a forecast.
type Options struct {
	// Policy is the vocabulary (translate.DefaultPolicy() or the
	// operator's). Required.
	Policy *translate.Policy
	// GFDLabels says whether GFD's labels stay on switched nodes. Default
	// (""): drop.
	GFDLabels GFDLabels
	// Platform is what is known of the platform the switch lands on
	// (package platform): the DeviceClasses its drivers create and the
	// extended resources they map, the NVIDIA DRA driver's
	// consumable-shares mode. Nil: the drivers' own defaults
	// (platform.Defaults: classes that map nothing, exclusive GPUs).
	Platform *platform.Platform
	// TimeSlicing overrides how time-sliced GPUs are forecast. Default
	// (""): as the platform's consumable-shares mode says.
	TimeSlicing TimeSlicing
	// Nodes selects the nodes the switch covers. Nil: every node with a
	// forecastable accelerator.
	Nodes labels.Selector
	// Classes are the DeviceClasses created at the switch; they replace
	// classes of the same name in the inventory. Nil: the default classes
	// of the drivers forecast on a switched node, as the NVIDIA DRA driver's
	// and the TPU driver's charts and the AMD GPU Operator install them,
	// each mapping the extended resource the platform says it maps (none,
	// by the drivers' defaults), added where the inventory has no class of
	// that name.
	Classes []*resourceapi.DeviceClass
}

// Result of a forecast.
type Result struct {
	// After is the fleet after the switch: switched nodes with the
	// extended resources of the forecast drivers removed from capacity and
	// allocatable and (drop) GFD's labels removed; the forecast
	// ResourceSlices; the DeviceClasses; untouched nodes, slices, Pods,
	// Claims and TaintRules as they were. Everything is a deep copy (the
	// input is never modified), nodes and classes in name order, slices
	// grouped by node in node order (WriteYAML's order).
	After *feasibility.Inventory
	// Nodes has one entry per node of the input, in name order.
	Nodes []Node
	// Platform is the platform the forecast assumed.
	Platform *platform.Platform
	// forecast marks the slices the forecast made.
	forecast map[string]bool
}

// Node is what the forecast says of one node.
type Node struct {
	Name     string `json:"name"`
	Switched bool   `json:"switched"`
	// Why it does not switch: "opted out (nvidia.com/gpu.deploy.operands=false)",
	// "not selected by --forecast-nodes", "no accelerator the forecast
	// knows", "already publishes ResourceSlices for <drivers>"; "" when
	// Switched.
	Why string `json:"why,omitempty"`
	// Drivers forecast on the node, in driver order. On a node that does
	// not switch, what it would publish if it did (no slice is written).
	Drivers []Driver `json:"drivers,omitempty"`
}

// Driver is the forecast of one DRA driver on one node.
type Driver struct {
	// Driver name: "gpu.nvidia.com", "tpu.google.com", or the driver (or
	// DeviceClass) a not-forecast resource maps to.
	Driver string `json:"driver"`
	// Devices forecast (0 with NotForecast).
	Devices int `json:"devices"`
	// Resources are the legacy extended resources the driver replaces on
	// the node (removed from capacity and allocatable in After when the
	// node switches and the driver is forecast), sorted.
	Resources []corev1.ResourceName `json:"resources,omitempty"`
	// NotForecast, when set, says why no device is forecast; the node's
	// capacity and allocatable keep the resources.
	NotForecast string `json:"notForecast,omitempty"`
	// Unknown are the attributes and capacities the driver publishes that
	// the labels cannot tell ("uuid", "pciBusID", "pcieRoot", "numaNode",
	// "parentUUID", ...): left out of the devices, never invented; sorted.
	Unknown []string `json:"unknown,omitempty"`
	// Notes say how values were read where the labels are not exact (a
	// product name's spelling, shares counted as GPUs, MIG as configured
	// today), and which labels could not be read or disagree; sorted.
	Notes []string `json:"notes,omitempty"`
}

// Forecast builds, from each node's legacy view (GFD, NFD and GKE labels,
// extended resources, the MIG strategy and per-profile labels, sharing
// replicas), the ResourceSlices and DeviceClasses the DRA drivers would
// publish for the same hardware, and the nodes as they will look after the
// switch. What a label means is the policy's vocabulary (its node-label
// rules read in the device direction, [translate.Policy.ForecastDevices]);
// what a driver writes on its own (device types, constant attributes, the
// TPU generation) is this package's. An error means the options are
// invalid; a node whose labels cannot be read or contradict each other
// gets notes and the attributes left out.
func Forecast(before *feasibility.Inventory, opts Options) (*Result, error) {
	if before == nil {
		return nil, errors.New("forecast: no inventory")
	}
	if opts.Policy == nil {
		return nil, errors.New("forecast: no policy")
	}
	gfd, err := ParseGFDLabels(string(opts.GFDLabels))
	if err != nil {
		return nil, fmt.Errorf("forecast: %w", err)
	}
	slicing, err := ParseTimeSlicing(string(opts.TimeSlicing))
	if err != nil {
		return nil, fmt.Errorf("forecast: %w", err)
	}
	seen := map[string]bool{}
	for i, c := range opts.Classes {
		switch {
		case c == nil || c.Name == "":
			return nil, fmt.Errorf("forecast: class %d has no name", i)
		case seen[c.Name]:
			return nil, fmt.Errorf("forecast: two classes named %q", c.Name)
		}
		seen[c.Name] = true
	}

	plat := opts.Platform
	if plat == nil {
		plat = platform.Defaults()
	}
	f := &forecaster{
		p:         opts.Policy,
		gfd:       gfd,
		sharing:   sharingOf(plat, slicing),
		selector:  opts.Nodes,
		classes:   append(slices.Clone(opts.Classes), before.Classes...),
		published: map[string]map[string]bool{},
	}
	for _, s := range before.Slices {
		if n := ptr.Deref(s.Spec.NodeName, ""); n != "" {
			if f.published[n] == nil {
				f.published[n] = map[string]bool{}
			}
			f.published[n][s.Spec.Driver] = true
		}
	}

	nodes := slices.Clone(before.Nodes)
	slices.SortStableFunc(nodes, func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	res := &Result{After: &feasibility.Inventory{PodsListed: before.PodsListed}, Platform: plat, forecast: map[string]bool{}}
	switchedDrivers := map[string]bool{}
	newSlices := map[string][]*resourceapi.ResourceSlice{}
	for _, n := range nodes {
		fn := f.node(n)
		after := n.DeepCopy()
		after.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
		if fn.node.Switched {
			f.switchNode(after, fn)
			for _, d := range fn.forecast {
				switchedDrivers[d.driver.Driver] = true
				for _, s := range pool(n.Name, d.driver.Driver, d.devices, d.unknown) {
					newSlices[n.Name] = append(newSlices[n.Name], s)
					res.forecast[s.Name] = true
				}
			}
		}
		res.Nodes = append(res.Nodes, fn.node)
		res.After.Nodes = append(res.After.Nodes, after)
	}

	// Slices: each node's own (as they were, then the forecast ones), then
	// the rest in their order.
	var rest []*resourceapi.ResourceSlice
	byNode := map[string][]*resourceapi.ResourceSlice{}
	for _, n := range nodes {
		byNode[n.Name] = nil
	}
	for _, s := range before.Slices {
		c := s.DeepCopy()
		c.TypeMeta = metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceSlice"}
		if n := ptr.Deref(s.Spec.NodeName, ""); n != "" {
			if _, ok := byNode[n]; ok {
				byNode[n] = append(byNode[n], c)
				continue
			}
		}
		rest = append(rest, c)
	}
	for _, n := range nodes {
		res.After.Slices = append(res.After.Slices, byNode[n.Name]...)
		res.After.Slices = append(res.After.Slices, newSlices[n.Name]...)
		delete(byNode, n.Name)
	}
	res.After.Slices = append(res.After.Slices, rest...)

	res.After.Classes = classesAfter(before.Classes, opts.Classes, switchedDrivers, plat)
	for _, c := range before.Claims {
		res.After.Claims = append(res.After.Claims, c.DeepCopy())
	}
	for _, r := range before.TaintRules {
		c := r.DeepCopy()
		c.TypeMeta = metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "DeviceTaintRule"}
		res.After.TaintRules = append(res.After.TaintRules, c)
	}
	for _, p := range before.Pods {
		res.After.Pods = append(res.After.Pods, p.DeepCopy())
	}
	return res, nil
}

// classesAfter: the inventory's classes, those of opts replacing any of the
// same name, or (no opts classes) the default classes of the drivers
// switched somewhere where no class has their name; in name order.
func classesAfter(before, given []*resourceapi.DeviceClass, drivers map[string]bool, plat *platform.Platform) []*resourceapi.DeviceClass {
	byName := map[string]*resourceapi.DeviceClass{}
	for _, c := range before {
		if _, ok := byName[c.Name]; !ok {
			byName[c.Name] = c
		}
	}
	if given != nil {
		for _, c := range given {
			byName[c.Name] = c
		}
	} else {
		for _, d := range slices.Sorted(maps.Keys(drivers)) {
			for _, c := range defaultClasses[d] {
				if _, ok := byName[c.name]; !ok {
					byName[c.name] = c.object(plat)
				}
			}
		}
	}
	var out []*resourceapi.DeviceClass
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		c := byName[name].DeepCopy()
		c.TypeMeta = metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "DeviceClass"}
		out = append(out, c)
	}
	return out
}

// pool is the pool of a driver on a node: named after the node,
// generation 1, devices in name order, in one ResourceSlice (as many as
// needed of at most 128 devices, ResourceSliceMaxDevices, as a driver
// splits them). unknown, the qualified names of what the driver will
// publish that the devices leave out, is each slice's
// claimbridge.io/unknown-attributes: a check whose answer depends on them
// is Unknown, never NeverFits.
func pool(node, driver string, devices []resourceapi.Device, unknown []string) []*resourceapi.ResourceSlice {
	devices = slices.Clone(devices)
	slices.SortFunc(devices, func(a, b resourceapi.Device) int { return cmp.Compare(a.Name, b.Name) })
	chunks := slices.Collect(slices.Chunk(devices, resourceapi.ResourceSliceMaxDevices))
	var out []*resourceapi.ResourceSlice
	for i, chunk := range chunks {
		name := sliceName(node, driver)
		if i > 0 {
			name = sliceName(node, driver+"-"+strconv.Itoa(i+1))
		}
		meta := metav1.ObjectMeta{Name: name}
		if len(unknown) > 0 {
			meta.Annotations = map[string]string{api.AnnotationUnknownAttributes: strings.Join(unknown, ",")}
		}
		out = append(out, &resourceapi.ResourceSlice{
			TypeMeta:   metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceSlice"},
			ObjectMeta: meta,
			Spec: resourceapi.ResourceSliceSpec{
				Driver:   driver,
				Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: int64(len(chunks))},
				NodeName: ptr.To(node),
				Devices:  chunk,
			},
		})
	}
	return out
}

// sliceName is "<node>-<driver>-forecast", a DNS subdomain (node names and
// driver names are; the result is cut to 253 characters).
func sliceName(node, driver string) string {
	name := node + "-" + driver + "-forecast"
	if len(name) > 253 {
		name = strings.TrimRight(name[:253], "-.")
	}
	return name
}
