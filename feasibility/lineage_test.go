package feasibility

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
)

// reservedClaim holds what a FitsNow verdict chose, as the webhook's
// reservations do.
func reservedClaim(i int, v Verdict) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("reserved-%d", i)},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: v.Results},
		}},
	}
}

// A burst: every pod's devices are held for the next checks, each on a new
// snapshot of the lineage — the fleet's with every reservation
// (WithClaimsAfter, the webhook's), or the last one with the new claim
// (Holding, the cutover forecast's). The checker that asks the node it
// chose before answers every pod as a search over the whole snapshot does
// — kind, node, devices and reasons — and does ask it, or scan or search
// from the first node it served when that node is full; and a snapshot of the
// chain (WithClaimsAfter derives each snapshot from the one before when the
// reservations only grew) answers as one built anew with the same claims.
func TestChecksOfABurstAnswerAsTheSearch(t *testing.T) {
	shapes := [][]*resourceapi.ResourceClaimSpec{
		{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1).Obj()},
		alignedH100(),
		{makeClaim().FirstAvailable("gpu", sub("eight", fleetgen.ClassGPU, 8), sub("two", fleetgen.ClassGPU, 2), sub("one", fleetgen.ClassGPU, 1)).Obj()},
		twoGPUsOneRoot(),
		missingProduct(),
		{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 4).Obj()},
		// Six, then one of the two left: the node chosen before serves
		// the second pod with a worse alternative than another node.
		{makeClaim().FirstAvailable("gpu", sub("six", fleetgen.ClassGPU, 6), sub("one", fleetgen.ClassGPU, 1)).Obj()},
		{makeClaim().FirstAvailable("gpu", sub("six", fleetgen.ClassGPU, 6), sub("one", fleetgen.ClassGPU, 1)).Obj()},
	}
	ignore := cmp.Options{cmpopts.IgnoreFields(Verdict{}, "Cached", "NodesPruned"), ignoreShareIDs}
	var revalidated, scanned, searchedFrom int64
	for _, chain := range []bool{false, true} {
		for _, f := range append(fleetgen.Corpus(), fleetgen.Synthetic(24)) {
			t.Run(fmt.Sprintf("%s/holding=%t", f.Name, chain), func(t *testing.T) {
				inv := inventoryFrom(f)
				fleet := mustSnapshot(t, inv)
				burst := NewChecker(Options{Timeout: time10s, Parallelism: 1})
				var (
					held []*resourceapi.ResourceClaim
					prev *Snapshot
				)
				for step := range 60 {
					var snap *Snapshot
					switch {
					case !chain:
						snap = fleet.WithClaimsAfter(prev, held, uint64(step+2))
					case prev == nil:
						snap = fleet
					default:
						snap = prev.Holding(held[len(prev.claims)-len(fleet.claims):], uint64(step+2))
					}
					if prev != nil && snap.epoch != prev.epoch {
						t.Fatalf("step %d: reservations only added, but the lineage broke", step)
					}
					prev = snap
					claims := shapes[step%len(shapes)]
					pod := makePod(fmt.Sprintf("p-%d", step), "ns").Obj()
					got := burst.Check(t.Context(), snap, pod, claims)
					want := NewChecker(Options{CacheSize: -1, Timeout: time10s, Parallelism: 1}).Check(t.Context(), snap, pod, claims)
					if diff := cmp.Diff(want, got, ignore); diff != "" {
						t.Fatalf("step %d (shape %d): verdict (-search,+burst):\n%s", step, step%len(shapes), diff)
					}
					{ // Either way, a chain: WithClaimsAfter derives each from the one before.
						anew := *inv
						anew.Claims = append(slices.Clone(inv.Claims), held...)
						built := NewChecker(Options{CacheSize: -1, Timeout: time10s, Parallelism: 1}).Check(t.Context(), mustSnapshot(t, &anew), pod, claims)
						if diff := cmp.Diff(built, got, ignore); diff != "" {
							t.Fatalf("step %d (shape %d): verdict (-built anew,+held one by one):\n%s", step, step%len(shapes), diff)
						}
					}
					if got.Kind == FitsNow {
						held = append(held, reservedClaim(step, got))
					}
				}
				revalidated += burst.revalidated.Load()
				scanned += burst.scanned.Load()
				searchedFrom += burst.searchedFrom.Load()
			})
		}
	}
	t.Logf("answered on the node chosen before: %d, by a scan from the first node served before: %d, by a search from it: %d", revalidated, scanned, searchedFrom)
	if revalidated == 0 || scanned == 0 || searchedFrom == 0 {
		t.Error("the lineage answered no check on the node chosen before, or none by a scan or by a search from the first node served")
	}
}

// The lineage continues only when every claim the snapshot before held is
// still held, on the same fleet snapshot.
func TestLineageBreaksWhenDevicesComeBack(t *testing.T) {
	fleet := mustSnapshot(t, inventoryFrom(fleetgen.Synthetic(8)))
	held := heldClaims(fleet, 2)
	if len(held) < 3 {
		t.Fatalf("want at least 3 claims, got %d", len(held))
	}
	first := fleet.WithClaimsAfter(nil, held[:2], 2)
	for name, tc := range map[string]struct {
		next      *Snapshot
		continues bool
	}{
		"one more claim":        {fleet.WithClaimsAfter(first, held[:3], 3), true},
		"the same claims":       {fleet.WithClaimsAfter(first, held[:2], 3), true},
		"in another order":      {fleet.WithClaimsAfter(first, []*resourceapi.ResourceClaim{held[2], held[1], held[0]}, 3), true},
		"a claim released":      {fleet.WithClaimsAfter(first, held[1:3], 3), false},
		"the same devices anew": {fleet.WithClaimsAfter(first, append([]*resourceapi.ResourceClaim{held[0].DeepCopy()}, held[1:3]...), 3), false},
		"another fleet":         {mustSnapshot(t, inventoryFrom(fleetgen.Synthetic(8))).WithClaimsAfter(first, held[:3], 3), false},
		"no snapshot before":    {fleet.WithClaimsAfter(nil, held[:3], 3), false},
		"derived by WithClaims": {fleet.WithClaims(held[:3], 3), false},
	} {
		if got := tc.next.epoch == first.epoch; got != tc.continues {
			t.Errorf("%s: continues the lineage = %v, want %v", name, got, tc.continues)
		}
	}
}
