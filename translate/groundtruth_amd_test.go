package translate

import (
	"maps"
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/claimbridge/claimbridge/internal/testing/vendortruth"
	"github.com/claimbridge/claimbridge/reason"
)

// The amd profile against the AMD DRA driver's devices as AMD published
// them (internal/testing/vendortruth: a whole MI300X, a partition of one in
// CPX/NPS1) and the labels AMD's node labeller writes for such GPUs,
// worked out from its code (PROVENANCE.txt).

// amdDriver is the AMD DRA driver's name; amdClass the selector of the
// AMD GPU Operator's DeviceClass gpu.amd.com.
const (
	amdDriver = "gpu.amd.com"
	amdClass  = `device.driver == 'gpu.amd.com'`
)

// unknownAMDLabels are the labeller's labels no rule of the amd profile
// knows: they stay on a pod, and on the nodes, as they are.
var unknownAMDLabels = []string{
	"amd.com/gpu.cu-count", "amd.com/gpu.driver-version", "amd.com/gpu.family", "amd.com/gpu.simd-count",
	"beta.amd.com/gpu.cu-count", "beta.amd.com/gpu.family", "beta.amd.com/gpu.simd-count",
}

func amdTruth(t *testing.T, model string) (map[string]string, []resourceapi.Device) {
	t.Helper()
	labels, err := vendortruth.AMDLabels(model)
	if err != nil {
		t.Fatal(err)
	}
	devs, ok, err := vendortruth.Devices("amd-" + model)
	if err != nil || !ok || len(devs) == 0 {
		t.Fatalf("vendortruth amd-%s: %d devices, %v, %v", model, len(devs), ok, err)
	}
	return labels, devs
}

// amdClaimMatches: the AMD device would serve the claim's only request,
// its class and selectors evaluated with the DRA CEL compiler as the
// allocator does.
func amdClaimMatches(t *testing.T, res *Result, d resourceapi.Device) bool {
	t.Helper()
	reqs := res.Template.Spec.Spec.Devices.Requests
	if len(reqs) != 1 || reqs[0].Exactly == nil {
		t.Fatalf("requests %+v, want one", reqs)
	}
	exprs := []string{amdClass}
	for _, s := range reqs[0].Exactly.Selectors {
		exprs = append(exprs, s.CEL.Expression)
	}
	in := dracel.Device{Driver: amdDriver, Attributes: d.Attributes, Capacity: d.Capacity}
	for _, e := range exprs {
		c := dracel.GetCompiler(dracel.Features{}).CompileCELExpression(e, dracel.Options{})
		if c.Error != nil {
			t.Fatalf("compile %q: %v", e, c.Error)
		}
		ok, _, err := c.DeviceMatches(t.Context(), in)
		if err != nil {
			t.Fatalf("evaluate %q on %s: %v", e, d.Name, err)
		}
		if !ok {
			return false
		}
	}
	return true
}

// TestEveryLabellerLabelSelectsItsModelsDevices: for each AMD model, a pod
// asking for one amd.com/gpu with nodeSelector <label>=<that model's
// value> is translated into a claim that the vendor's devices of each
// model whose labeller writes the same value serve, and no other's: a
// product-name or device-id pod is served by a whole GPU and by a
// partition, a vram or compute-memory-partition pod by the one it names.
func TestEveryLabellerLabelSelectsItsModelsDevices(t *testing.T) {
	p := DefaultPolicy()
	labels := map[string]map[string]string{}
	devices := map[string][]resourceapi.Device{}
	for _, m := range vendortruth.AMDModels {
		labels[m], devices[m] = amdTruth(t, m)
	}
	for _, model := range vendortruth.AMDModels {
		t.Run(model, func(t *testing.T) {
			var selectors, unknown []string
			for _, key := range slices.Sorted(maps.Keys(labels[model])) {
				value := labels[model][key]
				if !p.KnowsLabel(key) {
					unknown = append(unknown, key)
					continue
				}
				res, err := Pod(Input{Pod: gtPod("amd.com/gpu", map[string]string{key: value}), Policy: p})
				if err != nil {
					t.Fatal(err)
				}
				if res.Outcome != reason.OutcomeTranslate || labelEffect(res, key) != ReasonNodeLabelTranslated {
					t.Errorf("%s=%s: %s, %q (%v), want Translate with the label translated", key, value, res.Outcome, labelEffect(res, key), res.Reasons)
					continue
				}
				selectors = append(selectors, key)
				want := p.CanonicalLabelValue(key, value)
				for _, other := range vendortruth.AMDModels {
					for _, d := range devices[other] {
						ov, has := labels[other][key]
						wantMatch := has && p.CanonicalLabelValue(key, ov) == want
						if got := amdClaimMatches(t, res, d); got != wantMatch {
							t.Errorf("%s=%s: %s's %s serves the claim: %v, want %v (its labeller writes %s=%s)", key, value, other, d.Name, got, wantMatch, key, ov)
						}
					}
				}
			}
			if !slices.Equal(unknown, unknownAMDLabels) {
				t.Errorf("labels the vocabulary does not know: %q, want %q", unknown, unknownAMDLabels)
			}
			// product-name, device-id and vram in both prefixes, and
			// compute-memory-partition.
			if len(selectors) != 7 {
				t.Errorf("%d labels became selectors, want 7: %q", len(selectors), selectors)
			}
		})
	}
}

// TestTheLegacyViewGivesTheLabellersLabelsBack: the vocabulary read
// backwards over the vendor's devices of a node (a whole GPU, or a
// partition) gives every label it knows, as the labeller writes it.
func TestTheLegacyViewGivesTheLabellersLabelsBack(t *testing.T) {
	p := DefaultPolicy()
	for _, model := range vendortruth.AMDModels {
		t.Run(model, func(t *testing.T) {
			labels, devs := amdTruth(t, model)
			family := func(f string) []LegacyDevice {
				if f != "amd-gpu" {
					return nil
				}
				var out []LegacyDevice
				for _, d := range devs {
					out = append(out, LegacyDevice{Name: d.Name, Driver: amdDriver, Attributes: d.Attributes, Capacity: d.Capacity})
				}
				return out
			}
			for _, key := range slices.Sorted(maps.Keys(labels)) {
				got, ok := p.LegacyLabel(key, map[string]string{}, family)
				switch {
				case slices.Contains(unknownAMDLabels, key):
					if ok {
						t.Errorf("%s derives as %q, but no rule knows it", key, got)
					}
				case !ok:
					t.Errorf("%s does not derive from the devices (the labeller writes %s)", key, labels[key])
				case got != p.CanonicalLabelValue(key, labels[key]):
					t.Errorf("%s derives as %q, the labeller writes %q", key, got, labels[key])
				}
			}
		})
	}
}
