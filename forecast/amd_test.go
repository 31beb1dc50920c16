package forecast

import (
	"cmp"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/translate"
)

// mi300xLabels are what AMD's node labeller writes on a node of 8 MI300X
// (ROCm/k8s-device-plugin v1.31.0.10 cmd/k8s-node-labeller, the GPU
// Operator's flags), with the module's version given; a value "-" removes
// the label.
func mi300xLabels(kv ...string) map[string]string {
	l := map[string]string{
		"amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM", "beta.amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM",
		"amd.com/gpu.device-id": "74a1", "beta.amd.com/gpu.device-id": "74a1",
		"amd.com/gpu.vram": "192G", "beta.amd.com/gpu.vram": "192G", "beta.amd.com/gpu.vram.192G": "8",
		"amd.com/gpu.family": "AI", "amd.com/gpu.cu-count": "304", "amd.com/gpu.simd-count": "1216",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "-" {
			delete(l, kv[i])
			continue
		}
		l[kv[i]] = kv[i+1]
	}
	return l
}

// cpxLabels are what the labeller writes on a node of 8 MI300X in
// CPX/NPS1: 64 partitions of 24574Mi, 38 compute units and 152 SIMD units
// each (vendortruth amd-mi300x-cpx), with its compute-memory-partition
// flag; product-name and device-id count the 8 GPUs.
func cpxLabels(kv ...string) map[string]string {
	return mi300xLabels(append([]string{"amd.com/gpu.vram", "24G", "beta.amd.com/gpu.vram", "24G", "beta.amd.com/gpu.vram.192G", "-",
		"beta.amd.com/gpu.vram.24G", "64", "amd.com/gpu.cu-count", "38", "amd.com/gpu.simd-count", "152",
		"amd.com/gpu.compute-memory-partition", "cpx_nps1", "beta.amd.com/gpu.product-name.AMD_Instinct_MI300X_OAM", "8"}, kv...)...)
}

