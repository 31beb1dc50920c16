package translate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// device is a test device of the NVIDIA DRA driver.
type device struct {
	driver string
	attrs  map[string]any // string, int64, bool, or version as "v:1.2.3"
	caps   map[string]string
}

func (d device) input() dracel.Device {
	in := dracel.Device{Driver: d.driver, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}, Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}}
	for k, v := range d.attrs {
		var a resourceapi.DeviceAttribute
		switch x := v.(type) {
		case string:
			if ver, ok := strings.CutPrefix(x, "v:"); ok {
				a.VersionValue = &ver
			} else {
				a.StringValue = &x
			}
		case int:
			n := int64(x)
			a.IntValue = &n
		case bool:
			a.BoolValue = &x
		}
		in.Attributes[resourceapi.QualifiedName(k)] = a
	}
	for k, v := range d.caps {
		in.Capacity[resourceapi.QualifiedName(k)] = resourceapi.DeviceCapacity{Value: resource.MustParse(v)}
	}
	return in
}

// matches evaluates a generated selector the way the allocator does.
func matches(t *testing.T, expr string, d device) bool {
	t.Helper()
	if err := celgen.CheckSelector(expr); err != nil {
		t.Fatal(err)
	}
	res := dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: true}).CompileCELExpression(expr, dracel.Options{})
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	ok, _, err := res.DeviceMatches(t.Context(), d.input())
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return ok
}

func gpu(product, cc string, memory string) device {
	return device{driver: "gpu.nvidia.com",
		attrs: map[string]any{"type": "gpu", "productName": product, "cudaComputeCapability": "v:" + cc, "driverVersion": "v:580.65.6", "cudaDriverVersion": "v:13.0.0"},
		caps:  map[string]string{"memory": memory}}
}

// H100 80GB HBM3: NVML reports 85520809984 bytes total, which GFD labels
// as 81559 (MiB, rounded down).
var (
	h100 = gpu("NVIDIA H100 80GB HBM3", "9.0.0", "85520809984")
	a100 = gpu("NVIDIA A100-SXM4-80GB", "8.0.0", "85899345920")
	a10  = gpu("NVIDIA A10", "8.6.0", "24146608128")
	l4   = gpu("NVIDIA L4", "8.9.0", "24152899584")
	bare = device{driver: "gpu.nvidia.com", attrs: map[string]any{"type": "gpu"}}
)

