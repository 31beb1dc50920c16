package feasibility

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// hamiPolicy is the nvidia profile with HAMi's DRA driver on top.
func hamiPolicy(t *testing.T) *translate.Policy {
	t.Helper()
	p, err := translate.ProfilePolicy("nvidia", "hami")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// hamiPod asks for gpus GPUs of mem MiB each (and cores percent, when not empty) the HAMi way.
func hamiPod(name string, gpus int, mem, cores string) *corev1.Pod {
	b := builders.MakePod(name, "ml").Container("app").Limit("nvidia.com/gpu", fmt.Sprint(gpus))
	if mem != "" {
		b = b.Limit("nvidia.com/gpumem", mem)
	}
	if cores != "" {
		b = b.Limit("nvidia.com/gpucores", cores)
	}
	return b.Obj()
}

// hamiShares are running claims, each holding a share of one HAMi GPU.
func hamiShares(node, device string, mem ...string) []*resourceapi.ResourceClaim {
	var out []*resourceapi.ResourceClaim
	for i, m := range mem {
		share := types.UID(fmt.Sprintf("share-%s-%d", device, i))
		out = append(out, &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "busy", Name: fmt.Sprintf("share-%s-%s-%d", node, device, i)},
			Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
				Results: []resourceapi.DeviceRequestAllocationResult{{
					Request: "app-gpu", Driver: fleetgen.DriverHAMi, Pool: node, Device: device, ShareID: &share,
					ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(m), "cores": resource.MustParse("0")},
				}},
			}}},
		})
	}
	return out
}

// TestHAMiCapacitiesAreAllocatedByTheUpstreamAllocator translates HAMi pods with the hami
// profile and asks the allocator (with the 1.37 default gates, so consumable capacity) where
// the fleet of HAMi T4 GPUs (15360 MiB, 100 cores, multiple allocations) serves them.
func TestHAMiCapacitiesAreAllocatedByTheUpstreamAllocator(t *testing.T) {
	cases := map[string]struct {
		pod        *corev1.Pod
		busy       []*resourceapi.ResourceClaim
		wantKind   VerdictKind
		wantNode   string
		wantDevice []string
	}{
		"a 4000 MiB share of one GPU fits the first node": {
			pod: hamiPod("p", 1, "4000", ""), wantKind: FitsNow, wantNode: "hami-t4-0", wantDevice: []string{"hami-gpu-0"},
		},
		"two GPUs with 4000 MiB each need two devices: only the two-GPU node": {
			pod: hamiPod("p", 2, "4000", "30"), wantKind: FitsNow, wantNode: "hami-t4-1", wantDevice: []string{"hami-gpu-0", "hami-gpu-1"},
		},
		"more memory than a T4 has never fits": {
			pod: hamiPod("p", 1, "16000", ""), wantKind: NeverFits,
		},
		"the GPU shares its memory: beside 3×4000 MiB a 3000 MiB share still fits": {
			pod: hamiPod("p", 1, "3000", ""), busy: hamiShares("hami-t4-0", "hami-gpu-0", "4000Mi", "4000Mi", "4000Mi"),
			wantKind: FitsNow, wantNode: "hami-t4-0", wantDevice: []string{"hami-gpu-0"},
		},
		"beside 3×4000 MiB a 4000 MiB share goes to the next node": {
			pod: hamiPod("p", 1, "4000", ""), busy: hamiShares("hami-t4-0", "hami-gpu-0", "4000Mi", "4000Mi", "4000Mi"),
			wantKind: FitsNow, wantNode: "hami-t4-1", wantDevice: []string{"hami-gpu-0"},
		},
		"30% of the cores beside shares that left 100% of the cores": {
			pod: hamiPod("p", 1, "1000", "30"), busy: hamiShares("hami-t4-0", "hami-gpu-0", "4000Mi"),
			wantKind: FitsNow, wantNode: "hami-t4-0", wantDevice: []string{"hami-gpu-0"},
		},
		"a whole GPU (no gpumem or gpucores) does not fit a GPU others share": {
			pod: hamiPod("p", 1, "", ""), busy: append(hamiShares("hami-t4-0", "hami-gpu-0", "1000Mi"), hamiShares("hami-t4-1", "hami-gpu-0", "1000Mi")...),
			wantKind: FitsNow, wantNode: "hami-t4-1", wantDevice: []string{"hami-gpu-1"},
		},
	}
	policy := hamiPolicy(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// No DeviceClasses given to translation: a whole-GPU pod is translated
			// too (with HAMi's class in view it is left to KEP-5004).
			res, err := translate.Pod(translate.Input{Pod: tc.pod, Policy: policy})
			if err != nil || res.Outcome != reason.OutcomeTranslate {
				t.Fatalf("translate: %v %v %v", res.Outcome, err, res.Reasons)
			}
			inv := inventoryOf(t, "hami-t4")
			inv.Claims = tc.busy
			snap, err := NewSnapshot(inv, 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			v := NewChecker(Options{}).Check(t.Context(), snap, res.Pod, []*resourceapi.ResourceClaimSpec{&res.Template.Spec.Spec})
			if v.Kind != tc.wantKind || v.Node != tc.wantNode {
				t.Fatalf("verdict %s on %q, want %s on %q (reasons %q)", v.Kind, v.Node, tc.wantKind, tc.wantNode, v.Reasons)
			}
			var got []string
			for _, r := range v.Results {
				got = append(got, r.Device)
				if r.ShareID == nil {
					t.Errorf("result %s is not a share (no ShareID): the device must allow multiple allocations", r.Device)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantDevice) {
				t.Errorf("devices %v, want %v", got, tc.wantDevice)
			}
		})
	}
}

// TestHAMiPlacementIsProven: the legacy view of a HAMi node offers gpumem and gpucores
// wherever it has HAMi GPUs (HAMi's scheduler extender, not kube-scheduler's resource fit,
// counts them), so a share that some GPU can hold lands on the same nodes either way; one that
// no GPU can hold is kept legacy.
func TestHAMiPlacementIsProven(t *testing.T) {
	snap, err := NewSnapshot(inventoryOf(t, "hami-t4"), 1, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	policy := hamiPolicy(t)
	for name, tc := range map[string]struct {
		pod       *corev1.Pod
		wantEqual bool
	}{
		"4000 MiB on one GPU":       {pod: hamiPod("p", 1, "4000", "25"), wantEqual: true},
		"two GPUs":                  {pod: hamiPod("p", 2, "4000", ""), wantEqual: true},
		"more memory than a T4 has": {pod: hamiPod("p", 1, "16000", ""), wantEqual: false},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := translate.Pod(translate.Input{Pod: tc.pod, Policy: policy})
			if err != nil || res.Outcome != reason.OutcomeTranslate {
				t.Fatalf("translate: %v %v", res.Outcome, err)
			}
			pl := NewChecker(Options{}).Placement(t.Context(), snap, PlacementInput{
				Policy: policy, Legacy: tc.pod, Translated: res.Pod, Claims: []*resourceapi.ResourceClaimSpec{&res.Template.Spec.Spec},
			})
			if pl.Equal() != tc.wantEqual {
				t.Errorf("placement equal = %v, want %v: %+v", pl.Equal(), tc.wantEqual, pl)
			}
		})
	}
}
