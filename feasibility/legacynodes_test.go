package feasibility

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

func TestLegacyNodes(t *testing.T) {
	gpus := func(n string) *builders.PodWrapper {
		return builders.MakePod("p", "team").Container("app").Limit("nvidia.com/gpu", n)
	}
	busy := gpus("8").NodeName("legacy-gfd-0").Obj()
	cases := map[string]struct {
		pod  *corev1.Pod
		want int
	}{
		"both device-plugin nodes advertise two GPUs":                 {pod: gpus("2").Obj(), want: 2},
		"what runs there does not count: capacity does":               {pod: gpus("8").Obj(), want: 2},
		"no node advertises 16 GPUs":                                  {pod: gpus("16").Obj(), want: 0},
		"the node selector counts":                                    {pod: gpus("1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").Obj(), want: 0},
		"a matching node selector keeps them":                         {pod: gpus("1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB").Obj(), want: 2},
		"a pod bound at creation runs on its node":                    {pod: gpus("8").NodeName("legacy-gfd-1").Obj(), want: 1},
		"a pod bound at creation to a node without GPUs runs nowhere": {pod: gpus("1").NodeName("l4-inference-0").Obj(), want: 0},
		"a pod without extended resources runs nowhere on the device plugin": {
			pod: builders.MakePod("p", "team").Container("app").Request("cpu", "1").Obj(), want: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inv := inventoryOf(t, "mixed")
			inv.Pods, inv.PodsListed = []*corev1.Pod{busy}, true
			snap, err := NewSnapshot(inv, 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			if got := snap.LegacyNodes(tc.pod); got != tc.want {
				t.Errorf("LegacyNodes = %d, want %d", got, tc.want)
			}
		})
	}
}