// TestAMDForecast: an AMD node's amd.com/gpu are the AMD driver's devices,
// whole GPUs (type amdgpu) or, where the GPUs are partitioned, their
// partitions (type amdgpu-partition) and no whole GPU, with what the
// labeller's labels tell (productName, deviceID, partitionProfile,
// memory, computeUnits, simdUnits) and the module's version as the driver
// writes it; a version the apiserver would reject is not forecast.
func TestAMDForecast(t *testing.T) {
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }
	ver := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{VersionValue: &s} }
	base := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": str("amdgpu"), "productName": str("AMD_Instinct_MI300X_OAM"), "deviceID": str("0x74a1")}
	with := func(kv ...any) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
		out := maps.Clone(base)
		for i := 0; i+1 < len(kv); i += 2 {
			out[resourceapi.QualifiedName(kv[i].(string))] = kv[i+1].(resourceapi.DeviceAttribute)
		}
		return out
	}
	whole := map[string]string{"memory": "192Gi", "computeUnits": "304", "simdUnits": "1216"}
	partition := map[string]string{"memory": "24Gi", "computeUnits": "38", "simdUnits": "152"}
	unknownNoVersion := []string{"driverVersion", "driverVersionFull", "numaNode", "partitionProfile", "pciBusID", "pcieRoot"}
	unknownVersion := []string{"numaNode", "partitionProfile", "pciBusID", "pcieRoot"}
	cases := map[string]struct {
		labels          map[string]string
		gpus            int64 // amd.com/gpu; 8 when 0
		wantAttrs       map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
		wantCapacity    map[string]string // whole when nil
		wantUnknown     []string
		wantNotForecast string // substring
		wantNote        string // substring of a note
	}{
		"without the driver-version label the version is unknown": {
			labels: mi300xLabels(), wantAttrs: base, wantUnknown: unknownNoVersion,
		},
		"a semver module version is the driver's version": {
			labels:      mi300xLabels("amd.com/gpu.driver-version", "6.10.5"),
			wantAttrs:   with("driverVersion", ver("6.10.5"), "driverVersionFull", str("6.10.5")),
			wantUnknown: unknownVersion,
		},
		"an out-of-tree module's four components are trimmed to three": {
			labels:      mi300xLabels("amd.com/gpu.driver-version", "6.19.14.31400000"),
			wantAttrs:   with("driverVersion", ver("6.19.14"), "driverVersionFull", str("6.19.14.31400000")),
			wantUnknown: unknownVersion,
			wantNote:    "its first versions published it whole, which the apiserver rejects with the whole ResourceSlice",
		},
		"an in-kernel module reports no version: the driver publishes none, which is not unknown": {
			labels:      mi300xLabels("amd.com/gpu.driver-version", ""),
			wantAttrs:   base,
			wantUnknown: unknownVersion,
		},
		"a version the apiserver rejects leaves the node's GPUs without DRA": {
			labels:          mi300xLabels("amd.com/gpu.driver-version", "6.19"),
			wantNotForecast: `the driver would publish driverVersion "6.19" (amd.com/gpu.driver-version=6.19), which is not semver 2.0: the apiserver rejects the whole ResourceSlice`,
		},
		"a version with a leading zero is no semver either": {
			labels:          mi300xLabels("amd.com/gpu.driver-version", "6.08.1"),
			wantNotForecast: "which is not semver 2.0",
		},
		"GPUs in SPX mode are whole GPUs with their partition profile": {
			labels:      mi300xLabels("amd.com/gpu.compute-memory-partition", "spx_nps1"),
			wantAttrs:   with("partitionProfile", str("spx_nps1")),
			wantUnknown: []string{"driverVersion", "driverVersionFull", "numaNode", "pciBusID", "pcieRoot"},
		},
		"as many amd.com/gpu as the labeller counts GPUs are whole GPUs": {
			labels: mi300xLabels("beta.amd.com/gpu.product-name.AMD_Instinct_MI300X_OAM", "8"), wantAttrs: base, wantUnknown: unknownNoVersion,
		},
		"without cu-count and simd-count the units are unknown": {
			labels:       mi300xLabels("amd.com/gpu.driver-version", "6.10.5", "amd.com/gpu.cu-count", "-", "amd.com/gpu.simd-count", "-"),
			wantAttrs:    with("driverVersion", ver("6.10.5"), "driverVersionFull", str("6.10.5")),
			wantCapacity: map[string]string{"memory": "192Gi"}, wantUnknown: []string{"computeUnits", "numaNode", "partitionProfile", "pciBusID", "pcieRoot", "simdUnits"},
		},
		"GPUs in CPX mode are their partitions, with the mode, and no whole GPU": {
			labels: cpxLabels(), gpus: 64,
			wantAttrs:    with("type", str("amdgpu-partition"), "partitionProfile", str("cpx_nps1")),
			wantCapacity: partition, wantUnknown: []string{"driverVersion", "driverVersionFull", "numaNode", "pciBusID", "pcieRoot"},
			wantNote: "the GPUs are partitioned (amd.com/gpu.compute-memory-partition=cpx_nps1): the device plugin's 64 amd.com/gpu are partitions",
		},
		"without the partition label, more amd.com/gpu than GPUs counted are partitions of a mode not told": {
			labels: cpxLabels("amd.com/gpu.compute-memory-partition", "-"), gpus: 64,
			wantAttrs:    with("type", str("amdgpu-partition")),
			wantCapacity: partition, wantUnknown: unknownNoVersion,
			wantNote: "the node offers 64 amd.com/gpu and the labeller counts 8 GPUs (beta.amd.com/gpu.product-name.*): the GPUs are partitioned",
		},
		"the device ID's count tells it too": {
			labels: cpxLabels("amd.com/gpu.compute-memory-partition", "-", "beta.amd.com/gpu.product-name.AMD_Instinct_MI300X_OAM", "-", "beta.amd.com/gpu.device-id.74a1", "8"), gpus: 64,
			wantAttrs:    with("type", str("amdgpu-partition")),
			wantCapacity: partition, wantUnknown: unknownNoVersion,
			wantNote: "the labeller counts 8 GPUs (beta.amd.com/gpu.device-id.*)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gpus := cmp.Or(tc.gpus, 8)
			n := gpuNode("mi300x", tc.labels, map[corev1.ResourceName]int64{"amd.com/gpu": gpus})
			res, err := Forecast(&feasibility.Inventory{Nodes: []*corev1.Node{n}}, Options{Policy: translate.DefaultPolicy()})
			if err != nil {
				t.Fatal(err)
			}
			drv := res.Nodes[0].Drivers[0]
			if drv.Driver != DriverAMD {
				t.Fatalf("driver %s, want %s", drv.Driver, DriverAMD)
			}
			if tc.wantNotForecast != "" {
				if !strings.Contains(drv.NotForecast, tc.wantNotForecast) || res.Nodes[0].Switched || len(res.After.Slices) != 0 {
					t.Errorf("NotForecast %q, switched %v, %d slices: want not forecast, %q", drv.NotForecast, res.Nodes[0].Switched, len(res.After.Slices), tc.wantNotForecast)
				}
				return
			}
			if drv.NotForecast != "" || int64(drv.Devices) != gpus || len(res.After.Slices) != 1 {
				t.Fatalf("%+v, %d slices: want %d devices in one slice", drv, len(res.After.Slices), gpus)
			}
			wantCapacity := tc.wantCapacity
			if wantCapacity == nil {
				wantCapacity = whole
			}
			s := res.After.Slices[0]
			for _, d := range s.Spec.Devices {
				if diff := gocmp.Diff(tc.wantAttrs, d.Attributes); diff != "" {
					t.Fatalf("%s attributes (-want,+got):\n%s", d.Name, diff)
				}
				got := map[string]string{}
				for k, c := range d.Capacity {
					got[string(k)] = c.Value.String()
				}
				if diff := gocmp.Diff(wantCapacity, got); diff != "" {
					t.Fatalf("%s capacity (-want,+got):\n%s", d.Name, diff)
				}
			}
			if diff := gocmp.Diff(tc.wantUnknown, drv.Unknown); diff != "" {
				t.Errorf("Unknown (-want,+got):\n%s", diff)
			}
			// The annotation names them qualified, for the checker.
			for _, u := range drv.Unknown {
				if !strings.Contains(s.Annotations[api.AnnotationUnknownAttributes], "/"+u) {
					t.Errorf("annotation %q does not name %s", s.Annotations[api.AnnotationUnknownAttributes], u)
				}
			}
			if tc.wantNote != "" && !slices.ContainsFunc(drv.Notes, func(n string) bool { return strings.Contains(n, tc.wantNote) }) {
				t.Errorf("notes %q, want one saying %q", drv.Notes, tc.wantNote)
			}
			if !slices.ContainsFunc(drv.Notes, func(n string) bool { return strings.Contains(n, "rounded to whole GiB") }) {
				t.Errorf("notes %q, want the vram rounding said", drv.Notes)
			}
			// The labeller's labels stay on the node.
			if res.After.Nodes[0].Labels["amd.com/gpu.family"] != "AI" {
				t.Error("the switch dropped the labeller's labels")
			}
		})
	}
}

