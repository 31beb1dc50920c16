package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

// toLeader forwards in process to the leader's ForwardedPath handler, or
// to nobody (down: no leader known or answering).
type toLeader struct {
	leader admission.Handler
	down   bool
}

func (l toLeader) Leads() bool { return l.leader == nil && !l.down }

func (l toLeader) Forward(ctx context.Context, req admission.Request) (admission.Response, error) {
	if l.down {
		return admission.Response{}, errors.New("no leader answers")
	}
	return l.leader.Handle(ctx, req), nil
}

// twoReplicas admits n two-GPU pods into "prod", alternately on two
// replicas of the mixed fleet that do not see each other's admissions (as
// in the window before a pod reaches the other's informer), from 8
// goroutines, and returns how many were translated.
func twoReplicas(t *testing.T, a, b *fixture, n int) int {
	t.Helper()
	var (
		mu         sync.Mutex
		translated int
		wg         sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			f := a
			if i%2 == 1 {
				f = b
			}
			pod := builders.MakePod("", "prod").Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
			pod.GenerateName = "trainer-"
			req := request(t, admissionv1.Create, pod, false)
			req.UID = types.UID(fmt.Sprintf("admission-%02d", i))
			if resp := f.handler.Handle(t.Context(), req); mutated(t, req, resp) {
				mu.Lock()
				translated++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return translated
}

// TestTwoReplicasNeverHoldTheSameDevices: a burst admitted half by each of
// two replicas. Each holds what it admits; neither sees the other's pods
// yet. Without forwarding they translate more pods than the DRA GPUs
// hold — the stranding of a burst with the chart's two replicas. With the
// replica that does not lead forwarding every admission that would hold
// devices, the leader decides them all: exactly the pods DRA holds are
// translated, the follower holds nothing, and its forwards are counted.
// With the leader down the follower decides itself.
func TestTwoReplicasNeverHoldTheSameDevices(t *testing.T) {
	holds := draHolds(t, newFixture(t, "mixed", mixedWithPods))
	n := holds + 8 // the 16 device-plugin GPUs hold 8 more
	t.Run("each replica alone", func(t *testing.T) {
		a, b := reservingFixture(t), reservingFixture(t)
		if got := twoReplicas(t, a, b, n); got <= holds {
			t.Errorf("two replicas deciding alone translated %d pods; the test expects more than the %d DRA holds (each sees only its own holds)", got, holds)
		}
	})
	t.Run("forwarded to the leader", func(t *testing.T) {
		a, b := reservingFixture(t), reservingFixture(t)
		b.handler.Leader = toLeader{leader: a.handler.Forwarded()}
		a.handler.Leader = toLeader{} // the leader
		if got := twoReplicas(t, a, b, n); got != holds {
			t.Errorf("translated %d pods, want the %d the DRA GPUs hold", got, holds)
		}
		if held := b.inv.Reservations.Len(); held != 0 {
			t.Errorf("the follower holds %d reservations, want none: the leader holds them all", held)
		}
		if held := a.inv.Reservations.Len(); held != holds {
			t.Errorf("the leader holds %d reservations, want %d", held, holds)
		}
		if got := testutil.ToFloat64(b.metrics.AdmissionsForwarded.WithLabelValues("leader")); got == 0 {
			t.Error("the follower counted no admission decided by the leader")
		}
		if got := testutil.ToFloat64(a.metrics.AdmissionsForwarded.WithLabelValues("here")); got != 0 {
			t.Errorf("the leader tried to forward %g admissions", got)
		}
	})
	t.Run("leader down", func(t *testing.T) {
		a, b := reservingFixture(t), reservingFixture(t)
		b.handler.Leader = toLeader{down: true}
		twoReplicas(t, a, b, n)
		if b.inv.Reservations.Len() == 0 || testutil.ToFloat64(b.metrics.AdmissionsForwarded.WithLabelValues("here")) == 0 {
			t.Error("with no leader answering the follower neither decided nor counted its admissions")
		}
	})
}
