package translate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/translate"
)

func TestDevicesRequested(t *testing.T) {
	cases := map[string]struct {
		pod  *corev1.Pod
		want map[corev1.ResourceName]int64
	}{
		"containers add up": {
			pod: builders.MakePod("p", "ns").Container("a").Limit("nvidia.com/gpu", "2").Limit("rdma/hca", "1").
				Container("b").Limit("nvidia.com/gpu", "1").Obj(),
			want: map[corev1.ResourceName]int64{"nvidia.com/gpu": 3, "rdma/hca": 1},
		},
		"an init container that needs more than the app containers sets the count": {
			pod: builders.MakePod("p", "ns").InitContainer("check", false).Limit("nvidia.com/gpu", "8").
				Container("a").Limit("nvidia.com/gpu", "4").Obj(),
			want: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8},
		},
		"an init container that needs less shares the app containers' devices": {
			pod: builders.MakePod("p", "ns").InitContainer("check", false).Limit("nvidia.com/gpu", "1").
				Container("a").Limit("nvidia.com/gpu", "4").Obj(),
			want: map[corev1.ResourceName]int64{"nvidia.com/gpu": 4},
		},
		"sidecars count with the app containers and next to later init containers": {
			pod: builders.MakePod("p", "ns").InitContainer("side", true).Limit("nvidia.com/gpu", "1").
				InitContainer("check", false).Limit("nvidia.com/gpu", "4").
				Container("a").Limit("nvidia.com/gpu", "2").Obj(),
			want: map[corev1.ResourceName]int64{"nvidia.com/gpu": 5},
		},
		"MIG slices and TPUs are device counts; a request without a limit counts": {
			pod: builders.MakePod("p", "ns").Container("a").Limit("nvidia.com/mig-1g.10gb", "2").
				Container("b").Request("google.com/tpu", "4").Obj(),
			want: map[corev1.ResourceName]int64{"nvidia.com/mig-1g.10gb": 2, "google.com/tpu": 4},
		},
		"resources the policy does not map and native resources are not devices": {
			pod: builders.MakePod("p", "ns").Container("a").Limit("example.com/fpga", "1").Limit("cpu", "4").Limit("memory", "1Gi").Obj(),
		},
		"no containers": {pod: builders.MakePod("p", "ns").Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := translate.DefaultPolicy().DevicesRequested(tc.pod)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DevicesRequested (-want,+got):\n%s", diff)
			}
		})
	}
}
