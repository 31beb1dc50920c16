package inventory

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/claimbridge/claimbridge/feasibility"
)

func fitsOn(node string, devices ...string) feasibility.Verdict {
	v := feasibility.Verdict{Kind: feasibility.FitsNow, Node: node}
	for _, d := range devices {
		v.Results = append(v.Results, resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: "gpu.example.com", Pool: node, Device: d})
	}
	return v
}

func podNamed(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}}
}

// claimAllocations answers from a list of claims, through the helpers the
// claim indexes use.
type claimAllocations struct {
	devices map[string]bool
	owners  map[types.UID]bool
}

func newClaimAllocations(claims []*resourceapi.ResourceClaim) claimAllocations {
	a := claimAllocations{devices: map[string]bool{}, owners: map[types.UID]bool{}}
	for _, c := range claims {
		for _, k := range AllocatedDevices(c) {
			a.devices[k] = true
		}
		for _, uid := range AllocatedOwners(c) {
			a.owners[uid] = true
		}
	}
	return a
}

func (a claimAllocations) DeviceAllocated(key string) bool      { return a.devices[key] }
func (a claimAllocations) PodClaimAllocated(uid types.UID) bool { return a.owners[uid] }

func heldDevices(r *Reservations, now time.Time, claims ...*resourceapi.ResourceClaim) []string {
	var out []string
	for _, c := range r.Claims(now, newClaimAllocations(claims)) {
		for _, res := range c.Status.Allocation.Devices.Results {
			out = append(out, res.Pool+"/"+res.Device)
		}
	}
	return out
}

func TestReservationsHoldUntilReleasedOrExpired(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	r := NewReservations(time.Minute)
	r.Reserve("a", podNamed("p-a"), nil, fitsOn("n1", "gpu-0", "gpu-1"), t0)
	r.Reserve("b", podNamed("p-b"), nil, fitsOn("n2", "gpu-0"), t0.Add(30*time.Second))
	r.Reserve("c", podNamed("p-c"), nil, feasibility.Verdict{Kind: feasibility.FitsWhenFree, Node: "n3"}, t0)
	if got, want := fmt.Sprint(heldDevices(r, t0)), "[n1/gpu-0 n1/gpu-1 n2/gpu-0]"; got != want {
		t.Errorf("held %s, want %s (a verdict that does not fit now holds nothing)", got, want)
	}
	v := r.Version()
	r.Release("a")
	r.Release("unknown")
	if got, want := fmt.Sprint(heldDevices(r, t0)), "[n2/gpu-0]"; got != want {
		t.Errorf("after releasing a: held %s, want %s", got, want)
	}
	if r.Version() != v+1 {
		t.Errorf("version moved by %d for one release and one no-op, want 1", r.Version()-v)
	}
	if got := heldDevices(r, t0.Add(90*time.Second)); len(got) != 0 {
		t.Errorf("held %v after the TTL", got)
	}
	r.Tried("d", t0)
	if !r.Held("d", t0.Add(59*time.Second)) || r.Held("d", t0.Add(61*time.Second)) {
		t.Error("a pod that could not be taken over is not skipped for exactly the TTL")
	}
}

// TestAReservationEndsWhenItsPodsClaimIsSeenAllocated: the pod and its
// claim come through different watches; until the claim shows up
// allocated, the devices stay held, so that they are never free in between.
func TestAReservationEndsWhenItsPodsClaimIsSeenAllocated(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	r := NewReservations(time.Minute)
	r.Reserve("a", podNamed("p-a"), nil, fitsOn("n1", "gpu-0"), t0)
	r.Seen("a", "uid-a")
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p-a", UID: "uid-a"}}}}
	if got := heldDevices(r, t0, claim); len(got) != 1 {
		t.Errorf("held %v while the claim is not allocated yet, want n1/gpu-0", got)
	}
	claim.Status.Allocation = &resourceapi.AllocationResult{}
	if got := heldDevices(r, t0, claim); len(got) != 0 {
		t.Errorf("held %v once the claim is allocated", got)
	}
}

// TestAReservationOnDevicesAllocatedToAnotherPodIsPickedAgain:
// kube-scheduler may give the devices picked for one pod to another; the
// reservation that holds them is listed to pick again, and a new pick
// replaces its devices.
func TestAReservationOnDevicesAllocatedToAnotherPodIsPickedAgain(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	r := NewReservations(time.Minute)
	r.Reserve("a", podNamed("p-a"), nil, fitsOn("n1", "gpu-0"), t0)
	r.Reserve("b", podNamed("p-b"), nil, fitsOn("n1", "gpu-1"), t0)
	if got := r.Conflicting(claimAllocations{devices: map[string]bool{"gpu.example.com/n1/gpu-9": true}}); len(got) != 0 {
		t.Errorf("conflicts %v with devices nobody holds", got)
	}
	got := r.Conflicting(claimAllocations{devices: map[string]bool{"gpu.example.com/n1/gpu-1": true}})
	if len(got) != 1 || got[0].ID != "b" {
		t.Fatalf("conflicts %v, want b", got)
	}
	r.Repick(got[0], fitsOn("n1", "gpu-2"))
	if got, want := fmt.Sprint(heldDevices(r, t0)), "[n1/gpu-0 n1/gpu-2]"; got != want {
		t.Errorf("held %s after the new pick, want %s", got, want)
	}
}

