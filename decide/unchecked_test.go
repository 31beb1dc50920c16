package decide_test

import (
	"testing"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// TestOfflineWithoutAFleetNeverWidens (issue 27, item 2): a label no device
// attribute expresses (nvidia.com/gpu.count, mig.strategy mixed) narrows
// where the pod as submitted lands; without a fleet nothing can check the
// translation that drops it, so the pod stays as submitted
// (NodeLabelUnchecked) — unless the policy keeps translated labels on the
// pod or turns the placement check off. Labels a device attribute
// expresses are translated as before.
func TestOfflineWithoutAFleetNeverWidens(t *testing.T) {
	keep, err := translate.NewPolicy(&v1alpha1.TranslationPolicy{
		APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
		Spec: v1alpha1.PolicySpec{Profiles: v1alpha1.DefaultProfileNames(), KeepTranslatedNodeLabels: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		selector     map[string]string
		policy       *translate.Policy
		wantOutcome  reason.Outcome
		wantDecisive reason.Code
		wantField    string
	}{
		"a GPU count keeps the pod as submitted": {
			selector: map[string]string{"nvidia.com/gpu.count": "8"}, policy: policyWith(t, ""),
			wantOutcome: reason.OutcomeKeepLegacy, wantDecisive: decide.ReasonNodeLabelUnchecked, wantField: "spec.nodeSelector[nvidia.com/gpu.count]",
		},
		"so does the MIG strategy mixed": {
			selector: map[string]string{"nvidia.com/mig.strategy": "mixed"}, policy: policyWith(t, ""),
			wantOutcome: reason.OutcomeKeepLegacy, wantDecisive: decide.ReasonNodeLabelUnchecked, wantField: "spec.nodeSelector[nvidia.com/mig.strategy]",
		},
		"under Subset too: dropping a label can only gain nodes": {
			selector: map[string]string{"nvidia.com/gpu.count": "8"}, policy: policyWith(t, v1alpha1.PlacementSubset),
			wantOutcome: reason.OutcomeKeepLegacy, wantDecisive: decide.ReasonNodeLabelUnchecked, wantField: "spec.nodeSelector[nvidia.com/gpu.count]",
		},
		"with the placement check Off it is translated": {
			selector: map[string]string{"nvidia.com/gpu.count": "8"}, policy: policyWith(t, v1alpha1.PlacementOff),
			wantOutcome: reason.OutcomeTranslate, wantDecisive: translate.ReasonTranslated,
		},
		"with keepTranslatedNodeLabels the label stays on the pod, which is translated": {
			selector: map[string]string{"nvidia.com/gpu.count": "8"}, policy: keep,
			wantOutcome: reason.OutcomeTranslate, wantDecisive: translate.ReasonTranslated,
		},
		"a label a device attribute expresses is translated": {
			selector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.present": "true"}, policy: policyWith(t, ""),
			wantOutcome: reason.OutcomeTranslate, wantDecisive: translate.ReasonTranslated,
		},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: gpuPod(1, tc.selector), Policy: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.wantOutcome || d.Decisive.Code != tc.wantDecisive || d.Decisive.Field != tc.wantField {
				t.Errorf("outcome %s (%s at %q: %s), want %s (%s at %q)", d.Outcome, d.Decisive.Code, d.Decisive.Field, d.Decisive.Message, tc.wantOutcome, tc.wantDecisive, tc.wantField)
			}
			if tc.wantOutcome == reason.OutcomeTranslate {
				if got := d.Translation.Pod.Spec.NodeSelector["nvidia.com/gpu.count"]; tc.policy == keep && got != "8" {
					t.Errorf("keepTranslatedNodeLabels: the translated pod's gpu.count is %q, want 8", got)
				}
			}
		})
	}
}
