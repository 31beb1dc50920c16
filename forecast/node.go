package forecast

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/translate"
)

// forecaster holds what the forecast of every node reads.
type forecaster struct {
	p        *translate.Policy
	gfd      GFDLabels
	sharing  shareMode
	selector labels.Selector
	// classes: those of the options, then the inventory's (to tell which
	// driver serves a class the policy names).
	classes []*resourceapi.DeviceClass
	// published: node → drivers with ResourceSlices for it already.
	published map[string]map[string]bool
}

// legacyResource is one extended resource of a node that the policy maps
// to devices.
type legacyResource struct {
	name corev1.ResourceName
	// count is the node's allocatable quantity (its capacity when it
	// reports no allocatable one); capacity its capacity.
	count, capacity int64
	rule            translate.DeviceRule
	// driver and devType the rule's DeviceClass selects; driver "" when no
	// known driver serves the class.
	driver, devType string
}

// nodeForecast is the forecast of one node: what Result.Nodes says, and
// the devices of the drivers forecast.
type nodeForecast struct {
	node     Node
	forecast []driverForecast
}

type driverForecast struct {
	driver  Driver
	devices []resourceapi.Device
	// unknown: Driver.Unknown qualified ("gpu.nvidia.com/uuid",
	// "resource.kubernetes.io/pcieRoot"), for the slice's annotation.
	unknown []string
}

func (f *forecaster) node(n *corev1.Node) nodeForecast {
	byDriver := map[string][]legacyResource{}
	for _, r := range f.legacyResources(n) {
		key := r.driver
		if key == "" {
			key = r.rule.DeviceClassName
		}
		byDriver[key] = append(byDriver[key], r)
	}
	out := nodeForecast{node: Node{Name: n.Name}}
	for _, name := range slices.Sorted(maps.Keys(byDriver)) {
		rs := byDriver[name]
		d := Driver{Driver: name}
		for _, r := range rs {
			d.Resources = append(d.Resources, r.name)
		}
		var devices []resourceapi.Device
		var notes, unknownList []string
		switch {
		case f.published[n.Name][name]:
			d.NotForecast = "the node already publishes ResourceSlices for " + name + ": left as it is"
		case name == DriverNVIDIA:
			devices, notes, unknownList, d.NotForecast = f.nvidia(n, rs)
		case name == DriverTPU:
			devices, notes, unknownList, d.NotForecast = f.tpu(n, rs)
		case name == DriverAMD:
			devices, notes, unknownList, d.NotForecast = f.amd(n, rs)
		case rs[0].driver == "":
			d.NotForecast = fmt.Sprintf("DeviceClass %s: the forecast knows no DRA driver that serves it", name)
		case notForecast[name] != "":
			d.NotForecast = notForecast[name]
		default:
			d.NotForecast = name + ": the forecast does not know this driver's devices"
		}
		if d.NotForecast == "" && len(devices) == 0 {
			d.NotForecast = "no device could be counted from the node's resources and labels"
		}
		if d.NotForecast != "" {
			devices, unknownList = nil, nil
		}
		d.Unknown = identifiers(unknownList)
		for _, r := range rs {
			if d.NotForecast == "" && r.capacity > r.count {
				notes = append(notes, fmt.Sprintf("%s: capacity %d, allocatable %d: the devices the device plugin does not offer (unhealthy) are not forecast",
					r.name, r.capacity, r.count))
			}
		}
		d.Devices = len(devices)
		d.Notes = sortedSet(notes)
		out.node.Drivers = append(out.node.Drivers, d)
		if d.NotForecast == "" {
			out.forecast = append(out.forecast, driverForecast{driver: d, devices: devices, unknown: qualified(name, unknownList)})
		}
	}

	switch {
	case len(out.forecast) == 0 && len(f.published[n.Name]) > 0:
		out.node.Why = "already publishes ResourceSlices for " + strings.Join(slices.Sorted(maps.Keys(f.published[n.Name])), ", ")
	case len(out.forecast) == 0 && len(out.node.Drivers) == 0 && len(f.withoutPlugin(n)) > 0:
		out.node.Why = fmt.Sprintf("no device plugin: its allocatable offers 0 %s (what the kubelet keeps once a device plugin has left, until it restarts), "+
			"so the switch replaces nothing there", strings.Join(f.withoutPlugin(n), ", "))
	case len(out.forecast) == 0:
		out.node.Why = "no accelerator the forecast knows"
	case n.Labels[OptOutLabel] == "false":
		out.node.Why = "opted out (" + OptOutLabel + "=false)"
	case f.selector != nil && !f.selector.Matches(labels.Set(n.Labels)):
		out.node.Why = "not selected by --forecast-nodes"
	default:
		out.node.Switched = true
	}
	return out
}

// legacyResources lists the node's extended resources (allocatable, else
// capacity, above 0) that the policy maps to devices, in name order, with
// the driver their DeviceClass selects. The node's labels may move a
// resource to another class (nvidia.com/gpu under mig.strategy=single or
// GKE's partition size is a MIG device), as translate.Policy.LegacyResource
// says.
func (f *forecaster) legacyResources(n *corev1.Node) []legacyResource {
	names := map[corev1.ResourceName]bool{}
	for name := range n.Status.Allocatable {
		names[name] = true
	}
	for name := range n.Status.Capacity {
		names[name] = true
	}
	var out []legacyResource
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if !podfacts.IsExtendedResource(name) {
			continue
		}
		capQ := n.Status.Capacity[name]
		count := capQ.Value()
		if q, ok := n.Status.Allocatable[name]; ok {
			count = q.Value()
		}
		if count <= 0 {
			continue
		}
		rule, ok := f.p.LegacyResource(name, n.Labels)
		if !ok {
			continue
		}
		driver, devType, _ := classDriver(rule.DeviceClassName, f.classes)
		out = append(out, legacyResource{name: name, count: count, capacity: capQ.Value(), rule: rule, driver: driver, devType: devType})
	}
	return out
}

