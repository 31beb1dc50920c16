package inventory

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/claimbridge/claimbridge/api"
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

// The claims come in the order the reservations were made, as the same
// objects while the record does not change: a record that grew gives the
// claims it gave before, first (what lets a burst's snapshots be derived
// one from the other). A reservation picked again keeps its place; one
// released leaves the others in order.
func TestReservationClaimsKeepTheirOrder(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	r := NewReservations(time.Minute)
	names := func(claims []*resourceapi.ResourceClaim) string {
		var out []string
		for _, c := range claims {
			out = append(out, c.Name)
		}
		return fmt.Sprint(out)
	}
	for _, id := range []string{"z", "a", "m"} {
		r.Reserve(id, podNamed("p-"+id), nil, fitsOn("n1", "gpu-"+id), t0)
	}
	first := r.AsClaims()
	if got, want := names(first), "[claimbridge-reserved-z claimbridge-reserved-a claimbridge-reserved-m]"; got != want {
		t.Fatalf("claims %s, want %s", got, want)
	}
	if again := r.AsClaims(); &again[0] != &first[0] {
		t.Error("an unchanged record made its claims anew")
	}
	r.Reserve("b", podNamed("p-b"), nil, fitsOn("n1", "gpu-b"), t0)
	grown := r.AsClaims()
	if len(grown) != 4 || grown[0] != first[0] || grown[1] != first[1] || grown[2] != first[2] {
		t.Errorf("the grown record's claims %s do not start with the claims before, the same objects", names(grown))
	}
	r.Repick(Conflict{ID: "a"}, fitsOn("n2", "gpu-x"))
	r.Release("z")
	if got, want := names(r.AsClaims()), "[claimbridge-reserved-a claimbridge-reserved-m claimbridge-reserved-b]"; got != want {
		t.Errorf("after a repick and a release: %s, want %s", got, want)
	}
	if got := r.AsClaims()[0].Status.Allocation.Devices.Results[0].Pool; got != "n2" {
		t.Errorf("the repicked reservation's claim is on %s, want n2", got)
	}
}

// A sweep that cannot drop anything (no expiry due, the allocations'
// version where it was, no pod's UID learned) asks nothing; an expiry, a
// new version or a UID learned since makes it look again.
func TestASweepLooksOnlyWhenSomethingCanHaveEnded(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	r := NewReservations(time.Minute)
	r.Reserve("a", podNamed("p-a"), nil, fitsOn("n1", "gpu-0"), t0)
	r.Reserve("b", podNamed("p-b"), nil, fitsOn("n1", "gpu-1"), t0.Add(30*time.Second))
	r.Seen("a", "uid-a")
	owners := map[types.UID]bool{}
	alloc := func(version uint64) versionedAllocations {
		return versionedAllocations{claimAllocations: claimAllocations{devices: map[string]bool{}, owners: owners}, version: version, asked: new(int)}
	}
	held := func(now time.Time, a versionedAllocations) string {
		r.Sweep(now, a)
		var ids []string
		for _, c := range r.AsClaims() {
			ids = append(ids, c.Name[len("claimbridge-reserved-"):])
		}
		return fmt.Sprint(ids)
	}
	if got := held(t0, alloc(1)); got != "[a b]" {
		t.Fatalf("held %s, want [a b]", got)
	}
	// The claim of a's pod is allocated, but the version did not move: the
	// sweep does not look (the version moves after the indexes show it).
	owners["uid-a"] = true
	if got := held(t0.Add(time.Second), alloc(1)); got != "[a b]" {
		t.Errorf("with the version unchanged: held %s, want [a b]", got)
	}
	if got := held(t0.Add(time.Second), alloc(2)); got != "[b]" {
		t.Errorf("once the version moved: held %s, want [b]", got)
	}
	// b's pod's UID is learned after its claim was allocated, with no
	// version move since: the sweep looks again.
	owners["uid-b"] = true
	r.Seen("b", "uid-b")
	if got := held(t0.Add(2*time.Second), alloc(2)); got != "[]" {
		t.Errorf("after b's UID was seen: held %s, want []", got)
	}
	// Expiry: c's reservation ends at its TTL whatever the version.
	r.Reserve("c", podNamed("p-c"), nil, fitsOn("n1", "gpu-2"), t0)
	if got := held(t0.Add(59*time.Second), alloc(2)); got != "[c]" {
		t.Errorf("before c's TTL: held %s, want [c]", got)
	}
	if got := held(t0.Add(time.Minute), alloc(2)); got != "[]" {
		t.Errorf("at c's TTL: held %s, want []", got)
	}
}

// pendingSource is a HeldSource whose pending pods have no template: a
// TakeOver marks each it looks at as tried. It counts the listings.
type pendingSource struct {
	pods     []*corev1.Pod
	pending  uint64 // PendingVersion; 0: the source does not count
	alloc    versionedAllocations
	listings int
}

