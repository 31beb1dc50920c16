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
