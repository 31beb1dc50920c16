package forecast

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// TestTranslatedPodsFitTheForecast: pods translated with the default
// profiles are checked by the allocator against the forecast fleet of a
// golden case (as audit --forecast does): what the node offers today fits,
// what it does not have never fits. The golden fleets taint their GPU and
// TPU nodes as GKE does, and the pods tolerate nothing: the policy names the
// profiles, gke and tpu among them, so that it says the cluster runs
// ExtendedResourceToleration and the translations carry its tolerations.
func TestTranslatedPodsFitTheForecast(t *testing.T) {
	cases := map[string]struct {
		fleet     string
		pod       *corev1.Pod
		wantKind  feasibility.VerdictKind
		wantNode  string
		wantClass string
	}{
		"one GPU fits on the A100 node": {
			fleet:    "a100-x8",
			pod:      builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "1").Obj(),
			wantKind: feasibility.FitsNow, wantNode: "a100-0", wantClass: "gpu.nvidia.com",
		},
		"eight A100s by product and memory label fit": {
			fleet: "a100-x8",
			pod: builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "8").
				NodeSelector("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB").NodeSelector("nvidia.com/gpu.memory", "40960").
				NodeSelector("nvidia.com/gpu.family", "ampere").Obj(),
			wantKind: feasibility.FitsNow, wantNode: "a100-0", wantClass: "gpu.nvidia.com",
		},
		"nine GPUs never fit on an 8-GPU node": {
			fleet:    "a100-x8",
			pod:      builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "9").Obj(),
			wantKind: feasibility.NeverFits,
		},
		"a Hopper never fits on the A100 node": {
			fleet:    "a100-x8",
			pod:      builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "1").NodeSelector("nvidia.com/gpu.family", "hopper").Obj(),
			wantKind: feasibility.NeverFits,
		},
		"a MIG 3g.40gb of the mixed strategy fits": {
			fleet:    "mig-mixed",
			pod:      builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/mig-3g.40gb", "2").Obj(),
			wantKind: feasibility.FitsNow, wantNode: "a100-mig-0", wantClass: "mig.nvidia.com",
		},
		"three MIG 3g.40gb do not fit where there are two": {
			fleet:    "mig-mixed",
			pod:      builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/mig-3g.40gb", "3").Obj(),
			wantKind: feasibility.NeverFits,
		},
		"a MIG device of the single strategy fits": {
			fleet: "mig-single",
			pod: builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "1").
				NodeSelector("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb").Obj(),
			wantKind: feasibility.FitsNow, wantNode: "a100-single-0", wantClass: "mig.nvidia.com",
		},
		"a GKE L4 by accelerator label fits": {
			fleet: "gke-l4",
			pod: builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "2").
				NodeSelector("cloud.google.com/gke-accelerator", "nvidia-l4").Obj(),
			wantKind: feasibility.FitsNow, wantNode: "gke-l4-0", wantClass: "gpu.nvidia.com",
		},
		"a TPU v5e slice by accelerator and topology fits": {
			fleet: "gke-tpu-v5e",
			pod: builders.MakePod("p", "ns").Container("c").Limit("google.com/tpu", "8").
				NodeSelector("cloud.google.com/gke-tpu-accelerator", "tpu-v5-lite-podslice").
				NodeSelector("cloud.google.com/gke-tpu-topology", "2x4").Obj(),
			wantKind: feasibility.FitsNow, wantNode: "tpu-v5e-0", wantClass: "tpu.google.com",
		},
		"eight MI300X by the labeller's product name and vram fit": {
			fleet: "amd",
			pod: builders.MakePod("p", "ns").Container("c").Limit("amd.com/gpu", "8").
				NodeSelector("amd.com/gpu.product-name", "AMD_Instinct_MI300X_OAM").NodeSelector("beta.amd.com/gpu.vram", "192G").Obj(),
			wantKind: feasibility.FitsNow, wantNode: "mi300x-0", wantClass: "gpu.amd.com",
		},
		"an MI300X by device ID fits": {
			fleet:    "amd",
			pod:      builders.MakePod("p", "ns").Container("c").Limit("amd.com/gpu", "1").NodeSelector("amd.com/gpu.device-id", "74a1").Obj(),
			wantKind: feasibility.FitsNow, wantNode: "mi300x-0", wantClass: "gpu.amd.com",
		},
		"nine AMD GPUs never fit on an 8-GPU node": {
			fleet:    "amd",
			pod:      builders.MakePod("p", "ns").Container("c").Limit("amd.com/gpu", "9").Obj(),
			wantKind: feasibility.NeverFits,
		},
		"an MI210 never fits on the MI300X node": {
			fleet:    "amd",
			pod:      builders.MakePod("p", "ns").Container("c").Limit("amd.com/gpu", "1").NodeSelector("amd.com/gpu.vram", "64G").Obj(),
			wantKind: feasibility.NeverFits,
		},
		"time-sliced shares become whole GPUs: two fit": {
			fleet:    "time-sliced",
			pod:      builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "2").Obj(),
			wantKind: feasibility.FitsNow, wantNode: "l4-shared-0", wantClass: "gpu.nvidia.com",
		},
		"time-sliced shares become whole GPUs: three do not fit": {
			fleet:    "time-sliced",
			pod:      builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "3").Obj(),
			wantKind: feasibility.NeverFits,
		},
	}
	p, err := translate.ProfilePolicy(v1alpha1.DefaultProfileNames()...)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before, err := feasibility.LoadInventory(filepath.Join("testdata/golden", tc.fleet, "nodes.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Forecast(before, Options{Policy: p})
			if err != nil {
				t.Fatal(err)
			}
			fleet, err := feasibility.NewFleet(res.After, feasibility.Options{})
			if err != nil {
				t.Fatal(err)
			}
			tr, err := translate.Pod(translate.Input{Pod: tc.pod, Policy: p, Classes: res.After.Classes})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Outcome != reason.OutcomeTranslate {
				t.Fatalf("outcome %s, want Translate: %v", tr.Outcome, tr.Reasons)
			}
			if tc.wantClass != "" {
				if got := className(tr.Template.Spec.Spec); got != tc.wantClass {
					t.Errorf("the claim asks for class %q, want %q", got, tc.wantClass)
				}
			}
			v := fleet.Checker.Check(t.Context(), fleet.Snapshot, tr.Pod, []*resourceapi.ResourceClaimSpec{&tr.Template.Spec.Spec})
			if v.Kind != tc.wantKind || v.Node != tc.wantNode {
				t.Errorf("verdict %s on %q, want %s on %q: %v", v.Kind, v.Node, tc.wantKind, tc.wantNode, v.Reasons)
			}
		})
	}
}

// className is the DeviceClass of the claim's first request (its first
// alternative).
func className(spec resourceapi.ResourceClaimSpec) string {
	if len(spec.Devices.Requests) == 0 {
		return ""
	}
	r := spec.Devices.Requests[0]
	if r.Exactly != nil {
		return r.Exactly.DeviceClassName
	}
	if len(r.FirstAvailable) > 0 {
		return r.FirstAvailable[0].DeviceClassName
	}
	return ""
}
