package podfacts_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/podfacts"
)

func TestRequiresLabel(t *testing.T) {
	const key = "cloud.google.com/gke-accelerator"
	cases := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"a nodeSelector entry":                  {pod: builders.MakePod("p", "ml").NodeSelector(key, "nvidia-l4").Obj(), want: true},
		"any expression of a required term":     {pod: builders.MakePod("p", "ml").RequiredTerm(corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpDoesNotExist}).Obj(), want: true},
		"a preferred term is not a requirement": {pod: builders.MakePod("p", "ml").PreferredTerm(10, in(key, "nvidia-l4")).Obj()},
		"another key":                           {pod: builders.MakePod("p", "ml").NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj()},
		"no node selection":                     {pod: builders.MakePod("p", "ml").Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := podfacts.RequiresLabel(tc.pod, key); got != tc.want {
				t.Errorf("RequiresLabel = %v, want %v", got, tc.want)
			}
		})
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
			if got := podfacts.GKEOnlyLabel(tc.pod); got != tc.want {
				t.Errorf("GKEOnlyLabel = %q, want %q", got, tc.want)
			}
		})
	}
}
