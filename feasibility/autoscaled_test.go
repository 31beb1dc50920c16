package feasibility

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
	"github.com/claimbridge/claimbridge/translate"
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
				n.Labels[translate.KarpenterNodePoolLabel] = "gpu"
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
	in := AutoscaledInput{Labels: []string{translate.KarpenterNodePoolLabel}, Legacy: legacy, Translated: makePod("p", "ns").Obj(), Claims: alignedH100()}
	pinned := in
	pinned.Translated = makePod("p", "ns").NodeSelector(hostnameLabel, "node-00001").Obj() // an A100 node: no H100 there

	c := NewChecker(Options{})
	pooled := build(8, true)
	want := AutoscaledPool{Label: translate.KarpenterNodePoolLabel, Pool: "gpu", Node: "node-00000", Nodes: 2}
	for name, tc := range map[string]struct {
		snap *Snapshot
		in   AutoscaledInput
		want AutoscaledPool
	}{
		"the pool's DGX nodes serve the pod":               {snap: pooled, in: in, want: want},
		"a snapshot derived from it shares the answer":     {snap: pooled.WithClaims(nil, 2), in: in, want: want},
		"a pod pinned to a node without H100 gets no pool": {snap: pooled, in: pinned},
		"a new snapshot of other nodes has its own":        {snap: build(4, true), in: in, want: AutoscaledPool{Label: translate.KarpenterNodePoolLabel, Pool: "gpu", Node: "node-00000", Nodes: 1}},
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
