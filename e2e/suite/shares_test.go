package suite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

// TestTimeSlicedGPUSharesOnTheRealScheduler: on a fleet of one A100 that
// the NVIDIA DRA driver publishes with 4 consumable shares (the device
// plugin's time-slicing replicas 4) and one A100 published whole
// (examples/fleets/a100-shared), kube-apiserver, kube-controller-manager
// and kube-scheduler 1.37:
//
//   - a Deployment of 6 pods that each ask for nvidia.com/gpu.shared: 1 is
//     translated pod by pod into one share; the webhook tells 4 that they
//     fit now and 2 that they wait for DRA devices (DRABusyWaiting); 4 are
//     bound to the shared node, each claim allocated one share of its one
//     GPU (shares consumed 1, a share ID of its own), and 2 stay Pending:
//     none takes the whole GPU;
//   - a pod that asks for one whole GPU is bound to the whole GPU; a second
//     one waits while the shared GPU has shares taken; once they are gone a
//     whole GPU is bound to the shared GPU with all 4 of its shares.
func TestTimeSlicedGPUSharesOnTheRealScheduler(t *testing.T) {
	start := time.Now()
	ns, fl := setup(t, "enforce", "a100-shared")
	var sharedNode, wholeNode string
	for _, n := range fl[0].NodeNames() {
		switch {
		case strings.HasSuffix(n, "a100-shared-0"):
			sharedNode = n
		case strings.HasSuffix(n, "a100-whole-0"):
			wholeNode = n
		}
	}
	if sharedNode == "" || wholeNode == "" {
		t.Fatalf("fleet nodes %v: no a100-shared-0 or a100-whole-0", fl[0].NodeNames())
	}

	const app = "notebooks"
	tmpl := builders.MakePod("", "").Container("jupyter").Limit("nvidia.com/gpu.shared", "1").Obj()
	_, err := client.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: app},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](6), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}}, Spec: tmpl.Spec}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = client.AppsV1().Deployments(ns).Delete(ctx, app, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		_ = client.CoreV1().Pods(ns).DeleteCollection(ctx, *metav1.NewDeleteOptions(0), metav1.ListOptions{})
	})

	// 4 bound to shares of the one shared GPU.
	var boundPods []corev1.Pod
	eventually(t, "4 of the 6 shares bound, 2 Pending", func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return false, err
		}
		boundPods = nil
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				boundPods = append(boundPods, p)
			}
		}
		return len(pods.Items) == 6 && len(boundPods) == 4, nil
	})
	t.Logf("6 one-share pods created, 4 bound in %s (from the test's start, fleet published)", time.Since(start).Round(time.Millisecond))
	shareIDs := map[string]bool{}
	for _, p := range boundPods {
		if _, ok := p.Annotations[api.AnnotationTemplate]; !ok {
			t.Errorf("%s is bound without being translated (annotations %v)", p.Name, p.Annotations)
		}
		if p.Spec.NodeName != sharedNode {
			t.Errorf("%s asks for a share and is bound to %s, not the shared node %s", p.Name, p.Spec.NodeName, sharedNode)
			continue
		}
		alloc := allocation(t, &p)
		if len(alloc.Devices.Results) != 1 {
			t.Errorf("%s: %d devices allocated, want one share", p.Name, len(alloc.Devices.Results))
			continue
		}
		r := alloc.Devices.Results[0]
		if !strings.HasSuffix(r.Pool, "a100-shared-0") || r.Device != "gpu-0" || r.ShareID == nil || !consumed(r, 1) {
			t.Errorf("%s: allocated %s/%s share %v consuming %v, want one share of a100-shared-0's gpu-0", p.Name, r.Pool, r.Device, r.ShareID, r.ConsumedCapacity)
			continue
		}
		shareIDs[string(*r.ShareID)] = true
	}
	if len(shareIDs) != 4 {
		t.Errorf("%d distinct share IDs, want 4: the 4 claims share one GPU", len(shareIDs))
	}
	// The webhook counted the shares it had handed out: 4 pods were told
	// they fit now, 2 that they wait. kube-scheduler places them in its
	// own order, so the 2 left Pending need not be the 2 told to wait.
	time.Sleep(3 * time.Second)
	pods, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	fitsNow, waits, stillPending := 0, 0, 0
	for _, p := range pods.Items {
		msg := p.Annotations[api.AnnotationDecisionMessage]
		if _, ok := p.Annotations[api.AnnotationTemplate]; !ok {
			t.Errorf("%s was not translated: %q", p.Name, msg)
		}
		switch {
		case strings.Contains(msg, "(FitsNow,"):
			fitsNow++
		case strings.Contains(msg, "(FitsWhenFree,") && strings.Contains(msg, string(decide.ReasonDRABusyWaiting)):
			waits++
		default:
			t.Errorf("%s: decision %q", p.Name, msg)
		}
		if p.Spec.NodeName == "" {
			stillPending++
		} else if p.Spec.NodeName != sharedNode {
			t.Errorf("%s was bound to %s: a share took the whole GPU", p.Name, p.Spec.NodeName)
		}
	}
	if fitsNow != 4 || waits != 2 || stillPending != 2 {
		t.Errorf("%d pods told they fit now, %d that they wait (DRABusyWaiting), %d Pending after 3 s; want 4, 2 and 2", fitsNow, waits, stillPending)
	}
	if held := allocatedOn(t, ns, wholeNode); len(held) > 0 {
		t.Errorf("shares took the whole GPU of %s: %v", wholeNode, held)
	}

	// Whole GPUs: the first takes the GPU published whole, the second waits
	// while the shared GPU has shares taken.
	whole := func(name string) *corev1.Pod {
		return builders.MakePod(name, ns).Container("train").Limit("nvidia.com/gpu", "1").Obj()
	}
	first, ws := create(t, whole("whole-0"))
	if !hasClaim(first) || !warned(ws, "claimbridge: Translated") {
		t.Fatalf("a whole GPU was not translated: warnings %q", ws)
	}
	if p := bound(t, ns, "whole-0"); p.Spec.NodeName != wholeNode {
		t.Errorf("a whole GPU was bound to %s, want the whole GPU of %s", p.Spec.NodeName, wholeNode)
	} else if r := allocation(t, p).Devices.Results[0]; r.ShareID != nil || !strings.HasSuffix(r.Pool, "a100-whole-0") {
		t.Errorf("the whole GPU's allocation %+v, want a100-whole-0's GPU with no share", r)
	}
	second, ws := create(t, whole("whole-1"))
	if !hasClaim(second) || !warned(ws, string(decide.ReasonDRABusyWaiting)) {
		t.Fatalf("the second whole GPU: translated %v, warnings %q; want it translated, waiting", hasClaim(second), ws)
	}
	time.Sleep(3 * time.Second)
	if p, err := client.CoreV1().Pods(ns).Get(t.Context(), "whole-1", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Fatalf("the second whole GPU: %v, bound to %q while the shared GPU has 4 shares taken; want Pending", err, p.Spec.NodeName)
	}

	// The shares go, and the waiting whole GPU with them: a whole GPU
	// created now takes all 4 shares of the shared GPU.
	freed := time.Now()
	podGone(t.Context(), ns, "whole-1")
	if err := client.AppsV1().Deployments(ns).Delete(t.Context(), app, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the shares' pods and claims gone", func(ctx context.Context) (bool, error) {
		// No kubelet confirms a graceful deletion here: the pods go at once.
		if err := client.CoreV1().Pods(ns).DeleteCollection(ctx, *metav1.NewDeleteOptions(0), metav1.ListOptions{LabelSelector: "app=" + app}); err != nil {
			return false, err
		}
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil || len(pods.Items) > 0 {
			return false, err
		}
		return len(allocatedOn(t, ns, sharedNode)) == 0, nil
	})
	create(t, whole("whole-2"))
	p := bound(t, ns, "whole-2")
	if p.Spec.NodeName != sharedNode {
		t.Fatalf("a whole GPU created once the shares were free was bound to %s, want the shared GPU of %s", p.Spec.NodeName, sharedNode)
	}
	r := allocation(t, p).Devices.Results[0]
	if !strings.HasSuffix(r.Request, "/4-shares") || !consumed(r, 4) {
		t.Errorf("the whole GPU on the shared one: %+v, want all 4 shares (alternative 4-shares)", r)
	}
	t.Logf("a whole GPU bound to all 4 shares %s after the shares were freed; the test took %s", time.Since(freed).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// consumed: the result consumed n of its device's shares.
func consumed(r resourceapi.DeviceRequestAllocationResult, n int64) bool {
	q, ok := r.ConsumedCapacity["shares"]
	return ok && q.Value() == n
}

// allocatedOn lists the allocated claims of the namespace that hold a
// device of the node's pool ("<claim>: <device>").
func allocatedOn(t *testing.T, ns, node string) []string {
	t.Helper()
	claims, err := client.ResourceV1().ResourceClaims(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range claims.Items {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Pool == node {
				out = append(out, fmt.Sprintf("%s: %s", c.Name, r.Device))
			}
		}
	}
	return out
}
