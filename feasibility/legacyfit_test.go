package feasibility

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

func TestLegacyFitsNow(t *testing.T) {
	gpuPod := func(name, gpus, node string) *corev1.Pod {
		return builders.MakePod(name, "team").Container("app").Limit("nvidia.com/gpu", gpus).NodeName(node).Obj()
	}
	cases := map[string]struct {
		pods     []*corev1.Pod
		listed   bool
		pending  []*corev1.Pod // waiting for the device plugin before pod
		boundNow []*corev1.Pod // bound since the snapshot was built (podsOn)
		pod      *corev1.Pod
		want     LegacyFit
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
		"a pod waiting for the device plugin takes the last free GPU first": {
			pods:    []*corev1.Pod{gpuPod("a", "8", "legacy-gfd-0"), gpuPod("b", "7", "legacy-gfd-1")},
			pending: []*corev1.Pod{gpuPod("w", "1", "")},
			pod:     gpuPod("p", "1", ""),
			want:    LegacyFit{Known: true},
		},
		"pods waiting for the device plugin fill the nodes in name order": {
			listed:  true,
			pending: []*corev1.Pod{gpuPod("w1", "8", ""), gpuPod("w2", "4", "")},
			pod:     gpuPod("p", "4", ""),
			want:    LegacyFit{Known: true, Node: "legacy-gfd-1", Nodes: 1},
		},
		"a waiting pod that no node runs now takes nothing": {
			listed:  true,
			pending: []*corev1.Pod{gpuPod("w", "16", "")},
			pod:     gpuPod("p", "8", ""),
			want:    LegacyFit{Known: true, Node: "legacy-gfd-0", Nodes: 2},
		},
		"a pod bound since the snapshot was built counts on its node": {
			listed:   true,
			boundNow: []*corev1.Pod{gpuPod("b", "8", "legacy-gfd-0")},
			pod:      gpuPod("p", "8", ""),
			want:     LegacyFit{Known: true, Node: "legacy-gfd-1", Nodes: 1},
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
			if diff := cmp.Diff(tc.want, snap.LegacyFitsAfter(tc.pod, tc.pending, boundOn(tc.boundNow))); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestLegacyUnservable(t *testing.T) {
	gpus := func(n string) *builders.PodWrapper {
		return builders.MakePod("p", "team").Container("app").Limit("nvidia.com/gpu", n)
	}
	unservable := func(name corev1.ResourceName, requested, most string) Unservable {
		return Unservable{Resource: name, Requested: resource.MustParse(requested), Most: resource.MustParse(most)}
	}
	cases := map[string]struct {
		fleet  string
		mutate func(*Inventory)
		pod    *corev1.Pod
		want   []Unservable
	}{
		"device-plugin nodes that advertise the GPUs serve the pod": {
			fleet: "mixed", pod: gpus("2").Obj(),
		},
		"a pod asking for more GPUs than any node advertises is unservable": {
			fleet: "mixed", pod: gpus("16").Obj(),
			want: []Unservable{unservable("nvidia.com/gpu", "16", "8")},
		},
		"a DRA-only fleet advertises no GPU": {
			fleet: "l4-inference", pod: gpus("1").Obj(),
			want: []Unservable{unservable("nvidia.com/gpu", "1", "0")},
		},
		"a node selector that admits a node offering the GPUs is served": {
			fleet: "mixed", pod: gpus("1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB").Obj(),
		},
		"a node selector that excludes every node offering the GPUs is not": {
			fleet: "mixed", pod: gpus("1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").Obj(),
			want: []Unservable{{Resource: "nvidia.com/gpu", Requested: resource.MustParse("1"), Most: resource.MustParse("8"), Elsewhere: []string{"legacy-gfd-0", "legacy-gfd-1"}}},
		},
		"a pod bound at creation to a node without GPUs is not served by the others": {
			fleet: "mixed", pod: gpus("1").NodeName("dgx-h100-0").Obj(),
			want: []Unservable{{Resource: "nvidia.com/gpu", Requested: resource.MustParse("1"), Most: resource.MustParse("8"), Elsewhere: []string{"legacy-gfd-0", "legacy-gfd-1"}}},
		},
		"a pod bound at creation to a node with GPUs is served": {
			fleet: "mixed", pod: gpus("1").NodeName("legacy-gfd-1").Obj(),
		},
		"what runs on the nodes does not count": {
			fleet: "mixed", pod: gpus("8").Obj(),
			mutate: func(inv *Inventory) {
				inv.Pods = []*corev1.Pod{gpus("8").NodeName("legacy-gfd-0").Obj(), gpus("8").NodeName("legacy-gfd-1").Obj()}
				inv.PodsListed = true
			},
		},
		"nodes whose device plugin has left (the kubelet keeps the resource at 0) offer none": {
			fleet: "mixed", pod: gpus("1").Obj(),
			mutate: func(inv *Inventory) {
				for _, n := range inv.Nodes {
					if _, ok := n.Status.Allocatable["nvidia.com/gpu"]; ok {
						n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("0")
					}
				}
			},
			want: []Unservable{unservable("nvidia.com/gpu", "1", "0")},
		},
		"only the resources no node offers are listed": {
			fleet: "mixed", pod: gpus("1").Limit("nvidia.com/gpu.shared", "1").Obj(),
			want: []Unservable{unservable("nvidia.com/gpu.shared", "1", "0")},
		},
		"an init container's GPUs are reused by the app container after it": {
			fleet: "mixed", pod: builders.MakePod("p", "team").InitContainer("init", false).Limit("nvidia.com/gpu", "8").
				Container("app").Limit("nvidia.com/gpu", "1").Obj(),
		},
		"a sidecar's GPUs add to the app container's": {
			fleet: "mixed", pod: builders.MakePod("p", "team").InitContainer("sidecar", true).Limit("nvidia.com/gpu", "1").
				Container("app").Limit("nvidia.com/gpu", "8").Obj(),
			want: []Unservable{unservable("nvidia.com/gpu", "9", "8")},
		},
		"a pod that asks for no extended resource is never unservable": {
			fleet: "l4-inference", pod: builders.MakePod("p", "team").Container("app").Request("cpu", "1").Obj(),
		},
		"a resource a DeviceClass maps (KEP-5004) is served from DRA": {
			fleet: "l4-inference", pod: gpus("1").Obj(),
			mutate: func(inv *Inventory) {
				c := inv.Classes[0].DeepCopy()
				c.Name, c.Spec.ExtendedResourceName = "mapped", ptr.To("nvidia.com/gpu")
				inv.Classes = append(inv.Classes, c)
			},
		},
		"a node that reports no allocatable yet leaves it unknown": {
			fleet: "l4-inference", pod: gpus("1").Obj(),
			mutate: func(inv *Inventory) {
				n := inv.Nodes[0].DeepCopy()
				n.Status.Allocatable = nil
				inv.Nodes[0] = n
			},
		},
		"a fleet without nodes says nothing": {
			fleet: "l4-inference", pod: gpus("1").Obj(),
			mutate: func(inv *Inventory) { inv.Nodes = nil },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inv := inventoryOf(t, tc.fleet)
			if tc.mutate != nil {
				tc.mutate(inv)
			}
			snap, err := NewSnapshot(inv, 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, snap.LegacyUnservable(tc.pod)); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// boundOn lists the pods bound to a node among bound; nil for none: the
// snapshot's usage then.
func boundOn(bound []*corev1.Pod) func(string) []*corev1.Pod {
	if bound == nil {
		return nil
	}
	return func(node string) []*corev1.Pod {
		var out []*corev1.Pod
		for _, p := range bound {
			if p.Spec.NodeName == node {
				out = append(out, p)
			}
		}
		return out
	}
}
