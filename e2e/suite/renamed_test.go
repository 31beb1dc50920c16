package suite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

// TestWholeGPUsNeverLandOnARenamedSharedPool: on the placement corpus's
// "renamed" fleet — renamed-t4-0, four T4s the device plugin time-sliced 4
// ways under the renamed nvidia.com/gpu.shared (GPU Feature Discovery's
// product Tesla-T4, replicas 4, strategy time-slicing), which the DRA
// driver publishes with 4 consumable shares each, and whole-a100-0, one
// A100 published whole — a pod that asks for nvidia.com/gpu never ran on
// the pool set aside for shares, and its translation never takes one:
//
//   - the first whole GPU is translated with no all-shares alternative and
//     bound to the A100;
//   - the second is translated too and waits for the A100 (DRABusyWaiting),
//     Pending, while 16 shares of the pool are free: the operator who
//     renamed the pool's resource kept whole GPUs off it, and the
//     translation keeps them off too;
//   - a share (nvidia.com/gpu.shared: 1) is bound to the pool.
func TestWholeGPUsNeverLandOnARenamedSharedPool(t *testing.T) {
	ns, fl := setup(t, "enforce", filepath.Join("..", "..", "feasibility", "testdata", "placement", "fleets", "renamed"))
	var pool, wholeNode string
	for _, n := range fl[0].NodeNames() {
		switch {
		case strings.HasSuffix(n, "renamed-t4-0"):
			pool = n
		case strings.HasSuffix(n, "whole-a100-0"):
			wholeNode = n
		}
	}
	if pool == "" || wholeNode == "" {
		t.Fatalf("fleet nodes %v: no renamed-t4-0 or whole-a100-0", fl[0].NodeNames())
	}
	whole := func(name string) string {
		p, ws := create(t, builders.MakePod(name, ns).Container("train").Limit("nvidia.com/gpu", "1").Obj())
		if !hasClaim(p) {
			t.Fatalf("%s was not translated: warnings %q", name, ws)
		}
		tmpl, err := client.ResourceV1().ResourceClaimTemplates(ns).Get(t.Context(), *p.Spec.ResourceClaims[0].ResourceClaimTemplateName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range tmpl.Spec.Spec.Devices.Requests {
			if r.Exactly == nil || r.Exactly.Capacity != nil {
				t.Errorf("%s: request %s is %+v, want exactly one device and no capacity: no alternative takes the pool's shares", name, r.Name, r)
			}
		}
		return strings.Join(ws, "\n")
	}

	whole("whole-0")
	if p := bound(t, ns, "whole-0"); p.Spec.NodeName != wholeNode {
		t.Errorf("the first whole GPU was bound to %s, want the A100 of %s", p.Spec.NodeName, wholeNode)
	}
	if ws := whole("whole-1"); !strings.Contains(ws, string(decide.ReasonDRABusyWaiting)) {
		t.Errorf("the second whole GPU: warnings %q, want it to wait for a device (%s)", ws, decide.ReasonDRABusyWaiting)
	}
	time.Sleep(3 * time.Second)
	if p, err := client.CoreV1().Pods(ns).Get(t.Context(), "whole-1", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Fatalf("the second whole GPU: %v, bound to %q while the A100 is taken; want Pending, never on the shared pool %s", err, p.Spec.NodeName, pool)
	}

	create(t, builders.MakePod("share", ns).Container("notebook").Limit("nvidia.com/gpu.shared", "1").Obj())
	if p := bound(t, ns, "share"); p.Spec.NodeName != pool {
		t.Errorf("a share was bound to %s, want the shared pool %s", p.Spec.NodeName, pool)
	}
	eventually(t, "the pool holds the share's claim alone", func(ctx context.Context) (bool, error) {
		held := allocatedOn(t, ns, pool)
		for _, h := range held {
			if strings.HasPrefix(h, "whole-") {
				t.Fatalf("a whole GPU's claim holds a device of the shared pool: %v", held)
			}
		}
		return len(held) == 1, nil
	})
}
