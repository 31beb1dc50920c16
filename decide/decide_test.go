package decide_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

func gpuPod(n int64, selector map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}},
		}}},
	}
}

func policyWith(t *testing.T, rule v1alpha1.PlacementRule) *translate.Policy {
	t.Helper()
	p, err := translate.NewPolicy(&v1alpha1.TranslationPolicy{
		APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
		Spec: v1alpha1.PolicySpec{Profiles: v1alpha1.DefaultProfileNames(), Placement: rule},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestThePlacementCheckIsWhatKeepsAWiderTranslationLegacy: a pod that asks
// for one GPU on nodes labelled with 8 GPUs would, translated, also land on
// 1-GPU nodes. The check keeps it legacy; without the check it is
// translated. The test fails if the check is removed from the decision path.
func TestThePlacementCheckIsWhatKeepsAWiderTranslationLegacy(t *testing.T) {
	inv, snap := gpusFleet(t)
	pod := gpuPod(1, map[string]string{"nvidia.com/gpu.count": "8"})
	for name, tc := range map[string]struct {
		rule         v1alpha1.PlacementRule
		wantOutcome  reason.Outcome
		wantDecisive reason.Code
	}{
		"the default rule (Exact) keeps the pod as submitted": {rule: "", wantOutcome: reason.OutcomeKeepLegacy, wantDecisive: decide.ReasonPlacementDiffers},
		"Subset keeps it too: the translation gains nodes":    {rule: v1alpha1.PlacementSubset, wantOutcome: reason.OutcomeKeepLegacy, wantDecisive: decide.ReasonPlacementDiffers},
		"with the check Off it is translated":                 {rule: v1alpha1.PlacementOff, wantOutcome: reason.OutcomeTranslate, wantDecisive: decide.ReasonFeasible},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: pod, Policy: policyWith(t, tc.rule), Classes: inv.Classes,
				Checker: feasibility.NewChecker(feasibility.Options{}), Snapshot: snap})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.wantOutcome || d.Decisive.Code != tc.wantDecisive {
				t.Errorf("outcome %s (%s: %s), want %s (%s)", d.Outcome, d.Decisive.Code, d.Decisive.Message, tc.wantOutcome, tc.wantDecisive)
			}
			if tc.rule != v1alpha1.PlacementOff {
				if d.Placement == nil || d.Placement.Equal() || len(d.Placement.Gained) == 0 {
					t.Fatalf("placement %+v, want gained nodes", d.Placement)
				}
				if d.Verdict != nil {
					t.Errorf("the verdict ran for a pod the placement check keeps legacy")
				}
			}
		})
	}
}

// TestWithoutAFleetOnlyTranslationDecides: no checker, no placement check
// and no verdict (claimbridge translate without --fleet).
func TestWithoutAFleetOnlyTranslationDecides(t *testing.T) {
	d, err := decide.Pod(t.Context(), decide.Input{Pod: gpuPod(1, nil), Policy: translate.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != reason.OutcomeTranslate || d.Placement != nil || d.Verdict != nil {
		t.Errorf("outcome %s, placement %v, verdict %v; want Translate without checks", d.Outcome, d.Placement, d.Verdict)
	}
}

// TestAnInventoryNotSyncedKeepsThePodLegacy: a checker without a snapshot.
func TestAnInventoryNotSyncedKeepsThePodLegacy(t *testing.T) {
	d, err := decide.Pod(t.Context(), decide.Input{Pod: gpuPod(1, nil), Policy: translate.DefaultPolicy(), Checker: feasibility.NewChecker(feasibility.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != reason.OutcomeKeepLegacy || d.Verdict == nil || d.Verdict.Code != feasibility.ReasonInventoryNotSynced {
		t.Errorf("outcome %s, verdict %+v; want KeepLegacy with InventoryNotSynced", d.Outcome, d.Verdict)
	}
}

// gpusFleet is the placement corpus's gpus fleet and its snapshot.
func gpusFleet(t *testing.T) (*feasibility.Inventory, *feasibility.Snapshot) {
	t.Helper()
	inv, err := feasibility.LoadInventory("../feasibility/testdata/placement/fleets/gpus")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := feasibility.NewSnapshot(inv, 1, feasibility.DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	return inv, snap
}
