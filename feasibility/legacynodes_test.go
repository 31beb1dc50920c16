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
		// Every resource the verdict compares counts, not the devices alone.
		"more cpu than a node has allocatable":               {pod: gpus("1").Request("cpu", "96").Obj(), want: 0},
		"more memory than a node has allocatable":            {pod: gpus("1").Request("memory", "700Gi").Obj(), want: 0},
		"a memory limit without a request is its request":    {pod: gpus("1").Limit("memory", "700Gi").Obj(), want: 0},
		"more ephemeral storage than any node has":           {pod: gpus("1").Request("ephemeral-storage", "500Gi").Obj(), want: 0},
		"ephemeral storage a node has room for":              {pod: gpus("1").Request("ephemeral-storage", "1Gi").Obj(), want: 2},
		"hugepages no node reports":                          {pod: gpus("1").Limit("hugepages-2Mi", "2Mi").Request("cpu", "1").Obj(), want: 0},
		"cpu and memory that fit":                            {pod: gpus("1").Request("cpu", "95").Request("memory", "600Gi").Obj(), want: 2},
		"a pod bound at creation to a node without the room": {pod: gpus("1").Request("cpu", "96").NodeName("legacy-gfd-1").Obj(), want: 0},
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

// TestLegacyWhyNone: why no node runs a pod as submitted names what is
// really missing: a resource no node has as much of (a companion resource
// no node offers, cpu, hugepages) before the selectors, then what keeps
// the pod off the nodes with room.
func TestLegacyWhyNone(t *testing.T) {
	gpus := func(n string) *builders.PodWrapper {
		return builders.MakePod("p", "team").Container("app").Limit("nvidia.com/gpu", n)
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"HAMi's GPU memory, which no node offers, though the pod selects no node": {
			pod:  gpus("1").Limit("nvidia.com/gpumem", "8000").Obj(),
			want: "no node offers nvidia.com/gpumem (the pod asks for 8k)",
		},
		"a companion resource is named before the node selector": {
			pod:  gpus("1").Limit("vpc.amazonaws.com/efa", "4").NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").Obj(),
			want: "no node offers vpc.amazonaws.com/efa (the pod asks for 4)",
		},
		"more cpu than any node": {
			pod:  gpus("1").Request("cpu", "300").Obj(),
			want: "no node has room for 300 cpu (the most one node has allocatable is 223500m)",
		},
		"more cpu than the GPU nodes have, less than another": {
			pod:  gpus("1").Request("cpu", "125").Obj(),
			want: "the nodes that offer nvidia.com/gpu (legacy-gfd-0, legacy-gfd-1) have no room for the rest: legacy-gfd-0 had insufficient cpu (the pod asks for 125, 95500m allocatable)",
		},
		"hugepages no node has": {
			pod:  gpus("1").Limit("hugepages-2Mi", "2Mi").Request("cpu", "1").Obj(),
			want: "no node offers hugepages-2Mi (the pod asks for 2Mi)",
		},
		"the node selector, when every resource is offered": {
			pod:  gpus("1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").Obj(),
			want: "every node with room for what it requests (legacy-gfd-0, legacy-gfd-1) rejects it: legacy-gfd-0 didn't match Pod's node affinity/selector",
		},
		"spec.nodeName on a node without the devices": {
			pod:  gpus("1").NodeName("l4-inference-0").Obj(),
			want: "its spec.nodeName l4-inference-0 names none of the nodes with room for what it requests (legacy-gfd-0, legacy-gfd-1)",
		},
		"a pod a node runs": {pod: gpus("1").Obj(), want: ""},
	}
	inv := inventoryOf(t, "mixed")
	snap, err := NewSnapshot(inv, 1, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := snap.LegacyWhyNone(tc.pod); got != tc.want {
				t.Errorf("LegacyWhyNone = %q, want %q", got, tc.want)
			}
		})
	}
}
