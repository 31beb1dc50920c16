package podfacts_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/podfacts"
)

func toleration(key string) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
}

// AdmissionTolerations mirrors kube-apiserver's ExtendedResourceToleration
// plugin (plugin/pkg/admission/extendedresourcetoleration, Admit): every
// extended resource requested by a container or init container, sorted,
// added with AddOrUpdateTolerationInPod (an equal toleration is not added
// twice).
func TestAdmissionTolerationsAreThoseOfExtendedResourceToleration(t *testing.T) {
	cases := map[string]struct {
		pod  *corev1.Pod
		want []corev1.Toleration
	}{
		"a limit counts as the request defaulting makes of it": {
			pod:  builders.MakePod("p", "ml").Container("app").Limit("nvidia.com/gpu", "1").Obj(),
			want: []corev1.Toleration{toleration("nvidia.com/gpu")},
		},
		"resources of containers and init containers, sorted by name, once each": {
			pod: builders.MakePod("p", "ml").InitContainer("init", false).Limit("rdma/hca", "1").
				Container("a").Limit("nvidia.com/gpu", "2").Request("cpu", "4").
				Container("b").Request("example.com/fpga", "1").Limit("nvidia.com/gpu", "1").Obj(),
			want: []corev1.Toleration{toleration("example.com/fpga"), toleration("nvidia.com/gpu"), toleration("rdma/hca")},
		},
		"native resources are not extended resources": {
			pod: builders.MakePod("p", "ml").Container("app").Limit("cpu", "1").Limit("memory", "1Gi").
				Limit("hugepages-2Mi", "2Mi").Limit("kubernetes.io/foo", "1").Obj(),
		},
		"an equal toleration is there already": {
			pod: builders.MakePod("p", "ml").Container("app").Limit("nvidia.com/gpu", "1").Limit("google.com/tpu", "4").
				Toleration("nvidia.com/gpu", corev1.TaintEffectNoSchedule).Obj(),
			want: []corev1.Toleration{toleration("google.com/tpu")},
		},
		"a broader toleration is not an equal one (the plugin adds its own)": {
			pod: builders.MakePod("p", "ml").Container("app").Limit("nvidia.com/gpu", "1").
				Toleration("", corev1.TaintEffectNoSchedule).Obj(),
			want: []corev1.Toleration{toleration("nvidia.com/gpu")},
		},
		"a pod without extended resources gets nothing": {
			pod: builders.MakePod("p", "ml").Container("app").Limit("cpu", "1").Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := podfacts.AdmissionTolerations(tc.pod)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tolerations (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestToleratesLikeThePlugin(t *testing.T) {
	pod := func(tol ...corev1.Toleration) *corev1.Pod {
		p := builders.MakePod("p", "ml").Container("app").Limit("nvidia.com/gpu", "1").Obj()
		p.Spec.Tolerations = tol
		return p
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"the plugin's own toleration":         {pod: pod(toleration("nvidia.com/gpu")), want: true},
		"Exists on every key with NoSchedule": {pod: pod(corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}), want: true},
		"Exists on the key with every effect": {pod: pod(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}), want: true},
		"Equal tolerates one value only":      {pod: pod(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual, Value: "present", Effect: corev1.TaintEffectNoSchedule})},
		"NoExecute is not NoSchedule":         {pod: pod(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})},
		"another key":                         {pod: pod(toleration("google.com/tpu"))},
		"no toleration":                       {pod: pod()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := podfacts.ToleratesLikeThePlugin(tc.pod, "nvidia.com/gpu"); got != tc.want {
				t.Errorf("ToleratesLikeThePlugin = %v, want %v", got, tc.want)
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
