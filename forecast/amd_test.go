package forecast

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
// Operator's flags), with the module's version given.
func mi300xLabels(kv ...string) map[string]string {
	l := map[string]string{
		"amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM", "beta.amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM",
		"amd.com/gpu.device-id": "74a1", "beta.amd.com/gpu.device-id": "74a1",
		"amd.com/gpu.vram": "192G", "beta.amd.com/gpu.vram": "192G", "beta.amd.com/gpu.vram.192G": "8",
		"amd.com/gpu.family": "AI", "amd.com/gpu.cu-count": "304", "amd.com/gpu.simd-count": "1216",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return l
}

// TestAMDForecast: an AMD node's GPUs are the AMD driver's devices, type
// amdgpu, with what the labeller's labels tell (productName, deviceID,
// memory) and the module's version as the driver writes it; a version the
// apiserver would reject, and partitioned GPUs, are not forecast.
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
	allUnknown := []string{"computeUnits", "driverVersion", "driverVersionFull", "numaNode", "partitionProfile", "pciBusID", "pcieRoot", "simdUnits"}
	cases := map[string]struct {
		labels          map[string]string
		wantAttrs       map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
		wantUnknown     []string
		wantNotForecast string // substring
		wantNote        string // substring of a note
	}{
		"without the driver-version label the version is unknown": {
			labels: mi300xLabels(), wantAttrs: base, wantUnknown: allUnknown,
		},
		"a semver module version is the driver's version": {
			labels:      mi300xLabels("amd.com/gpu.driver-version", "6.10.5"),
			wantAttrs:   with("driverVersion", ver("6.10.5"), "driverVersionFull", str("6.10.5")),
			wantUnknown: []string{"computeUnits", "numaNode", "partitionProfile", "pciBusID", "pcieRoot", "simdUnits"},
		},
		"an out-of-tree module's four components are trimmed to three": {
			labels:      mi300xLabels("amd.com/gpu.driver-version", "6.19.14.31400000"),
			wantAttrs:   with("driverVersion", ver("6.19.14"), "driverVersionFull", str("6.19.14.31400000")),
			wantUnknown: []string{"computeUnits", "numaNode", "partitionProfile", "pciBusID", "pcieRoot", "simdUnits"},
			wantNote:    "its first versions published it whole, which the apiserver rejects with the whole ResourceSlice",
		},
		"an in-kernel module reports no version: the driver publishes none, which is not unknown": {
			labels:      mi300xLabels("amd.com/gpu.driver-version", ""),
			wantAttrs:   base,
			wantUnknown: []string{"computeUnits", "numaNode", "partitionProfile", "pciBusID", "pcieRoot", "simdUnits"},
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
			wantUnknown: []string{"computeUnits", "driverVersion", "driverVersionFull", "numaNode", "pciBusID", "pcieRoot", "simdUnits"},
		},
		"partitioned GPUs are not forecast": {
			labels:          mi300xLabels("amd.com/gpu.compute-memory-partition", "cpx_nps4"),
			wantNotForecast: "the driver publishes as devices of type amdgpu-partition",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := gpuNode("mi300x", tc.labels, map[corev1.ResourceName]int64{"amd.com/gpu": 8})
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
			if drv.NotForecast != "" || drv.Devices != 8 || len(res.After.Slices) != 1 {
				t.Fatalf("%+v, %d slices: want 8 devices in one slice", drv, len(res.After.Slices))
			}
			s := res.After.Slices[0]
			for _, d := range s.Spec.Devices {
				if diff := cmp.Diff(tc.wantAttrs, d.Attributes); diff != "" {
					t.Fatalf("%s attributes (-want,+got):\n%s", d.Name, diff)
				}
				if q := d.Capacity["memory"]; q.Value.String() != "192Gi" || len(d.Capacity) != 1 {
					t.Errorf("%s capacity %v, want memory 192Gi only", d.Name, d.Capacity)
				}
			}
			if diff := cmp.Diff(tc.wantUnknown, drv.Unknown); diff != "" {
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
