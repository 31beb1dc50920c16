package suite

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

// karpenterPool publishes the fleets with every node labelled as Karpenter
// labels the nodes of its NodePool "gpu", removed when the test ends, and
// returns their node names by fleet.
func karpenterPool(t *testing.T, fleets ...string) []map[string]bool {
	t.Helper()
	prefix := fmt.Sprintf("t%d", time.Now().UnixNano()%1_000_000)
	var out []map[string]bool
	for _, f := range fleets {
		inv, err := cluster.ReadFleet(filepath.Join(fleetsDir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range inv.Nodes {
			n.Labels[v1alpha1.KarpenterNodePoolLabel] = "gpu"
		}
		fleet, err := tc.PublishInventory(t.Context(), inv, cluster.WithNamePrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), cluster.PollTimeout)
			defer cancel()
			if err := fleet.Remove(ctx); err != nil {
				t.Errorf("remove fleet: %v", err)
			}
		})
		out = append(out, nodeNames([]*cluster.Fleet{fleet}))
	}
	waitInventory(t)
	return out
}

// TestAPodInAKarpenterPoolNeverWaitsForDRA: DGX H100 nodes (DRA) and A100
// device-plugin nodes, all in the Karpenter NodePool "gpu". With every DRA
// GPU taken, a pod of a namespace labelled claimbridge.io/when-dra-busy=Wait
// stays as submitted — its warning and its claimbridge.io/reason say
// AutoscalerIgnoresClaims, Wait acting as KeepLegacy — and is bound to a
// device-plugin node. Once the policy says the autoscalers provision for
// claims (autoscaling.draAware), the same pod is translated and waits
// Pending for DRA devices (DRABusyWaiting).
func TestAPodInAKarpenterPoolNeverWaitsForDRA(t *testing.T) {
	ns, _ := setup(t, "enforce")
	nodes := karpenterPool(t, "dgx-h100", "legacy-gfd")
	dra, legacy := nodes[0], nodes[1]
	takeEveryDRAGPU(t, ns, dra)

	waitNS := tc.Namespace(t, "karpenter-wait-", map[string]string{cluster.ModeLabel: "enforce", api.LabelWhenDRABusy: string(v1alpha1.WhenDRABusyWait)})
	pod := builders.MakePod("late", waitNS).Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
	got, warns := create(t, pod)
	if _, ok := got.Annotations[api.AnnotationTemplate]; ok || len(got.Spec.ResourceClaims) > 0 {
		t.Fatalf("the pod was translated to wait in a Karpenter pool; warnings %q", warns)
	}
	if code := got.Annotations[api.AnnotationReason]; code != string(decide.ReasonAutoscalerIgnoresClaims) {
		t.Errorf("%s=%q, want %s", api.AnnotationReason, code, decide.ReasonAutoscalerIgnoresClaims)
	}
	if !slices.ContainsFunc(warns, func(w string) bool {
		return strings.Contains(w, "AutoscalerIgnoresClaims") && strings.Contains(w, "autoscaling.draAware")
	}) {
		t.Errorf("warnings %q do not say why the pod stays as submitted", warns)
	}
	if msg := got.Annotations[api.AnnotationDecisionMessage]; !strings.Contains(msg, "karpenter.sh/nodepool=gpu") || !strings.Contains(msg, "Wait acts as KeepLegacy") {
		t.Errorf("the decision's message %q does not name the pool and the rule", msg)
	}
	if p := bound(t, waitNS, "late"); !legacy[p.Spec.NodeName] {
		t.Errorf("late was bound to %s, not a device-plugin node", p.Spec.NodeName)
	}

	tp := defaultPolicyDocument()
	tp.Metadata.Name = "autoscalers-provision-for-claims"
	tp.Spec.Autoscaling.DRAAware = true
	usePolicy(t, tp)
	pod = builders.MakePod("waits", waitNS).Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
	got, warns = create(t, pod)
	if _, ok := got.Annotations[api.AnnotationTemplate]; !ok {
		t.Fatalf("with autoscaling.draAware the pod of a Wait namespace was not translated; warnings %q", warns)
	}
	if !slices.ContainsFunc(warns, func(w string) bool { return strings.Contains(w, "DRABusyWaiting") }) {
		t.Errorf("warnings %q do not say the pod waits", warns)
	}
	// The scheduler has had time to try it: the devices it waits for are taken.
	time.Sleep(3 * time.Second)
	if p, err := client.CoreV1().Pods(waitNS).Get(t.Context(), "waits", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Errorf("the waiting pod: %v, bound to %q; want it Pending", err, p.Spec.NodeName)
	}
}

