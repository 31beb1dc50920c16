package suite

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

// TestWithoutExtendedResourceTolerationAPlainGPUPodIsNeverBoundToATaintedGPUNode:
// the suite's control plane runs kube-apiserver's default admission plugins,
// without ExtendedResourceToleration, as most clusters do. A plain
// `nvidia.com/gpu: 1` pod that tolerates nothing, in an enforce namespace,
// gets no toleration from the cluster and none from claimbridge: with only
// GPU nodes tainted nvidia.com/gpu:NoSchedule (the gke-l4 fleet) it stays as
// submitted and Pending, where the scheduler leaves the pod as submitted;
// with an untainted DRA GPU fleet beside them (l4-inference) it is
// translated and bound there, never to a tainted node. (With the plugin, the
// same kind of pod is translated onto the tainted node: faults'
// TestGKEPodWithoutTolerationsIsTranslatedOntoTheTaintedGPUNode.)
func TestWithoutExtendedResourceTolerationAPlainGPUPodIsNeverBoundToATaintedGPUNode(t *testing.T) {
	ns, fl := setup(t, "enforce", "gke-l4")
	tainted := fl[0].NodeNames()
	plain := func(name string) *corev1.Pod {
		return builders.MakePod(name, ns).Container("cuda").Limit("nvidia.com/gpu", "1").Obj()
	}
	// The control plane adds no toleration by itself: the pod as stored
	// without the webhook has none.
	if tols := cluster.GPUTolerations(asStored(t, tc.Namespace(t, "plain-", nil), plain("probe")).Tolerations); len(tols) != 0 {
		t.Fatalf("kube-apiserver added tolerations %v: the control plane runs ExtendedResourceToleration, the test proves nothing", tols)
	}
	for _, n := range tainted {
		node, err := client.CoreV1().Nodes().Get(t.Context(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(node.Spec.Taints, func(tn corev1.Taint) bool {
			return tn.Key == "nvidia.com/gpu" && tn.Effect == corev1.TaintEffectNoSchedule
		}) {
			t.Fatalf("node %s is not tainted nvidia.com/gpu:NoSchedule: the test proves nothing", n)
		}
	}

	// Only tainted GPU nodes: kept as submitted, Pending.
	alone, ws := create(t, plain("alone"))
	if hasClaim(alone) || len(cluster.GPUTolerations(alone.Spec.Tolerations)) != 0 {
		t.Fatalf("alone was translated or given tolerations: claims %v, tolerations %v, warnings %q", alone.Spec.ResourceClaims, alone.Spec.Tolerations, ws)
	}
	if !warned(ws, "Infeasible: kept as submitted") {
		t.Errorf("warnings %q do not say the pod is kept as submitted because no DRA node can take it", ws)
	}
	eventually(t, "alone unschedulable", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, alone.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("alone bound to %s", p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})

	// An untainted DRA GPU fleet beside the tainted one: translated, bound
	// there.
	untainted, err := tc.ApplyFleet(t.Context(), filepath.Join(fleetsDir, "l4-inference"), cluster.WithNamePrefix(fmt.Sprintf("u%d", time.Now().UnixNano()%1_000_000)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeFleet(t, untainted) })
	waitInventory(t)
	got, ws := create(t, plain("beside"))
	if !hasClaim(got) {
		t.Fatalf("beside was not translated: %q", ws)
	}
	if len(cluster.GPUTolerations(got.Spec.Tolerations)) != 0 {
		t.Errorf("beside was given tolerations %v", got.Spec.Tolerations)
	}
	p := bound(t, ns, got.Name)
	if slices.Contains(tainted, p.Spec.NodeName) || !slices.Contains(untainted.NodeNames(), p.Spec.NodeName) {
		t.Errorf("beside bound to %s, want an untainted node of %v", p.Spec.NodeName, untainted.NodeNames())
	}
	for _, r := range allocation(t, p).Devices.Results {
		if r.Pool != p.Spec.NodeName {
			t.Errorf("device %s/%s is not on %s", r.Pool, r.Device, p.Spec.NodeName)
		}
	}
}
