package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

// twoGPUs asks for two GPUs the device-plugin way, with no node labels:
// DGX H100 nodes (DRA) and A100 device-plugin nodes both serve it.
func twoGPUs(ns, name string, gated bool) *corev1.Pod {
	p := builders.MakePod(name, ns).Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
	if gated {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "faults.claimbridge.io/hold"}}
	}
	return p
}

// applyFleet publishes an example fleet for the test.
func applyFleet(t *testing.T, name string) *cluster.Fleet {
	t.Helper()
	fleet, err := tc.ApplyFleet(t.Context(), filepath.Join(rootDir, "examples", "fleets", name), cluster.WithNamePrefix(fmt.Sprintf("r%d", time.Now().UnixNano()%100_000)))
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
	return fleet
}

// mixedFleet publishes two DGX H100 nodes (16 DRA GPUs) and two A100
// device-plugin nodes (16 GPUs), and returns their node names.
func mixedFleet(t *testing.T) (onDRA, onLegacy map[string]bool) {
	t.Helper()
	onDRA, onLegacy = map[string]bool{}, map[string]bool{}
	for _, n := range applyFleet(t, "dgx-h100").NodeNames() {
		onDRA[n] = true
	}
	for _, n := range applyFleet(t, "legacy-gfd").NodeNames() {
		onLegacy[n] = true
	}
	return onDRA, onLegacy
}

// TestDevicesHeldForPendingPodsSurviveARestart: 8 translated pods hold the
// 16 DRA GPUs while they wait (scheduling gates stand for a scheduler that
// has not got to them yet); claimbridge is killed and restarted, losing its
// record of them; the 8 pods that follow still see those GPUs as taken —
// the new process takes them over from the pending pods it finds — and stay
// on the device plugin; once the gates go, every pod is bound and none is
// Pending.
func TestDevicesHeldForPendingPodsSurviveARestart(t *testing.T) {
	tc.DumpLogsOnFailure(t)
	ns := tc.Namespace(t, "restart-", map[string]string{cluster.ModeLabel: "enforce"})
	onDRA, onLegacy := mixedFleet(t)
	eventually(t, "a two-GPU pod translated", func(ctx context.Context) (bool, error) {
		got, _, err := createPod(ctx, twoGPUs(ns, "probe", false), true)
		return err == nil && translated(got), nil
	})

	for i := range 8 {
		got, ws, err := createPod(t.Context(), twoGPUs(ns, fmt.Sprintf("held-%d", i), true), false)
		if err != nil {
			t.Fatal(err)
		}
		if !translated(got) {
			t.Fatalf("held-%d was not translated: %q", i, ws)
		}
	}

	p := cb.Process()
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
		t.Fatalf("kill claimbridge: %v", err)
	}
	<-p.Exited()
	if err := cb.Restart(t.Context()); err != nil {
		t.Fatalf("restart claimbridge: %v", err)
	}

	for i := range 8 {
		got, ws, err := createPod(t.Context(), twoGPUs(ns, fmt.Sprintf("after-%d", i), false), false)
		if err != nil {
			t.Fatal(err)
		}
		if translated(got) {
			t.Errorf("after-%d was translated after the restart while the pending pods hold every DRA GPU: %q", i, ws)
		}
	}

	for i := range 8 {
		name := fmt.Sprintf("held-%d", i)
		pod, err := client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Spec.SchedulingGates = nil
		if _, err := client.CoreV1().Pods(ns).Update(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every pod bound", func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		bound := 0
		for _, p := range pods.Items {
			switch {
			case p.Spec.NodeName == "":
			case translated(&p) && onDRA[p.Spec.NodeName], legacy(&p) && onLegacy[p.Spec.NodeName]:
				bound++
			default:
				return false, fmt.Errorf("pod %s (translated: %t) was bound to %s", p.Name, translated(&p), p.Spec.NodeName)
			}
		}
		return bound == 16, nil
	})
	if got := takenOver(t); got < 8 {
		t.Errorf("claimbridge_reservations_taken_over_total = %d after the restart, want at least 8", got)
	}
}

// takenOver reads claimbridge_reservations_taken_over_total from cb's /metrics.
func takenOver(t *testing.T) int {
	t.Helper()
	return takenOverAt(t, cb.MetricsAddr)
}

// takenOverAt reads claimbridge_reservations_taken_over_total from a
// replica's /metrics.
func takenOverAt(t *testing.T, addr string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "claimbridge_reservations_taken_over_total "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("parse %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatal("no claimbridge_reservations_taken_over_total in /metrics")
	return 0
}