// TestADetectedKarpenterThatProvisionsForClaimsLetsThePodWait: the fleet of
// TestAPodInAKarpenterPoolNeverWaitsForDRA, every DRA GPU taken. While the
// cluster runs no Karpenter, the pool keeps Karpenter's default (it ignores
// claims) and a pod of a Wait namespace stays as submitted
// (AutoscalerIgnoresClaims). Once a Karpenter Deployment with
// IGNORE_DRA_REQUESTS=false runs in the cluster, the webhook detects it
// (read-only, without any policy change) and the same pod is translated to
// wait for DRA; without it again, it stays as submitted.
func TestADetectedKarpenterThatProvisionsForClaimsLetsThePodWait(t *testing.T) {
	ns, _ := setup(t, "enforce")
	nodes := karpenterPool(t, "dgx-h100", "legacy-gfd")
	dra := nodes[0]
	takeEveryDRAGPU(t, ns, dra)
	waitNS := tc.Namespace(t, "karpenter-detect-", map[string]string{cluster.ModeLabel: "enforce", api.LabelWhenDRABusy: string(v1alpha1.WhenDRABusyWait)})
	decided := func(ctx context.Context) (string, error) {
		probe := builders.MakePod("probe", waitNS).Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
		got, err := client.CoreV1().Pods(waitNS).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return "", err
		}
		if _, translated := got.Annotations[api.AnnotationTemplate]; translated {
			return "translated", nil
		}
		return got.Annotations[api.AnnotationReason], nil
	}
	if code, err := decided(t.Context()); err != nil || code != string(decide.ReasonAutoscalerIgnoresClaims) {
		t.Fatalf("without Karpenter in the cluster: %q (%v), want %s", code, err, decide.ReasonAutoscalerIgnoresClaims)
	}

	karpenterNS := tc.Namespace(t, "karpenter-", nil)
	labels := map[string]string{"app": "karpenter"}
	k := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "karpenter"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: "public.ecr.aws/karpenter/controller:1.14.1",
				Env: []corev1.EnvVar{{Name: "IGNORE_DRA_REQUESTS", Value: "false"}}}}},
		}},
	}
	if _, err := client.AppsV1().Deployments(karpenterNS).Create(t.Context(), k, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	removed := false
	remove := func() {
		if removed {
			return
		}
		removed = true
		if err := client.AppsV1().Deployments(karpenterNS).Delete(context.Background(), k.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete the Karpenter Deployment: %v", err)
		}
	}
	t.Cleanup(func() {
		remove()
		// The tests after this one find Karpenter's default again.
		time.Sleep(3 * platformRefresh)
	})
	eventually(t, "the webhook detects that Karpenter provisions for claims: the pod is translated to wait for DRA", func(ctx context.Context) (bool, error) {
		code, err := decided(ctx)
		return code == "translated", err
	})
	remove()
	eventually(t, "the webhook detects that no Karpenter provisions for claims any more", func(ctx context.Context) (bool, error) {
		code, err := decided(ctx)
		return code == string(decide.ReasonAutoscalerIgnoresClaims), err
	})
}

// takeEveryDRAGPU binds two pods of 8 GPUs to the two DRA nodes of the
// dgx-h100 fleet: every DRA GPU is taken.
func takeEveryDRAGPU(t *testing.T, ns string, dra map[string]bool) {
	t.Helper()
	full := builders.MakePod("", ns).Container("trainer").Limit("nvidia.com/gpu", "8").Obj()
	for i := range 2 {
		full.Name = fmt.Sprintf("full-%d", i)
		create(t, full)
		if p := bound(t, ns, full.Name); !dra[p.Spec.NodeName] {
			t.Fatalf("%s was bound to %s, not a DRA node", p.Name, p.Spec.NodeName)
		}
	}
}
