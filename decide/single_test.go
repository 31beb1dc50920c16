package decide_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

const (
	h100 = "NVIDIA-H100-80GB-HBM3"
	l4   = "NVIDIA-L4"
)

// volcanoPolicy lists Volcano (built-in output ExactlyOnly) with the
// default profiles, and with fallback, a fallback from H100 to A100.
func volcanoPolicy(t *testing.T, fallback bool) *translate.Policy {
	t.Helper()
	spec := v1alpha1.PolicySpec{
		Profiles:   v1alpha1.DefaultProfileNames(),
		Schedulers: v1alpha1.SchedulerNames(v1alpha1.DefaultScheduler, "volcano"),
	}
	if fallback {
		spec.Fallbacks = []v1alpha1.FallbackRule{{
			Name:         "h100-then-a100",
			Match:        v1alpha1.LegacyShape{Resource: "nvidia.com/gpu", NodeSelector: map[string]string{"nvidia.com/gpu.product": h100}},
			Alternatives: []v1alpha1.LegacyShape{{NodeSelector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}}},
		}}
	}
	p, err := translate.NewPolicy(&v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func volcanoPod(selector map[string]string) *corev1.Pod {
	pod := gpuPod(1, selector)
	pod.Spec.SchedulerName = "volcano"
	return pod
}

func prefers(pod *corev1.Pod, product string) *corev1.Pod {
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
		Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpIn, Values: []string{product}}}},
	}}}}
	return pod
}

func requires(pod *corev1.Pod, products ...string) *corev1.Pod {
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpIn, Values: products}}}},
	}}}
	return pod
}

func hasCode(rs []reason.Reason, code reason.Code) bool {
	return slices.ContainsFunc(rs, func(r reason.Reason) bool { return r.Code == code })
}

// TestExactlyOnlyKeepsTheFirstSingleAlternativeThePlacementCheckAccepts: for
// a scheduler that takes no firstAvailable, decide tries the single
// alternatives in preference order. The test fails if decide stops at the
// first alternative, does not check each one, or lets the fallbacks widen
// the pod as submitted.
func TestExactlyOnlyKeepsTheFirstSingleAlternativeThePlacementCheckAccepts(t *testing.T) {
	inv, snap := gpusFleet(t)
	checker := feasibility.NewChecker(feasibility.Options{})
	cases := map[string]struct {
		pod          *corev1.Pod
		fallback     bool
		wantOutcome  reason.Outcome
		wantDecisive reason.Code
		// wantChosen is in Translation.Chosen of a translated pod.
		wantChosen string
		// wantRejected single alternatives, in the reasons.
		wantRejected int
	}{
		// A preference for H100: the H100 alone would lose every other GPU
		// node; the plain alternative lands where the pod as submitted does.
		"a preference: the preferred alternative alone lands on fewer nodes, the plain one is kept": {
			pod: prefers(volcanoPod(nil), h100), wantOutcome: reason.OutcomeTranslate, wantDecisive: decide.ReasonFeasible,
			wantChosen: "1× gpu.nvidia.com", wantRejected: 1,
		},
		// H100 or L4: either alone loses the other's nodes.
		"an In list: no single product lands where the pod can": {
			pod: requires(volcanoPod(nil), h100, l4), wantOutcome: reason.OutcomeKeepLegacy, wantDecisive: translate.ReasonNoSingleAlternative,
			wantRejected: 2,
		},
		// The fallback to A100 is not offered to Volcano, so it does not
		// widen the pod as submitted: the H100 alone is where it lands.
		"a fallback: the alternative the pod asks for, judged without the fallback": {
			pod: volcanoPod(map[string]string{"nvidia.com/gpu.product": h100}), fallback: true, wantOutcome: reason.OutcomeTranslate, wantDecisive: decide.ReasonFeasible,
			wantChosen: "nvidia.com/gpu.product=" + h100,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: tc.pod, Policy: volcanoPolicy(t, tc.fallback), Classes: inv.Classes, Checker: checker, Snapshot: snap})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.wantOutcome || d.Decisive.Code != tc.wantDecisive {
				t.Fatalf("outcome %s (%s: %s), want %s (%s); reasons %v", d.Outcome, d.Decisive.Code, d.Decisive.Message, tc.wantOutcome, tc.wantDecisive, d.Reasons)
			}
			rejected := 0
			for _, r := range d.Reasons {
				if r.Code == decide.ReasonSingleAlternativeRejected {
					rejected++
				}
			}
			if rejected != tc.wantRejected {
				t.Errorf("%d single alternatives rejected, want %d: %v", rejected, tc.wantRejected, d.Reasons)
			}
			if tc.wantOutcome != reason.OutcomeTranslate {
				return
			}
			if chosen := strings.Join(d.Translation.Chosen, "; "); !strings.Contains(chosen, tc.wantChosen) {
				t.Errorf("chosen %q, want %q", chosen, tc.wantChosen)
			}
			if d.Placement == nil || !d.Placement.Equal() {
				t.Errorf("placement %+v, want Equal", d.Placement)
			}
			for _, r := range d.Translation.Template.Spec.Spec.Devices.Requests {
				if r.Exactly == nil {
					t.Errorf("request %s is not exactly: %+v", r.Name, r)
				}
			}
		})
	}
}

// TestExactlyOnlyWithoutAFleetTakesWhatThePodAsksFor: without a placement
// check, only the alternative made of the pod's required node constraints
// means what the pod asks for; with several (an In list) none does.
func TestExactlyOnlyWithoutAFleetTakesWhatThePodAsksFor(t *testing.T) {
	d, err := decide.Pod(t.Context(), decide.Input{Pod: prefers(volcanoPod(nil), h100), Policy: volcanoPolicy(t, false)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != reason.OutcomeTranslate || strings.Contains(strings.Join(d.Translation.Chosen, ""), "H100") {
		t.Errorf("a preference: %s, chosen %v; want the plain alternative", d.Outcome, d.Translation.Chosen)
	}
	if a := d.Translation.Pod.Spec.Affinity; a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("the preference no alternative expresses must stay on the pod: %+v", a)
	}
	d, err = decide.Pod(t.Context(), decide.Input{Pod: requires(volcanoPod(nil), h100, l4), Policy: volcanoPolicy(t, false)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != reason.OutcomeKeepLegacy || d.Decisive.Code != translate.ReasonNoSingleAlternative {
		t.Errorf("an In list: %s (%s), want KeepLegacy (NoSingleAlternative)", d.Outcome, d.Decisive.Code)
	}
	if !hasCode(d.Reasons, translate.ReasonSingleAlternative) {
		t.Errorf("the reasons of the most preferred translation must stay for audit: %v", d.Reasons)
	}
}
