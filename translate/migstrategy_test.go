package translate

import (
	"fmt"
	"testing"

	"github.com/claimbridge/claimbridge/translate/gpulabels"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
)

// migNode is a node's devices for the legacy view: full A100-80GB GPUs
// (nvidia-gpu) and MIG devices of the given profiles (nvidia-mig), each
// profile on a GPU of its own, n slices each.
func migNode(full int, slices int, profiles ...string) FamilyDevices {
	str := func(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }
	const product = "NVIDIA A100-SXM4-80GB"
	var gpus, migs []LegacyDevice
	for i := range full {
		gpus = append(gpus, LegacyDevice{Name: fmt.Sprintf("gpu-%d", i), Driver: "gpu.nvidia.com", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type": str("gpu"), "productName": str(product)}})
	}
	for g, prof := range profiles {
		for j := range slices {
			migs = append(migs, LegacyDevice{Name: fmt.Sprintf("gpu-%d-mig-%d", full+g, j), Driver: "gpu.nvidia.com", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"type": str("mig"), "productName": str(product), "profile": str(prof), "parentUUID": str(fmt.Sprintf("GPU-%d", full+g))}})
		}
	}
	return func(family string) []LegacyDevice {
		switch family {
		case "nvidia-gpu":
			return gpus
		case "nvidia-mig":
			return migs
		}
		return nil
	}
}

// TestLegacyViewOfMIGStrategy: the backward direction gives what GPU
// Feature Discovery writes for a MIG node under the strategy the node's
// labels name (issue 27, item 16): under single, the slice's product and
// the number of slices on a node whose GPUs are all MIG of one profile, and
// -MIG-INVALID with a count of 0 on any other MIG layout; under mixed (and
// without a strategy), the parent's product and the number of GPUs.
func TestLegacyViewOfMIGStrategy(t *testing.T) {
	p := DefaultPolicy()
	single := map[string]string{"nvidia.com/mig.strategy": "single"}
	mixed := map[string]string{"nvidia.com/mig.strategy": "mixed"}
	oneProfile := migNode(0, 7, "1g.10gb", "1g.10gb")
	cases := map[string]struct {
		labels          map[string]string
		devices         FamilyDevices
		wantProduct     string
		wantCount       string
		wantStrategy    string
		wantStrategies  []string
		noStrategyLabel bool
	}{
		"single, every GPU 7x1g.10gb: the slice's product and the number of slices": {
			labels: single, devices: oneProfile,
			wantProduct: "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", wantCount: "14", wantStrategy: "single", wantStrategies: []string{"single"},
		},
		"single, a +me profile is written as the device plugin spells it": {
			labels: single, devices: migNode(0, 1, "1g.10gb+me"),
			wantProduct: "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb.me", wantCount: "1", wantStrategy: "single", wantStrategies: []string{"single"},
		},
		"single, two profiles: GFD calls the layout invalid": {
			labels: single, devices: migNode(0, 2, "1g.10gb", "3g.40gb"),
			wantProduct: "NVIDIA-A100-SXM4-80GB-MIG-INVALID", wantCount: "0", wantStrategy: "single", wantStrategies: []string{"single"},
		},
		"single, MIG next to full GPUs: invalid": {
			labels: single, devices: migNode(6, 7, "1g.10gb"),
			wantProduct: "NVIDIA-A100-SXM4-80GB-MIG-INVALID", wantCount: "0", wantStrategy: "single", wantStrategies: []string{"single"},
		},
		"single, no MIG device: labelled as without MIG": {
			labels: single, devices: migNode(8, 0),
			wantProduct: "NVIDIA-A100-SXM4-80GB", wantCount: "8", wantStrategy: "single", wantStrategies: []string{"single"},
		},
		"mixed, every GPU 7x1g.10gb: the parent's product and the number of GPUs": {
			labels: mixed, devices: oneProfile,
			wantProduct: "NVIDIA-A100-SXM4-80GB", wantCount: "2", wantStrategy: "mixed", wantStrategies: []string{"mixed"},
		},
		"no strategy label, one profile: read as mixed, and either strategy may have run": {
			labels: nil, devices: oneProfile,
			wantProduct: "NVIDIA-A100-SXM4-80GB", wantCount: "2", wantStrategy: "mixed", wantStrategies: []string{"single", "mixed"},
		},
		"no strategy label, two profiles: mixed only": {
			labels: nil, devices: migNode(0, 2, "1g.10gb", "3g.40gb"),
			wantProduct: "NVIDIA-A100-SXM4-80GB", wantCount: "2", wantStrategy: "mixed", wantStrategies: []string{"mixed"},
		},
		"no strategy label, no MIG: no strategy": {
			labels: nil, devices: migNode(8, 0),
			wantProduct: "NVIDIA-A100-SXM4-80GB", wantCount: "8", noStrategyLabel: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := map[string]string{}
			for _, k := range []string{"nvidia.com/gpu.product", "nvidia.com/gpu.count", "nvidia.com/mig.strategy"} {
				if v, ok := p.LegacyLabel(k, tc.labels, tc.devices); ok {
					got[k] = v
				}
			}
			want := map[string]string{"nvidia.com/gpu.product": tc.wantProduct, "nvidia.com/gpu.count": tc.wantCount}
			if !tc.noStrategyLabel {
				want["nvidia.com/mig.strategy"] = tc.wantStrategy
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("labels (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStrategies, p.LegacyMIGStrategies(tc.labels, tc.devices)); diff != "" {
				t.Errorf("strategies (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestGFDProfileOfMIG: the driver's "+" becomes the device plugin's ".",
// and back.
func TestGFDProfileOfMIG(t *testing.T) {
	for _, p := range []string{"1g.5gb", "1g.5gb+me", "1c.3g.20gb", "7g.80gb"} {
		if got := gpulabels.MIGProfileOfGFD(gpulabels.GFDProfileOfMIG(p)); got != p {
			t.Errorf("gpulabels.MIGProfileOfGFD(gpulabels.GFDProfileOfMIG(%q)) = %q", p, got)
		}
	}
}
