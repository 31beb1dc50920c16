package feasibility

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
)

// withTaint taints the named nodes of the inventory.
func withTaint(inv *Inventory, taint corev1.Taint, nodes ...string) *Inventory {
	for _, n := range inv.Nodes {
		if slices.Contains(nodes, n.Name) {
			n.Spec.Taints = append(n.Spec.Taints, taint)
		}
	}
	return inv
}

// withoutNodes drops the named nodes and their slices.
func withoutNodes(inv *Inventory, nodes ...string) *Inventory {
	inv.Nodes = slices.DeleteFunc(inv.Nodes, func(n *corev1.Node) bool { return slices.Contains(nodes, n.Name) })
	inv.Slices = slices.DeleteFunc(inv.Slices, func(s *resourceapi.ResourceSlice) bool {
		return s.Spec.NodeName != nil && slices.Contains(nodes, *s.Spec.NodeName)
	})
	return inv
}

// TestDecisiveReasonNamesTheNodesWithTheDevices checks the order of a
// verdict's reasons (issue 27, item 9): the first reason, the one a person
// reads, is about the nodes closest to serving the claim's devices, not the
// largest group of nodes that never had them.
func TestDecisiveReasonNamesTheNodesWithTheDevices(t *testing.T) {
	dedicated := corev1.Taint{Key: "dedicated", Value: "inference", Effect: corev1.TaintEffectNoSchedule}
	cases := map[string]struct {
		inventory func(t testing.TB) *Inventory
		pod       *corev1.Pod
		claim     *resourceapi.ResourceClaimSpec
		wantKind  VerdictKind
		want      []string
	}{
		"an L4 pod is told about the L4 node's taint before the TPU nodes' taints": {
			inventory: func(t testing.TB) *Inventory {
				inv := withoutNodes(inventoryOf(t, "l4-inference", "tpu-v5e"), "l4-inference-1", "l4-inference-2", "l4-inference-3")
				return withTaint(inv, dedicated, "l4-inference-0")
			},
			pod:      makePod("infer", "ml").Obj(),
			claim:    makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1, l4).Obj(),
			wantKind: NeverFits,
			want: []string{
				"1 node (l4-inference-0) had untolerated taint {dedicated: inference}",
				"2 nodes (tpu-v5e-0, tpu-v5e-1) had untolerated taint {google.com/tpu: present}",
			},
		},
		"an 8-GPU pod is told about the H100 nodes before CPU on the L4 nodes": {
			inventory: func(t testing.TB) *Inventory {
				return withTaint(inventoryOf(t, "mixed"), dedicated, "dgx-h100-0", "dgx-h100-1")
			},
			pod:      withCPU(makePod("train", "ml").Obj(), "16"),
			claim:    makeClaim().Exactly("gpu", fleetgen.ClassGPU, 8, h100).Obj(),
			wantKind: NeverFits,
			want: []string{
				"2 nodes (dgx-h100-0, dgx-h100-1) had untolerated taint {dedicated: inference}",
			},
		},
		"nodes with too few devices come before nodes whose devices do not match": {
			inventory: func(t testing.TB) *Inventory { return inventoryOf(t, "l4-inference", "a100-mig") },
			pod:       makePod("infer", "ml").Obj(),
			claim:     makeClaim().Exactly("gpu", fleetgen.ClassGPU, 3, l4).Obj(),
			wantKind:  NeverFits,
			want: []string{
				"2 nodes (l4-inference-0, l4-inference-1) have 1 devices of class gpu.nvidia.com matching request gpu (needs 3)",
				"2 nodes (l4-inference-2, l4-inference-3) have 2 devices of class gpu.nvidia.com matching request gpu (needs 3)",
				"2 nodes (a100-mig-0, a100-mig-1) have 0 devices of class gpu.nvidia.com matching request gpu (needs 3)",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			snap, err := NewSnapshot(tc.inventory(t), 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			got := NewChecker(Options{}).Check(t.Context(), snap, tc.pod, []*resourceapi.ResourceClaimSpec{tc.claim})
			if got.Kind != tc.wantKind {
				t.Fatalf("kind: want %s, got %s (reasons %q)", tc.wantKind, got.Kind, got.Reasons)
			}
			if len(got.Reasons) < len(tc.want) {
				t.Fatalf("want at least %d reasons, got:\n%s", len(tc.want), strings.Join(got.Reasons, "\n"))
			}
			if diff := cmp.Diff(tc.want, got.Reasons[:len(tc.want)]); diff != "" {
				t.Errorf("first reasons (-want,+got):\n%s\nall:\n%s", diff, strings.Join(got.Reasons, "\n"))
			}
		})
	}
}

// withCPU makes the pod's one container ask for cpus CPUs.
func withCPU(pod *corev1.Pod, cpus string) *corev1.Pod {
	pod.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpus)},
	}}}
	return pod
}
