package decide_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// TestKServeAcceleratorPin: a pod of an InferenceService annotated
// serving.kserve.io/gke-accelerator reaches claimbridge's webhook before
// KServe's, which adds the node selector only to pods with an
// nvidia.com/gpu limit. Its translation carries that node selector itself
// (under the default policy, which also turns it into a device selector,
// and under the nvidia profile alone, which does not know the label);
// a pod KServe does not pin gets none.
func TestKServeAcceleratorPin(t *testing.T) {
	const key = "cloud.google.com/gke-accelerator"
	kserve := func() *builders.PodWrapper {
		return builders.MakePod("tf-predictor-7d9c", "models").Label("serving.kserve.io/inferenceservice", "tf").
			Annotation("serving.kserve.io/gke-accelerator", "nvidia-tesla-t4").Container("kserve-container")
	}
	nvidia, err := translate.ProfilePolicy("nvidia")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		b            *builders.PodWrapper
		policy       *translate.Policy
		wantSelector map[string]string
		wantPinned   bool
	}{
		"a KServe pod with a GPU limit, default policy": {
			b: kserve().Limit("nvidia.com/gpu", "1"), policy: translate.DefaultPolicy(), wantSelector: map[string]string{key: "nvidia-tesla-t4"}, wantPinned: true,
		},
		"a KServe pod with a GPU limit, a policy that does not know the label": {
			b: kserve().Limit("nvidia.com/gpu", "1"), policy: nvidia, wantSelector: map[string]string{key: "nvidia-tesla-t4"}, wantPinned: true,
		},
		"a KServe pod whose own selector the annotation overrides": {
			b: kserve().Limit("nvidia.com/gpu", "1").NodeSelector(key, "nvidia-l4"), policy: nvidia, wantSelector: map[string]string{key: "nvidia-tesla-t4"}, wantPinned: true,
		},
		"a KServe pod that asks for a MIG slice, which KServe does not pin": {
			b: kserve().Limit("nvidia.com/mig-1g.10gb", "1"), policy: translate.DefaultPolicy(),
		},
		"a pod with the annotation and no KServe label": {
			b:      builders.MakePod("p", "models").Annotation("serving.kserve.io/gke-accelerator", "nvidia-tesla-t4").Container("c").Limit("nvidia.com/gpu", "1"),
			policy: translate.DefaultPolicy(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: tc.b.Obj(), Policy: tc.policy, Admitted: true})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != reason.OutcomeTranslate {
				t.Fatalf("%s (%s: %s), want Translate", d.Outcome, d.Decisive.Code, d.Decisive.Message)
			}
			if diff := cmp.Diff(tc.wantSelector, d.Translation.Pod.Spec.NodeSelector); diff != "" {
				t.Errorf("node selector of the translation (-want,+got):\n%s", diff)
			}
			pinned := false
			for _, r := range d.Reasons {
				pinned = pinned || r.Code == decide.ReasonKServeAcceleratorPinned
			}
			if pinned != tc.wantPinned {
				t.Errorf("KServeAcceleratorPinned said: %v, want %v; reasons %v", pinned, tc.wantPinned, d.Reasons)
			}
		})
	}
}

// TestHAMiMIGMode: under the hami profile, a pod whose vgpu-mode asks HAMi
// for MIG instances stays as submitted, with the annotation named; one that
// admits hami-core (alone or beside mig) is translated to HAMi-core shares.
func TestHAMiMIGMode(t *testing.T) {
	hami, err := translate.ProfilePolicy("nvidia", "hami")
	if err != nil {
		t.Fatal(err)
	}
	pod := func(mode string) *builders.PodWrapper {
		b := builders.MakePod("p", "default")
		if mode != "" {
			b = b.Annotation("nvidia.com/vgpu-mode", mode)
		}
		return b.Container("c").Limit("nvidia.com/gpu", "2").Limit("nvidia.com/gpumem", "8000")
	}
	cases := map[string]struct {
		b            *builders.PodWrapper
		wantOutcome  reason.Outcome
		wantDecisive reason.Code
		wantField    string
	}{
		"vgpu-mode mig": {
			b: pod("mig"), wantOutcome: reason.OutcomeKeepLegacy, wantDecisive: decide.ReasonHAMiMIGMode, wantField: "metadata.annotations[nvidia.com/vgpu-mode]",
		},
		"vgpu-mode hami-core":      {b: pod("hami-core"), wantOutcome: reason.OutcomeTranslate, wantDecisive: translate.ReasonTranslated},
		"vgpu-mode admitting both": {b: pod("hami-core,mig"), wantOutcome: reason.OutcomeTranslate, wantDecisive: translate.ReasonTranslated},
		"no vgpu-mode":             {b: pod(""), wantOutcome: reason.OutcomeTranslate, wantDecisive: translate.ReasonTranslated},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: tc.b.Obj(), Policy: hami, Admitted: true})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.wantOutcome || d.Decisive.Code != tc.wantDecisive {
				t.Fatalf("%s (%s: %s), want %s for %s", d.Outcome, d.Decisive.Code, d.Decisive.Message, tc.wantOutcome, tc.wantDecisive)
			}
			if d.Decisive.Field != tc.wantField {
				t.Errorf("decisive reason at %q, want %q", d.Decisive.Field, tc.wantField)
			}
		})
	}
}
