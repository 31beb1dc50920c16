package feasibility

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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

// TestLegacyNodesWithoutDevicePlugin: a node whose device plugin has left
// keeps the resource in its allocatable at 0 (the kubelet does, until it
// restarts), with its capacity: it offers no pod any, whatever the
// capacity says.
func TestLegacyNodesWithoutDevicePlugin(t *testing.T) {
	inv := inventoryOf(t, "mixed")
	left := ""
	for _, n := range inv.Nodes {
		if _, ok := n.Status.Allocatable["nvidia.com/gpu"]; ok && left == "" {
			left = n.Name
			n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("0")
		}
	}
	inv.PodsListed = true
	snap, err := NewSnapshot(inv, 1, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	pod := builders.MakePod("p", "team").Container("app").Limit("nvidia.com/gpu", "1").Obj()
	_, offers := snap.LegacyOffers(pod)
	if len(offers) != 1 || offers[0].Node == left {
		t.Errorf("offers %v, want the other device-plugin node only, not %s", offers, left)
	}
	if fit := snap.LegacyFitsNow(pod); fit.Nodes != 1 || fit.Node == left {
		t.Errorf("LegacyFitsNow %+v, want the other node only", fit)
	}
}
