package feasibility

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/feasibility/signature"
	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
)

// TestAutoscaledAnswersAreCachedPerSnapshotAndShape: one Checker answers
// for the fleet each snapshot was built from — a snapshot derived from one
// (a reservation held) shares its answer, a new one of other nodes has its
// own — and for each pod's node selection: a pod pinned off the pool's
// nodes gets no pool where a pod that may go anywhere gets one.
func TestAutoscaledAnswersAreCachedPerSnapshotAndShape(t *testing.T) {
	build := func(nodes int, pooled bool) *Snapshot {
		f := fleetgen.Synthetic(nodes)
		if pooled {
			for _, n := range f.Nodes {
				n.Labels[v1alpha1.KarpenterNodePoolLabel] = "gpu"
			}
		}
		snap, err := NewSnapshot(inventoryFrom(f), 1, DefaultFeatures())
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	legacy := makePod("p", "ns").Obj()
	legacy.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}
	in := AutoscaledInput{Labels: []string{v1alpha1.KarpenterNodePoolLabel}, Legacy: legacy, Translated: makePod("p", "ns").Obj(), Claims: alignedH100()}
	pinned := in
	pinned.Translated = makePod("p", "ns").NodeSelector(signature.HostnameLabel, "node-00001").Obj() // an A100 node: no H100 there

	c := NewChecker(Options{})
	pooled := build(8, true)
	want := AutoscaledPool{Label: v1alpha1.KarpenterNodePoolLabel, Pool: "gpu", Node: "node-00000", Nodes: 2}
	for name, tc := range map[string]struct {
		snap *Snapshot
		in   AutoscaledInput
		want AutoscaledPool
	}{
		"the pool's DGX nodes serve the pod":               {snap: pooled, in: in, want: want},
		"a snapshot derived from it shares the answer":     {snap: pooled.WithClaims(nil, 2), in: in, want: want},
		"a pod pinned to a node without H100 gets no pool": {snap: pooled, in: pinned},
		"a new snapshot of other nodes has its own":        {snap: build(4, true), in: in, want: AutoscaledPool{Label: v1alpha1.KarpenterNodePoolLabel, Pool: "gpu", Node: "node-00000", Nodes: 1}},
		"a new snapshot of nodes in no pool has none":      {snap: build(8, false), in: in},
		"labels the nodes do not carry name no pool":       {snap: pooled, in: AutoscaledInput{Labels: []string{"eks.amazonaws.com/nodegroup"}, Legacy: legacy, Translated: in.Translated, Claims: in.Claims}},
	} {
		t.Run(name, func(t *testing.T) {
			for range 2 { // computed, then from the cache
				if got := c.Autoscaled(t.Context(), tc.snap, tc.in); got != tc.want {
					t.Fatalf("%+v, want %+v", got, tc.want)
				}
			}
		})
	}
}

// TestAutoscaledNodesRunThePodAsSubmitted: a pool's DRA nodes that could
// serve the translation run the pod as submitted only where DeviceClasses
// map its extended resource (extendedResourceName, KEP-5004) and the pod's
// own node filters admit them; device-plugin nodes of a pool that
// advertise it do.
func TestAutoscaledNodesRunThePodAsSubmitted(t *testing.T) {
	gpu := func(n string) *corev1.Pod {
		p := makePod("p", "ns").Obj()
		p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}}}}
		return p
	}
	build := func(t *testing.T, mapped, devicePlugin bool) *Snapshot {
		f := fleetgen.Synthetic(8)
		inv := inventoryFrom(f)
		for i, n := range inv.Nodes {
			n = n.DeepCopy()
			n.Labels[v1alpha1.KarpenterNodePoolLabel] = "gpu"
			if devicePlugin && n.Name == "node-00002" { // an L4 node: no H100 for the translation
				n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("8")
			}
			inv.Nodes[i] = n
		}
		if mapped {
			c := f.Classes[0].DeepCopy()
			c.Name = "gpu-by-extended-resource"
			c.Spec.ExtendedResourceName = new("nvidia.com/gpu")
			inv.Classes = append(inv.Classes, c)
		}
		snap, err := NewSnapshot(inv, 1, DefaultFeatures())
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	for name, tc := range map[string]struct {
		mapped, devicePlugin bool
		legacy               *corev1.Pod
		want                 AutoscaledPool
	}{
		"DRA nodes alone run only the translation": {
			legacy: gpu("1"), want: AutoscaledPool{Label: v1alpha1.KarpenterNodePoolLabel, Pool: "gpu", Node: "node-00000", Nodes: 2},
		},
		"a class that maps nvidia.com/gpu makes them run the pod as submitted": {
			mapped: true, legacy: gpu("1"), want: AutoscaledPool{Label: v1alpha1.KarpenterNodePoolLabel, Pool: "gpu", Node: "node-00000", Nodes: 2, AsSubmitted: 2},
		},
		"not where the pod as submitted selects other nodes": {
			mapped: true, legacy: func() *corev1.Pod {
				p := gpu("1")
				p.Spec.NodeSelector = map[string]string{signature.HostnameLabel: "node-00001"}
				return p
			}(),
			want: AutoscaledPool{Label: v1alpha1.KarpenterNodePoolLabel, Pool: "gpu", Node: "node-00000", Nodes: 2},
		},
		"a device-plugin node of the pool runs it as submitted, and is named first": {
			devicePlugin: true, legacy: gpu("1"), want: AutoscaledPool{Label: v1alpha1.KarpenterNodePoolLabel, Pool: "gpu", Node: "node-00002", Nodes: 3, AsSubmitted: 1},
		},
		"not when it offers less than the pod asks": {
			devicePlugin: true, legacy: gpu("9"), want: AutoscaledPool{Label: v1alpha1.KarpenterNodePoolLabel, Pool: "gpu", Node: "node-00000", Nodes: 2},
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := AutoscaledInput{Labels: []string{v1alpha1.KarpenterNodePoolLabel}, Legacy: tc.legacy, Translated: makePod("p", "ns").Obj(), Claims: alignedH100()}
			if got := NewChecker(Options{}).Autoscaled(t.Context(), build(t, tc.mapped, tc.devicePlugin), in); got != tc.want {
				t.Errorf("%+v, want %+v", got, tc.want)
			}
		})
	}
}
