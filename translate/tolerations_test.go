package translate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

func toleration(key string) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
}

// The webhook's pod has been through admission: whatever the policy says
// about the cluster's admission, the translation adds no toleration.
func TestAdmittedPodGetsNoImplicitToleration(t *testing.T) {
	gke, err := translate.ProfilePolicy("nvidia", "gke")
	if err != nil {
		t.Fatal(err)
	}
	pod := builders.MakePod("p", "ml").Container("app").Limit("nvidia.com/gpu", "1").Obj()
	for _, admitted := range []bool{false, true} {
		res, err := translate.Pod(translate.Input{Pod: pod, Policy: gke, Admitted: admitted})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != reason.OutcomeTranslate {
			t.Fatalf("admitted %v: outcome %s", admitted, res.Outcome)
		}
		var want []corev1.Toleration
		if !admitted {
			want = []corev1.Toleration{toleration("nvidia.com/gpu")}
		}
		if diff := cmp.Diff(want, res.Pod.Spec.Tolerations); diff != "" {
			t.Errorf("admitted %v: tolerations (-want,+got):\n%s", admitted, diff)
		}
		if diff := cmp.Diff(want, res.ImplicitTolerations); diff != "" {
			t.Errorf("admitted %v: ImplicitTolerations (-want,+got):\n%s", admitted, diff)
		}
	}
}

// Under a policy that says nothing about the cluster's admission (the
// default policy), a pod that requires a GKE-only label runs on GKE: its
// translation offline carries the toleration the plugin gives the original.
// A policy that says the cluster does not run the plugin wins.
func TestAGKEOnlyLabelBringsTheImplicitToleration(t *testing.T) {
	pod := builders.MakePod("p", "ml").Container("app").Limit("google.com/tpu", "4").
		NodeSelector("cloud.google.com/gke-tpu-accelerator", "tpu-v5-lite-podslice").NodeSelector("cloud.google.com/gke-tpu-topology", "2x2").Obj()
	off := false
	saysNo, err := translate.NewPolicy(&v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
		Spec: v1alpha1.PolicySpec{Profiles: v1alpha1.DefaultProfileNames(), ImplicitTolerations: &off}})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		policy *translate.Policy
		want   []corev1.Toleration
	}{
		"the default policy":                         {policy: translate.DefaultPolicy(), want: []corev1.Toleration{toleration("google.com/tpu")}},
		"a policy that says the plugin does not run": {policy: saysNo},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := translate.Pod(translate.Input{Pod: pod, Policy: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != reason.OutcomeTranslate {
				t.Fatalf("outcome %s: %v", res.Outcome, res.Reasons)
			}
			if diff := cmp.Diff(tc.want, res.Pod.Spec.Tolerations); diff != "" {
				t.Errorf("tolerations (-want,+got):\n%s", diff)
			}
		})
	}
}
