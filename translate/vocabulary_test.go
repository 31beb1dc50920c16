package translate

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/translate/gpulabels"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// TestEveryConversionHasBothDirections: a conversion a policy may name has
// its forward, backward, canonical and device functions, and the table holds no
// conversion a policy cannot name.
func TestEveryConversionHasBothDirections(t *testing.T) {
	for _, c := range v1alpha1.Conversions() {
		v, ok := vocabulary[c]
		if !ok {
			t.Errorf("conversion %s has no entry in the vocabulary table", c)
			continue
		}
		if v.forward == nil || v.backward == nil || v.canonical == nil || v.device == nil {
			t.Errorf("conversion %s lacks a direction: forward %v, backward %v, canonical %v, device %v", c, v.forward != nil, v.backward != nil, v.canonical != nil, v.device != nil)
		}
	}
	for c := range vocabulary {
		if !slices.Contains(v1alpha1.Conversions(), c) {
			t.Errorf("the vocabulary table has %s, which policies cannot name", c)
		}
	}
}

// TestForecastDevices: the device direction reads a node's labels as the
// attributes and capacities of each device of a family, leaves out what the
// labels do not tell or contradict (with a note), and never guesses.
func TestForecastDevices(t *testing.T) {
	gke := map[string]string{"cloud.google.com/gke-nodepool": "pool"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := maps.Clone(base)
		if out == nil {
			out = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }
	ver := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{VersionValue: &s} }
	num := func(n int64) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{IntValue: &n} }
	type attrs = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	legacy, err := NewPolicy(&v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
		Spec: v1alpha1.PolicySpec{Profiles: []string{"nvidia"}, GFDFamilyScheme: v1alpha1.GFDFamilyLegacy}})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		policy       *Policy
		family       string
		labels       map[string]string
		wantAttrs    attrs
		wantCapacity map[resourceapi.QualifiedName]string
		wantProfile  string
		wantNotes    []string // substrings, one per note
	}{
		"version components join, missing ones without a rule are 0": {
			family: "nvidia-gpu",
			labels: map[string]string{"nvidia.com/cuda.driver-version.major": "550", "nvidia.com/cuda.driver-version.minor": "163",
				"nvidia.com/cuda.driver-version.revision": "01", "nvidia.com/cuda.runtime-version.major": "12", "nvidia.com/cuda.runtime-version.minor": "4",
				"nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "6"},
			wantAttrs: attrs{"gpu.nvidia.com/driverVersion": ver("550.163.1"), "gpu.nvidia.com/cudaDriverVersion": ver("12.4.0"),
				"gpu.nvidia.com/cudaComputeCapability": ver("8.6.0"), "gpu.nvidia.com/architecture": str("Ampere")},
		},
		"a version without its revision label is left out": {
			family:    "nvidia-gpu",
			labels:    map[string]string{"nvidia.com/cuda.driver-version.major": "550", "nvidia.com/cuda.driver-version.minor": "163"},
			wantAttrs: attrs{},
			wantNotes: []string{"driverVersion: no label gives its patch component"},
		},
		"a full version and its deprecated components that disagree leave it out": {
			family: "nvidia-gpu",
			labels: map[string]string{"nvidia.com/cuda.driver-version.full": "550.163.01", "nvidia.com/cuda.driver.major": "550",
				"nvidia.com/cuda.driver.minor": "100", "nvidia.com/cuda.driver.rev": "01"},
			wantAttrs: attrs{},
			wantNotes: []string{"driverVersion: the labels disagree"},
		},
		"two spellings of a component that disagree leave the version out": {
			family: "nvidia-gpu",
			labels: map[string]string{"nvidia.com/cuda.driver-version.major": "550", "nvidia.com/cuda.driver.major": "535",
				"nvidia.com/cuda.driver-version.minor": "163", "nvidia.com/cuda.driver-version.revision": "01"},
			wantAttrs: attrs{},
			wantNotes: []string{"driverVersion: the labels disagree (nvidia.com/cuda.driver-version.major=550; nvidia.com/cuda.driver.major=535)"},
		},
		"a family that contradicts the compute capability leaves the architecture out": {
			family:    "nvidia-gpu",
			labels:    map[string]string{"nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0"},
			wantAttrs: attrs{"gpu.nvidia.com/cudaComputeCapability": ver("9.0.0")},
			wantNotes: []string{`architecture: the labels disagree (nvidia.com/gpu.family=ampere says "Ampere"; compute capability 9.0.0 says "Hopper")`},
		},
		"the Legacy scheme's ampere is settled by the compute capability": {
			policy:    legacy,
			family:    "nvidia-gpu",
			labels:    map[string]string{"nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "9"},
			wantAttrs: attrs{"gpu.nvidia.com/cudaComputeCapability": ver("8.9.0"), "gpu.nvidia.com/architecture": str("Ada Lovelace")},
		},
		"the Legacy scheme's ampere alone does not tell the architecture": {
			policy:    legacy,
			family:    "nvidia-gpu",
			labels:    map[string]string{"nvidia.com/gpu.family": "ampere"},
			wantAttrs: attrs{},
			wantNotes: []string{`architecture: nvidia.com/gpu.family=ampere allow "Ada Lovelace" or "Ampere"; left out`},
		},
		"a product known exactly is written as NVML spells it": {
			family:       "nvidia-gpu",
			labels:       map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81920"},
			wantAttrs:    attrs{"gpu.nvidia.com/productName": str("NVIDIA H100 80GB HBM3")},
			wantCapacity: map[resourceapi.QualifiedName]string{"gpu.nvidia.com/memory": "80Gi"},
		},
		"an unknown product is written as the label spells it, with a note": {
			family:    "nvidia-gpu",
			labels:    map[string]string{"nvidia.com/gpu.product": "NVIDIA-RTX-PRO-6000-Blackwell-SHARED"},
			wantAttrs: attrs{"gpu.nvidia.com/productName": str("NVIDIA-RTX-PRO-6000-Blackwell")},
			wantNotes: []string{"productName: nvidia.com/gpu.product=NVIDIA-RTX-PRO-6000-Blackwell-SHARED cannot tell which of its dashes were spaces"},
		},
		"GKE's accelerator name settles GFD's spelling of the product": {
			family:    "nvidia-gpu",
			labels:    with(gke, "cloud.google.com/gke-accelerator", "nvidia-l4", "nvidia.com/gpu.product", "NVIDIA-L4"),
			wantAttrs: attrs{"gpu.nvidia.com/productName": str("NVIDIA L4")},
		},
		"GKE's labels count only on GKE nodes": {
			family:    "nvidia-gpu",
			labels:    map[string]string{"cloud.google.com/gke-accelerator": "nvidia-l4"},
			wantAttrs: attrs{},
		},
		"a GKE accelerator the policy does not map is left out": {
			family:    "nvidia-gpu",
			labels:    with(gke, "cloud.google.com/gke-accelerator", "nvidia-rtx-pro-6000"),
			wantAttrs: attrs{},
			wantNotes: []string{`cloud.google.com/gke-accelerator=nvidia-rtx-pro-6000: the policy maps no value for "nvidia-rtx-pro-6000"; left out`},
		},
		"the single strategy's product names the parent and the MIG profile": {
			family:      "nvidia-mig",
			labels:      map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", "nvidia.com/mig.strategy": "single"},
			wantAttrs:   attrs{"gpu.nvidia.com/productName": str("NVIDIA A100-SXM4-80GB")},
			wantProfile: "1g.10gb",
		},
		"GKE's partition size is the MIG profile": {
			family:      "nvidia-mig",
			labels:      with(gke, "cloud.google.com/gke-gpu-partition-size", "1g.5gb", "cloud.google.com/gke-accelerator", "nvidia-tesla-a100"),
			wantAttrs:   attrs{"gpu.nvidia.com/productName": str("NVIDIA A100-SXM4-40GB")},
			wantProfile: "1g.5gb",
		},
		"TPU labels are the TPU driver's attributes": {
			family: "google-tpu",
			labels: with(gke, "cloud.google.com/gke-tpu-accelerator", "tpu-v5-lite-podslice", "cloud.google.com/gke-tpu-topology", "2x4",
				"cloud.google.com/gke-accelerator-count", "8"),
			wantAttrs: attrs{"tpu.google.com/accelerator": str("tpu-v5-lite-podslice"), "tpu.google.com/topology": str("2x4"), "tpu.google.com/chipCount": num(8)},
		},
		"a label that cannot be read is left out": {
			family:    "google-tpu",
			labels:    map[string]string{"tpu.google.com/chip-count": "eight"},
			wantAttrs: attrs{},
			wantNotes: []string{`tpu.google.com/chip-count=eight: "eight" is not an integer; left out`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := tc.policy
			if p == nil {
				p = DefaultPolicy()
			}
			got := p.ForecastDevices(tc.family, tc.labels)
			if diff := cmp.Diff(tc.wantAttrs, got.Attributes); diff != "" {
				t.Errorf("attributes (-want,+got):\n%s", diff)
			}
			gotCap := map[resourceapi.QualifiedName]string{}
			for k, q := range got.Capacity {
				gotCap[k] = q.String()
			}
			if tc.wantCapacity == nil {
				tc.wantCapacity = map[resourceapi.QualifiedName]string{}
			}
			if diff := cmp.Diff(tc.wantCapacity, gotCap); diff != "" {
				t.Errorf("capacity (-want,+got):\n%s", diff)
			}
			if got.MIGProfile != tc.wantProfile {
				t.Errorf("MIG profile %q, want %q", got.MIGProfile, tc.wantProfile)
			}
			if len(got.Notes) != len(tc.wantNotes) {
				t.Fatalf("notes %q, want %d like %q", got.Notes, len(tc.wantNotes), tc.wantNotes)
			}
			for i, n := range tc.wantNotes {
				if !strings.Contains(got.Notes[i], n) {
					t.Errorf("note %q does not say %q", got.Notes[i], n)
				}
			}
		})
	}
}

// TestMIGProfileOfGFD: the device plugin writes go-nvlib's "+" as "." in
// resource names and labels.
func TestMIGProfileOfGFD(t *testing.T) {
	for in, want := range map[string]string{"1g.5gb": "1g.5gb", "1g.5gb.me": "1g.5gb+me", "1g.10gb.me.all": "1g.10gb+me.all",
		"1c.2g.10gb": "1c.2g.10gb", "1g.5gb-me": "1g.5gb-me", "7g.80gb": "7g.80gb"} {
		if got := gpulabels.MIGProfileOfGFD(in); got != want {
			t.Errorf("gpulabels.MIGProfileOfGFD(%q) = %q, want %q", in, got, want)
		}
	}
}
