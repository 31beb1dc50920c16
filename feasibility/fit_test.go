package feasibility

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestVerdictCountsWhatThePodAsksBesidesItsClaims: a node that cannot hold
// the pod's CPU, memory, hugepages or an extended resource it still asks for
// never serves it, whatever its devices; with the inventory's pods, what
// they use is not free.
func TestVerdictCountsWhatThePodAsksBesidesItsClaims(t *testing.T) {
	corpus := func(t testing.TB) *Inventory {
		inv, err := LoadInventory("testdata/placement/fleets/gpus")
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	pod := func(limits corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Limits: limits}}}}}
	}
	q := resource.MustParse
	// Every CPU of l4-0 (7.5 allocatable) taken by a bound pod.
	busyL4 := func(t testing.TB) *Inventory {
		inv := corpus(t)
		inv.Pods = []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "hog", Namespace: "ns"},
			Spec: corev1.PodSpec{NodeName: "l4-0", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("7500m")}}}}}}}
		return inv
	}
	anL4 := makeClaim().Exactly("gpu", "gpu.nvidia.com", 1, l4).Obj()
	anyGPU := makeClaim().Exactly("gpu", "gpu.nvidia.com", 1).Obj()
	for name, tc := range map[string]struct {
		inventory func(testing.TB) *Inventory
		pod       *corev1.Pod
		claim     *resourceapi.ResourceClaimSpec
		wantKind  VerdictKind
		wantNode  string
		wantWhy   string
	}{
		"a pod asking for 5000 CPUs fits no node": {
			inventory: corpus, pod: pod(corev1.ResourceList{corev1.ResourceCPU: q("5000")}),
			wantKind: NeverFits, wantWhy: "had insufficient cpu (the pod asks for 5k, 191500m allocatable)",
		},
		"hugepages no node offers": {
			inventory: corpus, pod: pod(corev1.ResourceList{"hugepages-2Mi": q("1Gi"), corev1.ResourceMemory: q("2Gi")}),
			wantKind: NeverFits, wantWhy: "had insufficient hugepages-2Mi",
		},
		"EFA interfaces only the p5 node has": {
			inventory: corpus, pod: pod(corev1.ResourceList{"vpc.amazonaws.com/efa": q("4")}),
			wantKind: FitsNow, wantNode: "p5-0",
		},
		"HAMi's gpumem, which no node advertises": {
			inventory: corpus, pod: pod(corev1.ResourceList{"nvidia.com/gpumem": q("4000")}),
			wantKind: NeverFits, wantWhy: "had insufficient nvidia.com/gpumem",
		},
		"an L4 whose node's CPUs are taken by a running pod fits on the next L4 node": {
			inventory: busyL4, pod: pod(corev1.ResourceList{corev1.ResourceCPU: q("1")}), claim: anL4,
			wantKind: FitsNow, wantNode: "l4-1",
		},
	} {
		t.Run(name, func(t *testing.T) {
			snap, err := NewSnapshot(tc.inventory(t), 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			claim := tc.claim
			if claim == nil {
				claim = anyGPU
			}
			v := NewChecker(Options{}).Check(t.Context(), snap, tc.pod, []*resourceapi.ResourceClaimSpec{claim})
			if v.Kind != tc.wantKind || (tc.wantNode != "" && v.Node != tc.wantNode) {
				t.Fatalf("verdict %s on %q, want %s on %q; reasons %q", v.Kind, v.Node, tc.wantKind, tc.wantNode, v.Reasons)
			}
			if tc.wantWhy != "" && !strings.Contains(strings.Join(v.Reasons, "\n"), tc.wantWhy) {
				t.Errorf("reasons %q, want one saying %q", v.Reasons, tc.wantWhy)
			}
		})
	}
}