// TestAMDNamesAreTheDriversOwn: no AMD driver ran here (it reads sysfs and
// the KFD topology of a real GPU), so there is no ground truth of its
// devices as for NVIDIA: the forecast and the amd profile are held to the
// names read from the driver's source instead — every attribute and
// capacity a forecast AMD device carries, and every one the amd profile's
// rules select on, is one the driver publishes (amdGPUAttributes,
// amdGPUCapacity: ROCm/k8s-gpu-dra-driver cmd/gpu-kubeletplugin/deviceinfo.go
// at 08bc729c, AmdGpuInfo.GetDevice), in the driver's own domain.
func TestAMDNamesAreTheDriversOwn(t *testing.T) {
	n := gpuNode("mi300x", mi300xLabels("amd.com/gpu.driver-version", "6.10.5", "amd.com/gpu.compute-memory-partition", "spx_nps1"),
		map[corev1.ResourceName]int64{"amd.com/gpu": 8})
	_, devices := forecastOne(t, n, DriverAMD)
	for _, d := range devices {
		for name := range d.Attributes {
			if !slices.Contains(amdGPUAttributes, string(name)) {
				t.Errorf("%s carries %s, which the driver does not publish", d.Name, name)
			}
		}
		for name := range d.Capacity {
			if !slices.Contains(amdGPUCapacity, string(name)) {
				t.Errorf("%s carries capacity %s, which the driver does not publish", d.Name, name)
			}
		}
	}

	data, err := os.ReadFile("../api/v1alpha1/profiles/amd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var profile v1alpha1.TranslationPolicy
	if err := yaml.UnmarshalStrict(data, &profile); err != nil {
		t.Fatal(err)
	}
	own := func(what, qualified string, names []string) {
		id, ok := strings.CutPrefix(qualified, DriverAMD+"/")
		if !ok || !slices.Contains(names, id) {
			t.Errorf("the amd profile's %s %s is not one the AMD driver publishes", what, qualified)
		}
	}
	for _, r := range profile.Spec.Resources {
		for _, s := range r.Selectors {
			own("selector", s.Attribute, amdGPUAttributes)
		}
	}
	if len(profile.Spec.NodeLabels) == 0 {
		t.Fatal("the amd profile maps no node label")
	}
	for _, r := range profile.Spec.NodeLabels {
		if r.Attribute != "" {
			own("attribute", r.Attribute, amdGPUAttributes)
		}
		if r.Capacity != "" {
			own("capacity", r.Capacity, amdGPUCapacity)
		}
	}
}

// TestAMDCaveats: a forecast that switches AMD nodes says what the AMD
// switch needs (the operator's version, the driver's version attribute);
// one without AMD nodes does not.
func TestAMDCaveats(t *testing.T) {
	amd := func(j *CutoverForecast) int {
		n := 0
		for _, c := range j.Summary.Caveats {
			if strings.Contains(c.Text, "AMD") {
				n++
			}
		}
		return n
	}
	n := gpuNode("mi300x", mi300xLabels(), map[corev1.ResourceName]int64{"amd.com/gpu": 8})
	j := forecastJobs(t, &feasibility.Inventory{Nodes: []*corev1.Node{n}}, nil, Options{})
	if got := amd(j); got != len(driverCaveats[DriverAMD]) {
		t.Errorf("%d AMD caveats, want %d: %+v", got, len(driverCaveats[DriverAMD]), j.Summary.Caveats)
	}
	if !slices.ContainsFunc(j.Summary.Caveats, func(c cutover.Caveat) bool { return strings.Contains(c.Text, "AMD GPU Operator v1.5") }) {
		t.Error("no caveat names the operator version the AMD switch needs")
	}
	if !slices.ContainsFunc(j.Summary.Caveats, func(c cutover.Caveat) bool { return strings.Contains(c.Text, "not semver 2.0") }) {
		t.Error("no caveat says a version that is not semver loses the whole ResourceSlice")
	}
	if got := amd(forecastJobs(t, legacyNodes(t, map[string]string{"cutover-a100-0": "a"}), nil, Options{})); got != 0 {
		t.Errorf("%d AMD caveats on a fleet without AMD GPUs", got)
	}
}
