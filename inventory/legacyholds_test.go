package inventory_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/informertest"
	"github.com/claimbridge/claimbridge/inventory"
)

// A pod kept on the device plugin while DRA was busy counts from its
// admission, in admission order, until its hold expires.
func TestDevicePluginHoldsCountUntilTheyExpire(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := inventory.NewDevicePluginHolds(10 * time.Second)
	first := builders.MakePod("first", "prod").Obj()
	second := builders.MakePod("second", "prod").Obj()
	h.Hold("b", first, now)
	h.Hold("a", second, now.Add(time.Second))
	h.Hold("", second, now) // no admission id: nothing to end it by
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"first", "second"}, names(h.Pods(now.Add(5*time.Second)))); diff != "" {
		t.Errorf("held (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"second"}, names(h.Pods(now.Add(10*time.Second)))); diff != "" {
		t.Errorf("held once the first expired (-want,+got):\n%s", diff)
	}
	h.Seen("a")
	if got := h.Pods(now.Add(5 * time.Second)); len(got) != 0 {
		t.Errorf("held after it was seen: %v", names(got))
	}
}

// The informer's pods take over from a hold: once the pod kept on the
// device plugin shows up, it counts as a pod waiting for the device
// plugin (unbound) and its hold ends; once bound, it is its node's usage
// and waits no more.
func TestAKeptPodInTheInformerEndsItsHold(t *testing.T) {
	inv, client := informertest.Start(t)
	now := time.Now()
	pod := builders.MakePod("trainer-abc", "prod").Container("app").Limit("nvidia.com/gpu", "1").
		Annotation(api.AnnotationDevicePluginHold, "admission-1").Obj()
	waiting := func() []*corev1.Pod {
		w, _ := inv.DevicePluginPods(now)
		return w
	}
	inv.HoldDevicePlugin("admission-1", pod, now)
	if got := len(waiting()); got != 1 {
		t.Fatalf("%d pods wait for the device plugin, want the held one", got)
	}
	if _, err := client.CoreV1().Pods("prod").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the created pod replaces its hold", func() bool {
		w := waiting()
		return len(w) == 1 && w[0] != pod // the informer's copy
	})
	bound := pod.DeepCopy()
	bound.Spec.NodeName = "legacy-0"
	if _, err := client.CoreV1().Pods("prod").Update(t.Context(), bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the bound pod waits no more, and counts on its node", func() bool {
		w, podsOn := inv.DevicePluginPods(now)
		return len(w) == 0 && len(podsOn("legacy-0")) == 1
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