// withoutPlugin lists the extended resources the policy maps that the
// node's allocatable holds at 0, sorted: the kubelet keeps a device
// plugin's resource, at 0, after the plugin has left (until it restarts),
// so no device plugin serves it there and no pod gets it today, whatever
// the capacity says.
func (f *forecaster) withoutPlugin(n *corev1.Node) []string {
	var out []string
	for name, q := range n.Status.Allocatable {
		if !podfacts.IsExtendedResource(name) || !q.IsZero() {
			continue
		}
		if _, ok := f.p.LegacyResource(name, n.Labels); ok {
			out = append(out, string(name))
		}
	}
	slices.Sort(out)
	return out
}

// switchNode makes after the node as it will be: the resources of the
// forecast drivers gone from capacity and allocatable, and (drop) GPU
// Feature Discovery's labels gone where the NVIDIA driver switches.
func (f *forecaster) switchNode(after *corev1.Node, fn nodeForecast) {
	nvidia := false
	for _, d := range fn.forecast {
		for _, r := range d.driver.Resources {
			delete(after.Status.Capacity, r)
			delete(after.Status.Allocatable, r)
		}
		nvidia = nvidia || d.driver.Driver == DriverNVIDIA
	}
	if nvidia && f.gfd == GFDLabelsDrop {
		for k := range after.Labels {
			if GFDLabel(k) {
				delete(after.Labels, k)
			}
		}
	}
}

// GFDLabel reports whether GPU Feature Discovery writes the label key (its
// vocabulary, reference dra.md §3.10): nvidia.com/gpu.*, nvidia.com/cuda.*,
// nvidia.com/mig-<profile>.*, nvidia.com/mig.strategy, nvidia.com/mig.capable,
// nvidia.com/mps.*, nvidia.com/vgpu.*, nvidia.com/gfd.*. The GPU Operator's
// own labels stay: nvidia.com/gpu.present, nvidia.com/gpu.deploy.*,
// nvidia.com/gpu.workload.config, and the MIG manager's nvidia.com/mig.config
// and nvidia.com/mig.config.state.
func GFDLabel(key string) bool {
	switch {
	case key == "nvidia.com/gpu.present", strings.HasPrefix(key, "nvidia.com/gpu.deploy."), key == "nvidia.com/gpu.workload.config":
		return false
	case key == "nvidia.com/mig.strategy", key == "nvidia.com/mig.capable":
		return true
	}
	for _, prefix := range []string{"nvidia.com/gpu.", "nvidia.com/cuda.", "nvidia.com/mig-", "nvidia.com/mps.", "nvidia.com/vgpu.", "nvidia.com/gfd."} {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}

// local writes the forecast's qualified names as the driver writes them:
// its own domain's without the domain, others (resource.kubernetes.io/…)
// qualified.
func local(driver string, attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	out := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(attrs))
	for k, v := range attrs {
		out[localName(driver, k)] = v
	}
	return out
}

func localName(driver string, name resourceapi.QualifiedName) resourceapi.QualifiedName {
	if id, ok := strings.CutPrefix(string(name), driver+"/"); ok {
		return resourceapi.QualifiedName(id)
	}
	return name
}

// unknown lists what of want (names as the driver writes them: its own
// without the domain, standard attributes qualified) a device does not
// carry.
func unknown(d resourceapi.Device, attrs, capacity []string) []string {
	var out []string
	for _, a := range attrs {
		if _, ok := d.Attributes[resourceapi.QualifiedName(a)]; !ok {
			out = append(out, a)
		}
	}
	for _, c := range capacity {
		if _, ok := d.Capacity[resourceapi.QualifiedName(c)]; !ok {
			out = append(out, c)
		}
	}
	return out
}

// identifiers are the names as Driver.Unknown shows them: by identifier
// (pcieRoot, numaNode), sorted, once each.
func identifiers(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, identifier(resourceapi.QualifiedName(n)))
	}
	return sortedSet(out)
}

// qualified are the names as the slice's claimbridge.io/unknown-attributes
// lists them: "<driver>/<name>" for the driver's own, standard attributes
// as they are; a placeholder of a family of names (memorySlice<i>) is no
// name and left out. Sorted, once each.
func qualified(driver string, names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		switch {
		case strings.ContainsAny(n, "<>"):
		case strings.Contains(n, "/"):
			out = append(out, n)
		default:
			out = append(out, driver+"/"+n)
		}
	}
	return sortedSet(out)
}

func identifier(name resourceapi.QualifiedName) string {
	s := string(name)
	if i := strings.LastIndex(s, "/"); i >= 0 {
		return s[i+1:]
	}
	return s
}

func sortedSet(xs []string) []string {
	set := map[string]bool{}
	for _, x := range xs {
		set[x] = true
	}
	if len(set) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(set))
}
