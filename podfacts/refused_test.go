package podfacts

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestRefused: the resources kube-apiserver refuses a pod for, in its own
// words (k8s.io/kubernetes v1.37.2 pkg/apis/core/validation), and the
// shapes it creates.
func TestRefused(t *testing.T) {
	q := resource.MustParse
	pod := func(requests, limits corev1.ResourceList) *corev1.Pod {
		p := &corev1.Pod{}
		p.Name = "trainer"
		p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}}
		return p
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"a GPU request that differs from its limit": {
			pod:  pod(corev1.ResourceList{"nvidia.com/gpu": q("1")}, corev1.ResourceList{"nvidia.com/gpu": q("2")}),
			want: `Pod "trainer" is invalid: spec.containers[0].resources.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2`,
		},
		"a GPU request without a limit": {
			pod:  pod(corev1.ResourceList{"nvidia.com/gpu": q("1")}, nil),
			want: `Pod "trainer" is invalid: spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources`,
		},
		"a fraction of a device": {
			pod:  pod(nil, corev1.ResourceList{"nvidia.com/gpu": q("500m")}),
			want: `Pod "trainer" is invalid: spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer`,
		},
		"hugepages without cpu or memory": {
			pod:  pod(nil, corev1.ResourceList{"hugepages-2Mi": q("2Mi")}),
			want: `Pod "trainer" is invalid: spec.containers[0].resources: Forbidden: HugePages require cpu or memory`,
		},
		"an extended resource whose name makes no quota name": {
			pod:  pod(nil, corev1.ResourceList{"example.com/a/b": q("1")}),
			want: `Pod "trainer" is invalid: spec.containers[0].resources.limits[example.com/a/b]: Invalid value: "example.com/a/b": doesn't follow extended resource name standard`,
		},
		"a cpu request above its limit": {
			pod:  pod(corev1.ResourceList{"cpu": q("2")}, corev1.ResourceList{"cpu": q("1")}),
			want: `Pod "trainer" is invalid: spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`,
		},
		"a GPU limit alone (the request defaults to it)":   {pod: pod(nil, corev1.ResourceList{"nvidia.com/gpu": q("2")})},
		"a GPU request equal to its limit":                 {pod: pod(corev1.ResourceList{"nvidia.com/gpu": q("2")}, corev1.ResourceList{"nvidia.com/gpu": q("2")})},
		"a cpu request below its limit (cpu overcommits)":  {pod: pod(corev1.ResourceList{"cpu": q("1")}, corev1.ResourceList{"cpu": q("2")})},
		"hugepages with memory":                            {pod: pod(nil, corev1.ResourceList{"hugepages-2Mi": q("2Mi"), "memory": q("1Gi")})},
		"a kubernetes.io resource is native, not extended": {pod: pod(nil, corev1.ResourceList{"example.kubernetes.io/x": q("500m")})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, RefusedMessage(tc.pod)); diff != "" {
				t.Errorf("RefusedMessage (-want,+got):\n%s", diff)
			}
		})
	}
	// An init container is validated as the others.
	p := pod(nil, nil)
	p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": q("1")}}}}
	if errs := Refused(p); len(errs) != 1 || errs[0].Field != "spec.initContainers[0].resources.limits" {
		t.Errorf("Refused = %v, want the init container's missing limit", errs)
	}
}