func (s *pendingSource) Snapshot(time.Time) (*feasibility.Snapshot, error) {
	return nil, errors.New("no fleet")
}
func (s *pendingSource) Allocations() Allocations { return s.alloc }
func (s *pendingSource) PendingTranslatedWhere(keep func(*corev1.Pod) bool) []*corev1.Pod {
	s.listings++
	var out []*corev1.Pod
	for _, p := range s.pods {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}
func (s *pendingSource) Template(string, string) (*resourceapi.ResourceClaimTemplate, bool) {
	return nil, false
}

type countingPendingSource struct{ *pendingSource }

func (s countingPendingSource) PendingVersion() uint64 { return s.pending }

// A TakeOver goes through the pending pods again only when one can have
// come unheld since the last that did: a pod shown without a reservation
// here (PendingVersion), a reservation or a tried mark ended, a claim
// allocated. A source that does not count its pending pods is gone
// through every time.
func TestATakeOverLooksAgainOnlyWhenAPodCanHaveComeUnheld(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	pod := func(id string) *corev1.Pod {
		p := podNamed("p-" + id)
		p.Annotations = map[string]string{api.AnnotationAdmission: id}
		p.CreationTimestamp = metav1.NewTime(t0.Add(30 * time.Second)) // younger than the TTL throughout
		return p
	}
	src := &pendingSource{pods: []*corev1.Pod{pod("a")}, pending: 1,
		alloc: versionedAllocations{claimAllocations: newClaimAllocations(nil), version: 1, asked: new(int)}}
	r := NewReservations(time.Minute)
	counted := countingPendingSource{src}
	step := func(name string, now time.Time, wantListings int) {
		t.Helper()
		src.listings = 0
		r.TakeOver(t.Context(), counted, nil, now)
		if src.listings != wantListings {
			t.Errorf("%s: listed the pending pods %d times, want %d", name, src.listings, wantListings)
		}
	}
	step("the first", t0, 1)
	step("nothing changed", t0, 0)
	src.pods, src.pending = append(src.pods, pod("b")), 2
	step("a pod shown unheld", t0, 1)
	if !r.Held("b", t0) {
		t.Error("the pod shown unheld was not looked at (tried)")
	}
	step("nothing changed since", t0, 0)
	src.alloc.version = 2
	step("a claim allocated", t0, 1)
	r.Reserve("c", podNamed("p-c"), nil, fitsOn("n1", "gpu-0"), t0)
	step("a reservation made", t0, 0)
	r.Release("c")
	step("a reservation released", t0, 1)
	// The tried marks end at the TTL; the sweep that drops them makes the
	// next TakeOver look, and try the pods again.
	later := t0.Add(time.Minute)
	r.Sweep(later, src.alloc)
	step("the tried marks ended", later, 1)
	if !r.Held("a", later) || !r.Held("b", later) {
		t.Error("the pods whose tried marks ended were not tried again")
	}
	src.listings = 0
	for range 3 {
		r.TakeOver(t.Context(), src, nil, later)
	}
	if src.listings != 3 {
		t.Errorf("a source that does not count its pending pods was listed %d times in 3 TakeOvers, want 3", src.listings)
	}
}

// Pods created in the same second are ordered by "namespace/name", as
// strings: compareKeys agrees with comparing the joined keys.
func TestPendingOrderComparesTheJoinedKeys(t *testing.T) {
	names := []string{"", "a", "a-b", "a/b", "ab", "b", "a.", "a0", "team", "team-a", "teams"}
	for _, ans := range names {
		for _, aname := range names {
			for _, bns := range names {
				for _, bname := range names {
					want := strings.Compare(ans+"/"+aname, bns+"/"+bname)
					if got := compareKeys(ans, aname, bns, bname); got != want {
						t.Fatalf("compareKeys(%q, %q, %q, %q) = %d, want %d", ans, aname, bns, bname, got, want)
					}
				}
			}
		}
	}
}

// A pending pod older than the reservation TTL is not taken over: it
// would be held from its creation, already expired (the TTL bounds how
// long a pod's devices are held); a younger one is looked at.
func TestAPodOlderThanTheTTLIsNotTakenOver(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	pod := func(id string, created time.Time) *corev1.Pod {
		p := podNamed("p-" + id)
		p.Annotations = map[string]string{api.AnnotationAdmission: id}
		p.CreationTimestamp = metav1.NewTime(created)
		return p
	}
	src := &pendingSource{pods: []*corev1.Pod{pod("old", t0.Add(-3*time.Minute)), pod("young", t0.Add(-time.Second))},
		alloc: versionedAllocations{claimAllocations: newClaimAllocations(nil), version: 1, asked: new(int)}}
	r := NewReservations(time.Minute)
	r.TakeOver(t.Context(), src, nil, t0)
	if r.Held("old", t0) {
		t.Error("a pod older than the TTL was looked at")
	}
	if !r.Held("young", t0) {
		t.Error("a pod younger than the TTL was not looked at")
	}
}