// selectorsFor translates one pod with a GPU and the given label
// requirements and returns the selectors of its single request.
func selectorsFor(t *testing.T, p *Policy, reqs ...corev1.NodeSelectorRequirement) []string {
	t.Helper()
	pod := builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "1").RequiredTerm(reqs...).Obj()
	res, err := Pod(Input{Pod: pod, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != reason.OutcomeTranslate {
		t.Fatalf("outcome %s: %v", res.Outcome, res.Reasons)
	}
	r := res.Template.Spec.Spec.Devices.Requests[0]
	if r.Exactly == nil {
		t.Fatalf("want one alternative, got %d", len(r.FirstAvailable))
	}
	var out []string
	for _, s := range r.Exactly.Selectors {
		out = append(out, s.CEL.Expression)
	}
	return out
}

func TestLabelConversionsSelectTheRightDevices(t *testing.T) {
	legacy, err := NewPolicy(&v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind, Spec: v1alpha1.PolicySpec{Profiles: []string{"nvidia"}, GFDFamilyScheme: v1alpha1.GFDFamilyLegacy}})
	if err != nil {
		t.Fatal(err)
	}
	req := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	cases := map[string]struct {
		policy    *Policy
		req       corev1.NodeSelectorRequirement
		wantMatch []device
		wantNot   []device
	}{
		"product label in GFD form matches the NVML name with spaces": {
			req: req("nvidia.com/gpu.product", corev1.NodeSelectorOpIn, "NVIDIA-H100-80GB-HBM3"), wantMatch: []device{h100}, wantNot: []device{a100, bare},
		},
		"product label keeps dashes that are part of the NVML name": {
			req: req("nvidia.com/gpu.product", corev1.NodeSelectorOpIn, "NVIDIA-A100-SXM4-80GB"), wantMatch: []device{a100}, wantNot: []device{h100},
		},
		"product NotIn also admits devices without a product, like nodes without the label": {
			req: req("nvidia.com/gpu.product", corev1.NodeSelectorOpNotIn, "NVIDIA-L4"), wantMatch: []device{h100, bare}, wantNot: []device{l4},
		},
		"memory label in MiB matches the exact byte capacity it was rounded from": {
			req: req("nvidia.com/gpu.memory", corev1.NodeSelectorOpIn, "81559"), wantMatch: []device{h100}, wantNot: []device{a100, l4, bare},
		},
		"memory Gt is strict in whole MiB": {
			req: req("nvidia.com/gpu.memory", corev1.NodeSelectorOpGt, "81559"), wantMatch: []device{a100}, wantNot: []device{h100, l4},
		},
		"memory Lt is strict in whole MiB": {
			req: req("nvidia.com/gpu.memory", corev1.NodeSelectorOpLt, "81559"), wantMatch: []device{l4, a10}, wantNot: []device{h100, a100, bare},
		},
		"ampere under the current GFD excludes compute capability 8.9": {
			req: req("nvidia.com/gpu.family", corev1.NodeSelectorOpIn, "ampere"), wantMatch: []device{a100, a10}, wantNot: []device{l4, h100, bare},
		},
		"ada-lovelace is compute capability 8.9": {
			req: req("nvidia.com/gpu.family", corev1.NodeSelectorOpIn, "ada-lovelace"), wantMatch: []device{l4}, wantNot: []device{a100, h100},
		},
		"ampere under the legacy GFD includes compute capability 8.9": {
			policy: legacy, req: req("nvidia.com/gpu.family", corev1.NodeSelectorOpIn, "ampere"), wantMatch: []device{a100, a10, l4}, wantNot: []device{h100},
		},
		"compute major compares the major part": {
			req: req("nvidia.com/gpu.compute.major", corev1.NodeSelectorOpGt, "8"), wantMatch: []device{h100}, wantNot: []device{a100, l4, bare},
		},
		"compute minor compares the minor part": {
			req: req("nvidia.com/gpu.compute.minor", corev1.NodeSelectorOpIn, "6", "9"), wantMatch: []device{a10, l4}, wantNot: []device{a100, h100},
		},
		"driver version with a leading zero matches the normalised version": {
			req: req("nvidia.com/cuda.driver-version.full", corev1.NodeSelectorOpIn, "580.65.06"), wantMatch: []device{h100}, wantNot: []device{bare},
		},
		"runtime version major": {
			req: req("nvidia.com/cuda.runtime-version.major", corev1.NodeSelectorOpIn, "12"), wantNot: []device{h100, bare},
		},
		"GKE accelerator name maps to the NVML product": {
			req: req("cloud.google.com/gke-accelerator", corev1.NodeSelectorOpIn, "nvidia-l4"), wantMatch: []device{l4}, wantNot: []device{h100},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := tc.policy
			if p == nil {
				p = DefaultPolicy()
			}
			sels := selectorsFor(t, p, tc.req)
			if len(sels) == 0 {
				t.Fatal("no selector generated")
			}
			all := func(d device) bool {
				for _, s := range sels {
					if !matches(t, s, d) {
						return false
					}
				}
				return true
			}
			for _, d := range tc.wantMatch {
				if !all(d) {
					t.Errorf("%v does not match %s, want a match", d.attrs["productName"], sels)
				}
			}
			for _, d := range tc.wantNot {
				if all(d) {
					t.Errorf("%v matches %s, want no match", d.attrs["productName"], sels)
				}
			}
		})
	}
}

func TestLiteralsCannotChangeTheExpression(t *testing.T) {
	values := []string{
		`a" || true || "`,
		`\" || true || \"`,
		"line\nbreak",
		"tab\tand\x00nul",
		`back\slash`,
		"ünïcødé ✓ 𝔘",
		`'single' "double"`,
		`") || device.driver != ("`,
	}
	for _, v := range values {
		lit, err := celgen.Quote(v)
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		expr := `device.attributes["tpu.google.com"].accelerator == ` + lit
		same := device{driver: "tpu.google.com", attrs: map[string]any{"accelerator": v}}
		other := device{driver: "tpu.google.com", attrs: map[string]any{"accelerator": "x"}}
		if !matches(t, expr, same) {
			t.Errorf("%q: the literal does not equal the value it quotes", v)
		}
		if matches(t, expr, other) {
			t.Errorf("%q: the literal matched another value: the expression was changed", v)
		}
	}
	if _, err := celgen.Quote("\xff"); err == nil {
		t.Error("invalid UTF-8 was accepted")
	}
}

func TestMissingAttributesAreNotRuntimeErrors(t *testing.T) {
	// A selector on an attribute a device lacks must evaluate to false (or
	// true for negations), never fail: a CEL runtime error aborts the whole
	// allocation in the scheduler.
	pod := builders.MakePod("p", "ns").Container("c").Limit("google.com/tpu", "4").
		NodeSelector("cloud.google.com/gke-tpu-topology", "2x4").
		NodeSelector("cloud.google.com/gke-accelerator-count", "8").Obj()
	res, err := Pod(Input{Pod: pod, Policy: DefaultPolicy()})
	if err != nil || res.Outcome != reason.OutcomeTranslate {
		t.Fatalf("outcome %v, err %v", res.Outcome, err)
	}
	noTopology := device{driver: "tpu.google.com", attrs: map[string]any{"tpuGen": "v5lite"}}
	for _, s := range res.Template.Spec.Spec.Devices.Requests[0].Exactly.Selectors {
		if matches(t, s.CEL.Expression, noTopology) {
			t.Errorf("%s matched a device without the attribute", s.CEL.Expression)
		}
	}
}
