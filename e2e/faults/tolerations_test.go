package faults

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

// TestGKEPodWithoutTolerationsIsTranslatedOntoTheTaintedGPUNode: this
// control plane runs ExtendedResourceToleration, as GKE does. A GKE-style
// pod (one GPU by cloud.google.com/gke-accelerator, no tolerations) in an
// enforce namespace reaches the webhook with the toleration the plugin gave
// it (kube-apiserver runs built-in mutating plugins first); claimbridge
// translates it, keeps that toleration and adds none, and kube-scheduler
// binds it to a GKE L4 node tainted nvidia.com/gpu=present:NoSchedule with
// its device allocated there. (Without the plugin, the suite's
// TestWithoutExtendedResourceTolerationAPlainGPUPodIsNeverBoundToATaintedGPUNode.)
func TestGKEPodWithoutTolerationsIsTranslatedOntoTheTaintedGPUNode(t *testing.T) {
	tc.DumpLogsOnFailure(t)
	ns := tc.Namespace(t, "gke-", map[string]string{cluster.ModeLabel: "enforce"})
	fleet := applyFleet(t, "gke-l4")
	want := []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	pod := func(name string) *corev1.Pod {
		return builders.MakePod(name, ns).Container("server").Limit("nvidia.com/gpu", "1").
			NodeSelector("cloud.google.com/gke-accelerator", "nvidia-l4").Obj()
	}

	// The plugin runs: a pod in a namespace claimbridge does not see gets
	// the toleration from kube-apiserver alone.
	off := tc.Namespace(t, "gke-off-", nil)
	plain := pod("plain")
	plain.Namespace = off
	stored, _, err := createPod(t.Context(), plain, true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, cluster.GPUTolerations(stored.Spec.Tolerations)); diff != "" {
		t.Fatalf("the control plane does not add the plugin's toleration (-want,+got):\n%s", diff)
	}

	eventually(t, "claimbridge translates the GKE pod (a dry run)", func(ctx context.Context) (bool, error) {
		got, _, err := createPod(ctx, pod("probe"), true)
		return err == nil && translated(got), err
	})
	got, ws, err := createPod(t.Context(), pod("infer"), false)
	if err != nil {
		t.Fatal(err)
	}
	if !translated(got) {
		t.Fatalf("not translated: %q", ws)
	}
	if diff := cmp.Diff(want, cluster.GPUTolerations(got.Spec.Tolerations)); diff != "" {
		t.Errorf("tolerations of the translated pod: the plugin's, once (-want,+got):\n%s", diff)
	}
	if _, ok := got.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; ok {
		t.Errorf("the translated pod still asks for nvidia.com/gpu")
	}

	var p *corev1.Pod
	eventually(t, "infer bound", func(ctx context.Context) (bool, error) {
		p, err = client.CoreV1().Pods(ns).Get(ctx, got.Name, metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", err
	})
	if !slices.Contains(fleet.NodeNames(), p.Spec.NodeName) {
		t.Fatalf("bound to %s, want a node of %v", p.Spec.NodeName, fleet.NodeNames())
	}
	node, err := client.CoreV1().Nodes().Get(t.Context(), p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(node.Spec.Taints, func(tn corev1.Taint) bool {
		return tn.Key == "nvidia.com/gpu" && tn.Effect == corev1.TaintEffectNoSchedule
	}) {
		t.Errorf("node %s is not tainted nvidia.com/gpu:NoSchedule: the test proves nothing", node.Name)
	}
	eventually(t, "the claim of infer allocated on its node", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, got.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range p.Status.ResourceClaimStatuses {
			if s.Name != api.ClaimName || s.ResourceClaimName == nil {
				continue
			}
			c, err := client.ResourceV1().ResourceClaims(ns).Get(ctx, *s.ResourceClaimName, metav1.GetOptions{})
			if err != nil || c.Status.Allocation == nil {
				return false, err
			}
			for _, r := range c.Status.Allocation.Devices.Results {
				if r.Pool != p.Spec.NodeName {
					t.Errorf("device %s/%s is not on %s", r.Pool, r.Device, p.Spec.NodeName)
				}
			}
			return true, nil
		}
		return false, nil
	})
}
