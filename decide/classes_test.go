package decide_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/reason"
)

// amdFleet is one node whose AMD DRA driver publishes two GPUs; the fleet
// has no DeviceClass for them.
func amdFleet() *feasibility.Inventory {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mi300-0", Labels: map[string]string{"kubernetes.io/hostname": "mi300-0"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"), corev1.ResourcePods: resource.MustParse("110")}}}
	var devices []resourceapi.Device
	for _, name := range []string{"gpu-0", "gpu-1"} {
		devices = append(devices, resourceapi.Device{Name: name, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type": {StringValue: ptr.To("amdgpu")},
		}})
	}
	slice := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "mi300-0-gpu.amd.com"},
		Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.amd.com", NodeName: ptr.To("mi300-0"),
			Pool: resourceapi.ResourcePool{Name: "mi300-0", Generation: 1, ResourceSliceCount: 1}, Devices: devices}}
	return &feasibility.Inventory{Nodes: []*corev1.Node{node}, Slices: []*resourceapi.ResourceSlice{slice}}
}

var amdClass = &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.amd.com"},
	Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.amd.com"`}}}}}

func amdPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rocm", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/rocm:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"amd.com/gpu": resource.MustParse("1")}}}}}}
}

// TestAFleetWithoutTheDeviceClassNeverFits: a translation to a DeviceClass
// the fleet lacks can never be allocated (the allocator refuses the whole
// claim on every node). It is NeverFits with a reason that names the class
// and says what to install — not PlacementUnknown with the allocator's
// error about an internal claim — whether the placement check runs or not;
// with the class in the fleet the same pod is translated.
func TestAFleetWithoutTheDeviceClassNeverFits(t *testing.T) {
	cases := map[string]struct {
		classes      []*resourceapi.DeviceClass
		rule         v1alpha1.PlacementRule
		wantOutcome  reason.Outcome
		wantVerdict  feasibility.VerdictKind
		wantCode     feasibility.ReasonCode
		wantDecisive string
	}{
		"no class: NeverFits, the class named": {
			wantOutcome: reason.OutcomeKeepLegacy, wantVerdict: feasibility.NeverFits, wantCode: feasibility.ReasonDeviceClassNotFound,
			wantDecisive: "NeverFits (DeviceClassNotFound): the fleet has no DeviceClass gpu.amd.com (request app-gpu): install the DRA driver's DeviceClasses",
		},
		"no class, placement check off: the same verdict from the allocator pass": {
			rule:        v1alpha1.PlacementOff,
			wantOutcome: reason.OutcomeKeepLegacy, wantVerdict: feasibility.NeverFits, wantCode: feasibility.ReasonDeviceClassNotFound,
			wantDecisive: "NeverFits (DeviceClassNotFound): the fleet has no DeviceClass gpu.amd.com (request app-gpu): install the DRA driver's DeviceClasses",
		},
		"the class in the fleet: translated": {
			classes:     []*resourceapi.DeviceClass{amdClass},
			wantOutcome: reason.OutcomeTranslate, wantVerdict: feasibility.FitsNow, wantCode: feasibility.ReasonFits,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inv := amdFleet().WithClasses(tc.classes...)
			snap, err := feasibility.NewSnapshot(inv, 1, feasibility.DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			d, err := decide.Pod(t.Context(), decide.Input{Pod: amdPod(), Policy: policyWith(t, tc.rule), Classes: inv.Classes,
				Checker: feasibility.NewChecker(feasibility.Options{}), Snapshot: snap})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.wantOutcome || d.Verdict == nil || d.Verdict.Kind != tc.wantVerdict || d.Verdict.Code != tc.wantCode {
				t.Fatalf("outcome %s, verdict %+v (decisive %s: %s), want %s %s %s", d.Outcome, d.Verdict, d.Decisive.Code, d.Decisive.Message, tc.wantOutcome, tc.wantVerdict, tc.wantCode)
			}
			if tc.wantDecisive != "" && !strings.HasPrefix(d.Decisive.Message, tc.wantDecisive) {
				t.Errorf("decisive %s: %q, want it to start with %q", d.Decisive.Code, d.Decisive.Message, tc.wantDecisive)
			}
			for _, r := range d.Reasons {
				if r.Code == decide.ReasonPlacementUnknown || strings.Contains(r.Message, "-claim-") || strings.Contains(r.Message, "could not retrieve") {
					t.Errorf("reason %s: %s: the allocator's raw error", r.Code, r.Message)
				}
			}
		})
	}
}