// TestASharesReservationIsNotTakenByAnotherClaimsShare: several claims
// share a device of consumable capacity; another pod's claim allocated a
// share of the device a reservation holds a share of takes nothing from it
// (the snapshot counts the shares), while an exclusive pick still
// conflicts.
func TestASharesReservationIsNotTakenByAnotherClaimsShare(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	r := NewReservations(time.Minute)
	share := fitsOn("n1", "gpu-0")
	share.Results[0].ShareID = new(types.UID("share-a"))
	r.Reserve("a", podNamed("p-a"), nil, share, t0)
	r.Reserve("b", podNamed("p-b"), nil, fitsOn("n1", "gpu-1"), t0)
	got := r.Conflicting(claimAllocations{devices: map[string]bool{"gpu.example.com/n1/gpu-0": true, "gpu.example.com/n1/gpu-1": true}})
	if len(got) != 1 || got[0].ID != "b" {
		t.Errorf("conflicts %v, want only b: a holds a share of gpu-0, which other claims may share", got)
	}
}

// TestASweepSaysWhenAClaimTookOverAReservation: the inventory's snapshot
// must then count the allocated claims as they stand in the informer's
// store (their handler may not have run yet), or the devices the
// reservation held would look free in between.
func TestASweepSaysWhenAClaimTookOverAReservation(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	r := NewReservations(time.Minute)
	r.Reserve("a", podNamed("p-a"), nil, fitsOn("n1", "gpu-0"), t0)
	r.Reserve("b", podNamed("p-b"), nil, fitsOn("n1", "gpu-1"), t0)
	r.Seen("a", "uid-a")
	if r.sweep(t0, claimAllocations{owners: map[types.UID]bool{}}) {
		t.Error("a sweep that dropped nothing says a claim took over")
	}
	if !r.sweep(t0, claimAllocations{owners: map[types.UID]bool{"uid-a": true}}) || r.Len() != 1 {
		t.Errorf("a's claim allocated: the sweep does not say so, or holds %d reservations (want b alone)", r.Len())
	}
	if r.sweep(t0.Add(2*time.Minute), claimAllocations{}) || r.Len() != 0 {
		t.Errorf("b expired: the sweep says a claim took over, or %d reservations are left", r.Len())
	}
}

// TestReservationsUnderConcurrentUse runs reserves, releases and reads at
// once (go test -race).
func TestReservationsUnderConcurrentUse(t *testing.T) {
	t0 := time.Now()
	r := NewReservations(time.Minute)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				id := fmt.Sprintf("%d-%d", w, i)
				r.Reserve(id, podNamed(id), nil, fitsOn(fmt.Sprintf("n%d", w), fmt.Sprintf("gpu-%d", i)), t0)
				_ = r.Claims(t0, nil)
				if i%2 == 0 {
					r.Release(id)
				}
			}
		})
	}
	wg.Wait()
	if got := r.Len(); got != 8*100 {
		t.Errorf("%d reservations held, want %d", got, 8*100)
	}
}

// versionedAllocations are claimAllocations that tell their version, and
// count the devices asked about.
type versionedAllocations struct {
	claimAllocations
	version uint64
	asked   *int
}

func (v versionedAllocations) AllocationsVersion() uint64 { return v.version }

func (v versionedAllocations) DeviceAllocated(key string) bool {
	*v.asked++
	return v.claimAllocations.DeviceAllocated(key)
}

// A reservation found free of conflicts at a version of the allocations is
// not looked at again until the version moves, or until it is picked again.
func TestConflictsAreLookedForOncePerVersionOfTheAllocations(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	r := NewReservations(time.Minute)
	r.Reserve("a", podNamed("p-a"), nil, fitsOn("n1", "gpu-0"), t0)
	r.Reserve("b", podNamed("p-b"), nil, fitsOn("n1", "gpu-1"), t0)
	asked := 0
	at := func(version uint64, devices ...string) versionedAllocations {
		a := versionedAllocations{claimAllocations: claimAllocations{devices: map[string]bool{}}, version: version, asked: &asked}
		for _, d := range devices {
			a.devices["gpu.example.com/n1/"+d] = true
		}
		return a
	}
	for i, step := range []struct {
		alloc     versionedAllocations
		reserve   string // reserved before the step
		wantAsked int
		want      string
	}{
		{alloc: at(1, "gpu-9"), wantAsked: 2, want: "[]"},
		{alloc: at(1, "gpu-9"), wantAsked: 0, want: "[]"},               // nothing new
		{alloc: at(1, "gpu-9"), reserve: "c", wantAsked: 1, want: "[]"}, // the new reservation only
		{alloc: at(2, "gpu-1"), wantAsked: 3, want: "[b]"},              // the version moved: every one
		{alloc: at(2, "gpu-1"), wantAsked: 1, want: "[b]"},              // b still conflicts
	} {
		if step.reserve != "" {
			r.Reserve(step.reserve, podNamed("p-"+step.reserve), nil, fitsOn("n1", "gpu-5"), t0)
		}
		asked = 0
		var ids []string
		for _, c := range r.Conflicting(step.alloc) {
			ids = append(ids, c.ID)
		}
		if got := fmt.Sprint(ids); got != step.want || asked != step.wantAsked {
			t.Errorf("step %d: conflicts %s after asking about %d devices, want %s after %d", i, got, asked, step.want, step.wantAsked)
		}
	}
	// Picked again: looked at again at the same version.
	r.Repick(Conflict{ID: "b"}, fitsOn("n1", "gpu-2"))
	asked = 0
	if got := r.Conflicting(at(2, "gpu-1")); len(got) != 0 || asked != 1 {
		t.Errorf("after the new pick: conflicts %v after asking about %d devices, want none after 1", got, asked)
	}
}
