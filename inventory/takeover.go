package inventory

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/feasibility"
)

// HeldSource is what the reservations read to take over and pick again:
// the fleet, its allocated claims, the translated pods that wait for their
// claims and claimbridge's templates. The informer-backed Inventory is one;
// a static inventory of tests is another.
type HeldSource interface {
	Snapshot(now time.Time) (*feasibility.Snapshot, error)
	// Allocations answers what the allocated claims hold (nil: nothing).
	Allocations() Allocations
	// PendingTranslatedWhere lists, in creation order, the translated pods
	// waiting for their claims that keep keeps.
	PendingTranslatedWhere(keep func(*corev1.Pod) bool) []*corev1.Pod
	Template(namespace, name string) (*resourceapi.ResourceClaimTemplate, bool)
}

// TakeOver holds the devices of translated pods that wait for their claims
// and that no reservation covers (another replica admitted them, or this
// one before a restart): each is checked against the fleet as it stands,
// in creation order, and what the allocator picks for it is held like a
// pod admitted here, for the TTL from its creation: a pod older than that
// is not held (nor checked). A pod that does not fit now is not tried
// again before the reservation TTL. First, the reservations that kube-scheduler's
// allocations overtook are picked again (Repick). It returns how many pods
// it took over.
func (r *Reservations) TakeOver(ctx context.Context, src HeldSource, checker *feasibility.Checker, now time.Time) int {
	r.repickConflicting(ctx, src, checker, now)
	allocated := src.Allocations()
	// Read before the pods are listed: what changes while they are gone
	// through moves it past what is recorded, and the next one looks.
	state := takeOverStateOf(src, allocated, r)
	if state.known {
		r.mu.Lock()
		same := r.tookOver == state
		r.mu.Unlock()
		if same {
			return 0
		}
		defer func() {
			r.mu.Lock()
			r.tookOver = state
			r.mu.Unlock()
		}()
	}
	// kube-scheduler allocated the claim of a pod it has not bound yet:
	// the inventory counts that claim already (its reservation ended for
	// that reason); holding devices for it again would count the pod twice.
	// A pod older than the TTL would be held from its creation, already
	// expired: its devices are no longer held (the TTL's bound), and a
	// check of it would be thrown away by the next sweep.
	unheld := func(p *corev1.Pod) bool {
		return now.Before(p.CreationTimestamp.Add(r.ttl)) && !r.Held(p.Annotations[api.AnnotationAdmission], now) &&
			(allocated == nil || !allocated.PodClaimAllocated(p.UID))
	}
	taken := 0
	for _, p := range src.PendingTranslatedWhere(unheld) {
		id := p.Annotations[api.AnnotationAdmission]
		tmpl, ok := src.Template(p.Namespace, p.Annotations[api.AnnotationTemplate])
		snap, err := src.Snapshot(now)
		if !ok || err != nil {
			r.Tried(id, now)
			continue
		}
		claims := []*resourceapi.ResourceClaimSpec{&tmpl.Spec.Spec}
		v := checker.Check(ctx, snap, p, claims)
		if v.Kind != feasibility.FitsNow {
			r.Tried(id, now)
			continue
		}
		r.Reserve(id, p, claims, v, p.CreationTimestamp.Time)
		r.Seen(id, p.UID)
		taken++
	}
	return taken
}

// takeOverState is what can give a TakeOver a pod to take over: a pending
// translated pod that came unheld (PendingVersion), a reservation or a
// tried mark that ended (removed), a claim allocated (the allocations'
// version). While none moves, a TakeOver that went through every pending
// pod would find the same ones held, tried or allocated: it need not go
// through them again.
type takeOverState struct {
	pending, removed, allocations uint64
	known                         bool
}

// pendingVersioned is a HeldSource that counts the pending translated pods
// that came unheld (the informer-backed Inventory).
type pendingVersioned interface{ PendingVersion() uint64 }

func takeOverStateOf(src HeldSource, allocated Allocations, r *Reservations) takeOverState {
	p, ok := src.(pendingVersioned)
	a, versioned := allocated.(interface{ AllocationsVersion() uint64 })
	if !ok || !versioned {
		return takeOverState{}
	}
	return takeOverState{pending: p.PendingVersion(), removed: r.removed.Load(), allocations: a.AllocationsVersion(), known: true}
}

// repickConflicting picks again the devices of reservations that
// kube-scheduler gave to another pod's claim in the meantime (it places
// pods in its own order): held on devices already counted as allocated,
// they would leave the devices the scheduler will give their pod looking
// free.
func (r *Reservations) repickConflicting(ctx context.Context, src HeldSource, checker *feasibility.Checker, now time.Time) {
	allocated := src.Allocations()
	if allocated == nil || r.Len() == 0 {
		return
	}
	for _, c := range r.Conflicting(allocated) {
		snap, err := src.Snapshot(now)
		if err != nil {
			return
		}
		r.Repick(c, checker.Check(ctx, snap, c.Pod, c.Claims))
	}
}

// TakeOver holds the devices of the pending translated pods no reservation
// of this replica covers (Reservations.TakeOver over the caches).
func (inv *Inventory) TakeOver(ctx context.Context, checker *feasibility.Checker, now time.Time) int {
	return inv.reserved.TakeOver(ctx, inv, checker, now)
}

// Reserve holds the devices a FitsNow verdict picked for the pod of an
// admission (Reservations.Reserve).
func (inv *Inventory) Reserve(id string, checked *corev1.Pod, claims []*resourceapi.ResourceClaimSpec, v feasibility.Verdict, now time.Time) {
	inv.reserved.Reserve(id, checked, claims, v, now)
}
