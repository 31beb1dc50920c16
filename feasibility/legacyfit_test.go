package feasibility

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

func TestLegacyFitsNow(t *testing.T) {
	gpuPod := func(name, gpus, node string) *corev1.Pod {
		return builders.MakePod(name, "team").Container("app").Limit("nvidia.com/gpu", gpus).NodeName(node).Obj()
	}
	cases := map[string]struct {
		pods   []*corev1.Pod
		listed bool
		pod    *corev1.Pod
		want   LegacyFit
	}{
		"without the pods bound to the nodes nothing is known": {
			pod:  gpuPod("p", "2", ""),
			want: LegacyFit{},
		},
		"an empty cluster whose pods are listed has both device-plugin nodes free": {
			listed: true,
			pod:    gpuPod("p", "2", ""),
			want:   LegacyFit{Known: true, Node: "legacy-gfd-0", Nodes: 2},
		},
		"a node whose GPUs are taken by bound pods has no room": {
			pods: []*corev1.Pod{gpuPod("a", "8", "legacy-gfd-0"), gpuPod("b", "7", "legacy-gfd-1")},
			pod:  gpuPod("p", "2", ""),
			want: LegacyFit{Known: true},
		},
		"one free GPU left is room for a one-GPU pod": {
			pods: []*corev1.Pod{gpuPod("a", "8", "legacy-gfd-0"), gpuPod("b", "7", "legacy-gfd-1")},
			pod:  gpuPod("p", "1", ""),
			want: LegacyFit{Known: true, Node: "legacy-gfd-1", Nodes: 1},
		},
		"a finished pod holds nothing": {
			pods: []*corev1.Pod{func() *corev1.Pod {
				p := gpuPod("a", "8", "legacy-gfd-0")
				p.Status.Phase = corev1.PodSucceeded
				return p
			}()},
			pod:  gpuPod("p", "8", ""),
			want: LegacyFit{Known: true, Node: "legacy-gfd-0", Nodes: 2},
		},
		"the pod's node selector counts": {
			listed: true,
			pod:    builders.MakePod("p", "team").Container("app").Limit("nvidia.com/gpu", "1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").Obj(),
			want:   LegacyFit{Known: true},
		},
		"a pod that asks for no extended resource is not the device plugin's": {
			listed: true,
			pod:    builders.MakePod("p", "team").Container("app").Request("cpu", "1").Obj(),
			want:   LegacyFit{Known: true},
		},
		"CPU counts beside the GPUs": {
			listed: true,
			pod:    builders.MakePod("p", "team").Container("app").Limit("nvidia.com/gpu", "1").Request("cpu", "96").Obj(),
			want:   LegacyFit{Known: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inv := inventoryOf(t, "mixed")
			inv.Pods, inv.PodsListed = tc.pods, tc.listed
			snap, err := NewSnapshot(inv, 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, snap.LegacyFitsNow(tc.pod)); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
