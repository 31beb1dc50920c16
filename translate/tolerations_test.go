package translate_test

import (
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"testing"

	"github.com/claimbridge/claimbridge/reason"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
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

// A pod runs on GKE when its own required node selection names a label only
// GKE nodes carry: a nodeSelector entry, or an In or Exists requirement in
// every ORed required term.
func TestGKEOnlyLabelIsReadFromTheRequiredNodeSelection(t *testing.T) {
	term := func(exprs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: exprs}
	}
	req := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	required := func(terms ...corev1.NodeSelectorTerm) *corev1.Pod {
		pod := builders.MakePod("p", "ml").Container("app").Limit("google.com/tpu", "4").Obj()
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
		return pod
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"a nodeSelector on the GKE accelerator": {
			pod:  builders.MakePod("p", "ml").Container("app").Limit("nvidia.com/gpu", "1").NodeSelector("cloud.google.com/gke-accelerator", "nvidia-l4").Obj(),
			want: "cloud.google.com/gke-accelerator",
		},
		"a nodeSelector on a GKE compute class": {
			pod:  builders.MakePod("p", "ml").Container("app").Limit("nvidia.com/gpu", "1").NodeSelector("cloud.google.com/compute-class", "gpu-pool").Obj(),
			want: "cloud.google.com/compute-class",
		},
		"a required In on the TPU topology": {
			pod:  required(term(req("cloud.google.com/gke-tpu-topology", corev1.NodeSelectorOpIn, "2x4"))),
			want: "cloud.google.com/gke-tpu-topology",
		},
		"every ORed term names a GKE-only label": {
			pod:  required(term(req("cloud.google.com/gke-nodepool", corev1.NodeSelectorOpIn, "a")), term(req("cloud.google.com/gke-spot", corev1.NodeSelectorOpExists))),
			want: "cloud.google.com/gke-nodepool",
		},
		"one ORed term admits other nodes": {
			pod: required(term(req("cloud.google.com/gke-nodepool", corev1.NodeSelectorOpIn, "a")), term(req("kubernetes.io/arch", corev1.NodeSelectorOpIn, "amd64"))),
		},
		"NotIn and DoesNotExist select no GKE node": {
			pod: required(term(req("cloud.google.com/gke-spot", corev1.NodeSelectorOpDoesNotExist), req("cloud.google.com/gke-nodepool", corev1.NodeSelectorOpNotIn, "b"))),
		},
		"a label under cloud.google.com that is not GKE's own": {
			pod: builders.MakePod("p", "ml").Container("app").Limit("nvidia.com/gpu", "1").NodeSelector("cloud.google.com/example", "x").Obj(),
		},
		"no node selection": {
			pod: builders.MakePod("p", "ml").Container("app").Limit("nvidia.com/gpu", "1").Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := translate.GKEOnlyLabel(tc.pod); got != tc.want {
				t.Errorf("GKEOnlyLabel = %q, want %q", got, tc.want)
			}
		})
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
