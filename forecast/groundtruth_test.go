package forecast

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/translate/gpulabels"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/vendortruth"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/translate"
)

// The vendor ground truth (internal/testing/vendortruth, PROVENANCE.txt):
// GFD's labels and the NVIDIA DRA driver's devices, both produced by
// NVIDIA's own code from the same simulated GPUs. The forecast made from
// the labels must agree with the driver's devices on everything the labels
// tell, and carry nothing they do not.

// gfdLabels are GFD's labels of the model.
func gfdLabels(t *testing.T, model string) map[string]string {
	t.Helper()
	l, err := vendortruth.Labels(model)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// driverDevices are the driver's full GPUs of the model, or false when
// the model has none (t4).
func driverDevices(t *testing.T, model string) ([]resourceapi.Device, bool) {
	t.Helper()
	devs, ok, err := vendortruth.Devices(model)
	if err != nil {
		t.Fatal(err)
	}
	return devs, ok
}

// dynamicMIGDevices are the devices of the driver's one pool with DynamicMIG.
func dynamicMIGDevices(t *testing.T, model string) []resourceapi.Device {
	t.Helper()
	devs, err := vendortruth.DynamicMIG(model)
	if err != nil {
		t.Fatal(err)
	}
	return devs
}

// gpuNode is a node with these labels and these extended resources as
// capacity and allocatable.
func gpuNode(name string, labels map[string]string, resources map[corev1.ResourceName]int64) *corev1.Node {
	list := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"), corev1.ResourcePods: resource.MustParse("110")}
	for r, n := range resources {
		list[r] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status:     corev1.NodeStatus{Capacity: list.DeepCopy(), Allocatable: list},
	}
}

// forecastOne forecasts one node with the default policy and returns its
// summary and the devices of its slice of driver.
func forecastOne(t *testing.T, n *corev1.Node, driver string) (Node, []resourceapi.Device) {
	t.Helper()
	res, err := Forecast(&feasibility.Inventory{Nodes: []*corev1.Node{n}}, Options{Policy: translate.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Nodes) != 1 {
		t.Fatalf("%d node summaries, want 1", len(res.Nodes))
	}
	for _, s := range res.After.Slices {
		if s.Spec.Driver == driver {
			return res.Nodes[0], s.Spec.Devices
		}
	}
	t.Fatalf("no %s slice forecast; node: %+v", driver, res.Nodes[0])
	return Node{}, nil
}

// determined are the attributes and capacities GFD's labels determine on a
// full GPU: the forecast must carry each and agree with the driver.
var determined = []string{"architecture", "cudaComputeCapability", "cudaDriverVersion", "driverVersion", "productName", "type", "memory"}

// undetermined are what no label tells: the forecast must not carry them,
// and must name them Unknown. brand is NVML's brand, which differs by
// product and driver (go-nvlib's GetBrandAsString: Tesla, Nvidia, GeForce,
// …); the mock says "Nvidia" for every GPU.
var undetermined = []string{"brand", "uuid", "pciBusID", "pcieRoot", "numaNode"}

// TestForecastAgreesWithTheDriver: for each simulated GPU model, a node
// labelled by GFD with allocatable nvidia.com/gpu = nvidia.com/gpu.count is
// forecast as the driver's devices, equal on every attribute and capacity
// the labels determine. productName is compared exactly: the three models
// the driver ran on are names the forecast knows exactly.
func TestForecastAgreesWithTheDriver(t *testing.T) {
	for _, model := range []string{"a100", "h100", "l40s", "t4"} {
		t.Run(model, func(t *testing.T) {
			labels := gfdLabels(t, model)
			count, err := strconv.ParseInt(labels["nvidia.com/gpu.count"], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			summary, got := forecastOne(t, gpuNode("gt-"+model, labels, map[corev1.ResourceName]int64{"nvidia.com/gpu": count}), DriverNVIDIA)
			if int64(len(got)) != count {
				t.Fatalf("%d devices forecast, want %d", len(got), count)
			}
			drv := summary.Drivers[0]
			for _, u := range undetermined {
				if !slices.Contains(drv.Unknown, u) {
					t.Errorf("Unknown %v does not name %s", drv.Unknown, u)
				}
			}
			for _, d := range got {
				for _, a := range determined {
					_, isAttr := d.Attributes[resourceapi.QualifiedName(a)]
					_, isCap := d.Capacity[resourceapi.QualifiedName(a)]
					if !isAttr && !isCap {
						t.Errorf("%s: the labels determine %s, the forecast lacks it", d.Name, a)
					}
				}
				for name := range d.Attributes {
					if slices.Contains(undetermined, identifier(name)) {
						t.Errorf("%s carries %s, which no label tells", d.Name, name)
					}
				}
			}

			want, ok := driverDevices(t, model)
			if !ok {
				// No driver output for this model: check what its labels derive.
				d := got[0]
				wantAttrs := map[string]string{"architecture": "Turing", "cudaComputeCapability": "8.0.0", "driverVersion": "550.163.1",
					"cudaDriverVersion": "12.4.0", "productName": "NVIDIA-T4", "type": "gpu"}
				wantAttrs["cudaComputeCapability"] = "7.5.0"
				gotAttrs := map[string]string{}
				for k, v := range d.Attributes {
					gotAttrs[string(k)] = attrString(v)
				}
				if diff := cmp.Diff(wantAttrs, gotAttrs); diff != "" {
					t.Errorf("attributes (-want,+got):\n%s", diff)
				}
				if q := d.Capacity["memory"].Value; q.Cmp(resource.MustParse("16Gi")) != 0 {
					t.Errorf("memory %s, want 16Gi", q.String())
				}
				if len(drv.Notes) != 1 || !strings.Contains(drv.Notes[0], "cannot tell which of its dashes were spaces") {
					t.Errorf("notes %q, want the one on productName's spelling", drv.Notes)
				}
				return
			}
			if len(drv.Notes) != 0 {
				t.Errorf("notes %q, want none: every value is exact", drv.Notes)
			}
			byName := map[string]resourceapi.Device{}
			for _, d := range want {
				byName[d.Name] = d
			}
			for _, d := range got {
				w, ok := byName[d.Name]
				if !ok {
					t.Errorf("forecast device %s: the driver has no device of that name", d.Name)
					continue
				}
				for name, a := range d.Attributes {
					wa, ok := w.Attributes[name]
					if !ok {
						t.Errorf("%s: the forecast has %s, the driver does not publish it", d.Name, name)
						continue
					}
					if attrString(a) != attrString(wa) {
						t.Errorf("%s: %s is %s, the driver says %s", d.Name, name, attrString(a), attrString(wa))
					}
				}
				for name, c := range d.Capacity {
					wc, ok := w.Capacity[name]
					if !ok {
						t.Errorf("%s: the forecast has capacity %s, the driver does not publish it", d.Name, name)
						continue
					}
					if c.Value.Cmp(wc.Value) != 0 {
						t.Errorf("%s: %s is %s, the driver says %s", d.Name, name, c.Value.String(), wc.Value.String())
					}
				}
			}
		})
	}
}

// TestForecastMIGAgreesWithTheDriver: a mixed-strategy node labelled for
// one GPU with the driver's own MIG profiles (for each: allocatable
// nvidia.com/mig-<profile as GFD spells it> and GFD's per-profile labels
// with the driver's values) is forecast as the driver's MIG devices: the
// same profiles, counts and capacities.
func TestForecastMIGAgreesWithTheDriver(t *testing.T) {
	for _, model := range []string{"a100", "h100"} {
		t.Run(model, func(t *testing.T) {
			labels := gfdLabels(t, model)
			labels["nvidia.com/gpu.count"] = "1"
			labels["nvidia.com/mig.strategy"] = "mixed"
			resources := map[corev1.ResourceName]int64{}
			want := map[string]string{}
			for _, d := range dynamicMIGDevices(t, model) {
				if attrString(d.Attributes["type"]) != typeMIG {
					continue
				}
				profile := attrString(d.Attributes["profile"])
				gfd := strings.ReplaceAll(profile, "+", ".")
				res := "nvidia.com/mig-" + gfd
				resources[corev1.ResourceName(res)]++
				for _, l := range migCapacityLabels {
					c := d.Capacity[resourceapi.QualifiedName(l.capacity)].Value
					v := c.Value()
					if l.mib {
						v >>= 20
					}
					labels[res+"."+l.suffix] = strconv.FormatInt(v, 10)
				}
				want[profile] = capacityText(d.Capacity)
			}
			if len(want) < 7 {
				t.Fatalf("the driver's output has %d MIG profiles, want 7 or more", len(want))
			}
			for r, n := range resources {
				labels[string(r)+".count"] = strconv.FormatInt(n, 10)
			}
			wantCount := map[string]int64{}
			for r, n := range resources {
				wantCount[gpulabels.MIGProfileOfGFD(strings.TrimPrefix(string(r), "nvidia.com/mig-"))] = n
			}

			_, got := forecastOne(t, gpuNode("mig-"+model, labels, resources), DriverNVIDIA)
			gotProfiles := map[string]string{}
			gotCount := map[string]int64{}
			for _, d := range got {
				if attrString(d.Attributes["type"]) != typeMIG {
					t.Errorf("%s is of type %s, want only MIG devices", d.Name, attrString(d.Attributes["type"]))
					continue
				}
				p := attrString(d.Attributes["profile"])
				gotCount[p]++
				if prev, ok := gotProfiles[p]; ok && prev != capacityText(d.Capacity) {
					t.Errorf("devices of profile %s differ: %s and %s", p, prev, capacityText(d.Capacity))
				}
				gotProfiles[p] = capacityText(d.Capacity)
			}
			if diff := cmp.Diff(want, gotProfiles); diff != "" {
				t.Errorf("profile → capacities (-want driver,+got forecast):\n%s", diff)
			}
			if diff := cmp.Diff(wantCount, gotCount); diff != "" {
				t.Errorf("profile → devices (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestLabelsDeriveBack: the vocabulary's backward direction (the placement
// check's legacy view, Policy.LegacyLabel) over the forecast devices gives
// the node's GFD labels back wherever it derives one.
func TestLabelsDeriveBack(t *testing.T) {
	p := translate.DefaultPolicy()
	for _, model := range []string{"a100", "h100", "l40s", "t4"} {
		t.Run(model, func(t *testing.T) {
			labels := gfdLabels(t, model)
			count, _ := strconv.ParseInt(labels["nvidia.com/gpu.count"], 10, 64)
			n := gpuNode("gt-"+model, labels, map[corev1.ResourceName]int64{"nvidia.com/gpu": count})
			res, err := Forecast(&feasibility.Inventory{Nodes: []*corev1.Node{n}}, Options{Policy: p})
			if err != nil {
				t.Fatal(err)
			}
			derived := 0
			for _, k := range slices.Sorted(maps.Keys(labels)) {
				got, ok := p.LegacyLabel(k, labels, familyDevices(p, res.After, n.Name))
				if !ok {
					continue
				}
				derived++
				if want := p.CanonicalLabelValue(k, labels[k]); got != want {
					t.Errorf("%s derives back as %q, the node has %q", k, got, want)
				}
			}
			// product, memory, count, family, compute.major/minor and the
			// driver and runtime versions in both spellings.
			if derived < 18 {
				t.Errorf("only %d labels derive back", derived)
			}
		})
	}
}

// familyDevices is a translate.FamilyDevices over the node's slices in
// inv: the devices of the classes of the family's rules.
func familyDevices(p *translate.Policy, inv *feasibility.Inventory, node string) translate.FamilyDevices {
	rules := p.FamilyDeviceRules()
	return func(family string) []translate.LegacyDevice {
		var out []translate.LegacyDevice
		for _, s := range inv.Slices {
			if s.Spec.NodeName == nil || *s.Spec.NodeName != node {
				continue
			}
			for _, d := range s.Spec.Devices {
				for _, r := range rules[family] {
					driver, devType, ok := classDriver(r.DeviceClassName, inv.Classes)
					if ok && driver == s.Spec.Driver && (devType == "" || attrString(d.Attributes["type"]) == devType) {
						out = append(out, translate.LegacyDevice{Name: d.Name, Driver: s.Spec.Driver, Attributes: d.Attributes, Capacity: d.Capacity,
							AllowMultipleAllocations: d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations})
						break
					}
				}
			}
		}
		slices.SortFunc(out, func(a, b translate.LegacyDevice) int { return strings.Compare(a.Name, b.Name) })
		return out
	}
}

func attrString(a resourceapi.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return *a.StringValue
	case a.VersionValue != nil:
		return *a.VersionValue
	case a.IntValue != nil:
		return strconv.FormatInt(*a.IntValue, 10)
	case a.BoolValue != nil:
		return strconv.FormatBool(*a.BoolValue)
	}
	return ""
}

// capacityText writes the MIG capacities GFD labels (memory as bytes) in
// name order.
func capacityText(c map[resourceapi.QualifiedName]resourceapi.DeviceCapacity) string {
	var parts []string
	for _, l := range migCapacityLabels {
		v := c[resourceapi.QualifiedName(l.capacity)].Value
		parts = append(parts, fmt.Sprintf("%s=%d", l.capacity, v.Value()))
	}
	return strings.Join(parts, " ")
}

func resourceQuantity(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }

// TestForecastOfATimeSlicedNodeIsTheDriversSharedDevices: a node GFD
// labels as time-sliced 4 ways (the device plugin's timeSlicing replicas 4:
// nvidia.com/gpu 32 on 8 GPUs; renamed, nvidia.com/gpu.shared 32) is
// forecast as the NVIDIA DRA driver v0.5.0 publishes the same GPUs with
// ConsumableShares and --consumable-shares=4 (dra-devices-a100-shared.json):
// the same devices, each allowing multiple allocations, equal on every
// attribute the labels determine and on both capacities with their request
// policies (shares 4: default 1, 1..4 step 1; memory 40Gi: default 0,
// 0..40Gi step 1Mi). A node shared by MPS is forecast as the driver's
// GPUs without shares (dra-devices-a100.json), and a time-sliced node as
// whole GPUs when the platform's driver runs its defaults
// (--consumable-shares=disabled) or when the forecast is told so.
func TestForecastOfATimeSlicedNodeIsTheDriversSharedDevices(t *testing.T) {
	shared, ok := driverDevices(t, "a100-shared")
	if !ok || len(shared) != 8 {
		t.Fatalf("the driver's shared devices: %d, want 8", len(shared))
	}
	whole, _ := driverDevices(t, "a100")
	cases := map[string]struct {
		labels   string
		resource corev1.ResourceName
		shares   string // the platform's --consumable-shares, "" for the driver's default
		slicing  TimeSlicing
		want     []resourceapi.Device
	}{
		"time-sliced, 4 shares":                     {labels: "a100-timesliced-4", resource: "nvidia.com/gpu", shares: "4", want: shared},
		"time-sliced, renamed, 4 shares":            {labels: "a100-timesliced-4-renamed", resource: "nvidia.com/gpu.shared", shares: "4", want: shared},
		"time-sliced, the driver's defaults":        {labels: "a100-timesliced-4", resource: "nvidia.com/gpu", want: whole},
		"MPS, 4 shares":                             {labels: "a100-mps-4", resource: "nvidia.com/gpu", shares: "4", want: whole},
		"time-sliced, 4 shares, told whole":         {labels: "a100-timesliced-4", resource: "nvidia.com/gpu", shares: "4", slicing: TimeSlicingWhole, want: whole},
		"time-sliced, driver defaults, told shares": {labels: "a100-timesliced-4", resource: "nvidia.com/gpu", slicing: TimeSlicingShares, want: shared},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			labels := gfdLabels(t, tc.labels)
			n := gpuNode("sliced", labels, map[corev1.ResourceName]int64{tc.resource: 32})
			res, err := Forecast(&feasibility.Inventory{Nodes: []*corev1.Node{n}}, Options{Policy: translate.DefaultPolicy(), TimeSlicing: tc.slicing, Platform: sharesPlatform(t, tc.shares)})
			if err != nil {
				t.Fatal(err)
			}
			var got []resourceapi.Device
			for _, s := range res.After.Slices {
				if s.Spec.Driver == DriverNVIDIA {
					got = append(got, s.Spec.Devices...)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d devices forecast, want the driver's %d", len(got), len(tc.want))
			}
			byName := map[string]resourceapi.Device{}
			for _, d := range tc.want {
				byName[d.Name] = d
			}
			for _, d := range got {
				w, ok := byName[d.Name]
				if !ok {
					t.Errorf("forecast device %s: the driver has no device of that name", d.Name)
					continue
				}
				if a, b := ptrBool(d.AllowMultipleAllocations), ptrBool(w.AllowMultipleAllocations); a != b {
					t.Errorf("%s: allowMultipleAllocations %v, the driver says %v", d.Name, a, b)
				}
				for _, a := range determined {
					_, isAttr := d.Attributes[resourceapi.QualifiedName(a)]
					_, isCap := d.Capacity[resourceapi.QualifiedName(a)]
					if !isAttr && !isCap {
						t.Errorf("%s: the labels determine %s, the forecast lacks it", d.Name, a)
					}
				}
				for name, a := range d.Attributes {
					if slices.Contains(undetermined, identifier(name)) {
						t.Errorf("%s carries %s, which no label tells", d.Name, name)
					}
					if wa, ok := w.Attributes[name]; !ok || attrString(a) != attrString(wa) {
						t.Errorf("%s: %s is %q, the driver says %q", d.Name, name, attrString(a), attrString(wa))
					}
				}
				if diff := cmp.Diff(capacityPolicies(w.Capacity), capacityPolicies(d.Capacity)); diff != "" {
					t.Errorf("%s: capacities (-want driver,+got forecast):\n%s", d.Name, diff)
				}
			}
		})
	}
}

func ptrBool(b *bool) bool { return b != nil && *b }

// capacityPolicies writes capacities with their request policies, values
// in canonical form: "memory=42949672960 default=0 range=0..42949672960/1048576".
func capacityPolicies(c map[resourceapi.QualifiedName]resourceapi.DeviceCapacity) map[string]string {
	q := func(q *resource.Quantity) string {
		if q == nil {
			return "-"
		}
		return strconv.FormatInt(q.Value(), 10)
	}
	out := map[string]string{}
	for name, v := range c {
		s := "value=" + q(&v.Value)
		if p := v.RequestPolicy; p != nil {
			s += " default=" + q(p.Default)
			if r := p.ValidRange; r != nil {
				s += " range=" + q(r.Min) + ".." + q(r.Max) + "/" + q(r.Step)
			}
		}
		out[string(name)] = s
	}
	return out
}

// sharesPlatform is the drivers' defaults with the NVIDIA driver's
// --consumable-shares declared ("" for none: disabled).
func sharesPlatform(t *testing.T, shares string) *platform.Platform {
	return builders.Platform(t, v1alpha1.PlatformSpec{Drivers: []v1alpha1.DriverPlatform{{Family: "nvidia-gpu", ConsumableShares: shares}}})
}

// TestUnlimitedAndMemoryModesAreTheDriversDevices: with --consumable-shares
// unlimited or memory, a time-sliced node's GPUs allow multiple
// allocations and publish no shares capacity, and their memory is
// requested 0 (unlimited) or all of it (memory) by default, 1Mi steps, as
// the NVIDIA DRA driver's applyConsumableShares writes them; the T4s' pods
// that ask for shares then stay as submitted, since a share asks for the
// shares capacity.
func TestUnlimitedAndMemoryModesAreTheDriversDevices(t *testing.T) {
	for mode, wantDefault := range map[string]string{"unlimited": "0", "memory": "40Gi"} {
		t.Run(mode, func(t *testing.T) {
			n := gpuNode("sliced", gfdLabels(t, "a100-timesliced-4"), map[corev1.ResourceName]int64{"nvidia.com/gpu": 32})
			res, err := Forecast(&feasibility.Inventory{Nodes: []*corev1.Node{n}}, Options{Policy: translate.DefaultPolicy(), Platform: sharesPlatform(t, mode)})
			if err != nil {
				t.Fatal(err)
			}
			var got int
			for _, sl := range res.After.Slices {
				for _, d := range sl.Spec.Devices {
					got++
					mem, ok := d.Capacity[capacityMemory]
					if !ptrBool(d.AllowMultipleAllocations) || !ok || mem.RequestPolicy == nil {
						t.Fatalf("%s: allowMultipleAllocations %v, memory %+v", d.Name, d.AllowMultipleAllocations, mem)
					}
					if _, shares := d.Capacity[capacityShares]; shares {
						t.Errorf("%s: a shares capacity in mode %s", d.Name, mode)
					}
					if mem.RequestPolicy.Default.Cmp(resource.MustParse(wantDefault)) != 0 || mem.RequestPolicy.ValidRange.Step.Cmp(resource.MustParse("1Mi")) != 0 {
						t.Errorf("%s: memory default %s step %s, want %s and 1Mi", d.Name, mem.RequestPolicy.Default, mem.RequestPolicy.ValidRange.Step, wantDefault)
					}
				}
			}
			if got != 8 {
				t.Errorf("%d devices, want the node's 8 GPUs", got)
			}
		})
	}
}
