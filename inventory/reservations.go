package inventory

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/claimbridge/claimbridge/feasibility"
)

// DefaultReservationTTL bounds how long an admitted pod's devices are held
// when nothing says its claim was allocated or the pod is gone.
const DefaultReservationTTL = 2 * time.Minute

// Reservations hold the DRA devices of translated pods that were admitted
// but whose claims are not allocated yet — the allocator's own picks for
// them, as kube-scheduler's assume cache holds what it just allocated — so
// that the checks of the pods after them in a burst see those devices as
// taken. A reservation ends when the inventory shows the pod's claim
// allocated (kube-scheduler allocates before it binds; the inventory then
// counts the claim), when the pod is deleted or finished, or when its TTL
// passes. Safe for concurrent use.
type Reservations struct {
	ttl     time.Duration
	version atomic.Uint64

	mu    sync.Mutex
	byID  map[string]*reservation
	tried map[string]time.Time // pods of other admissions that could not be taken over, until when
	// order lists the ids in the order they were reserved (with ids
	// released since, dropped when the claims are listed next); claims is
	// the reservations as claims in that order, until they change: the
	// snapshots of a burst see the claims of the one before first, the
	// same objects, and pay only for the new ones
	// (feasibility.Snapshot.WithClaimsAfter).
	order  []string
	claims []*resourceapi.ResourceClaim
	// A sweep has nothing to drop before nextExpiry, while the
	// allocations' version stays at sweptAt and no reservation learned
	// its pod's UID (sweptAt 0: sweep).
	nextExpiry time.Time
	sweptAt    uint64
	// removed moves when a reservation or a tried mark ends: the pod it
	// covered may be taken over. tookOver is what the last TakeOver that
	// went through the pending pods saw (takeOverState).
	removed  atomic.Uint64
	tookOver takeOverState
}

type reservation struct {
	namespace, pod string
	node           string
	results        []resourceapi.DeviceRequestAllocationResult
	expires        time.Time
	// uid of the pod, once the inventory has shown it: the reservation
	// ends when the inventory shows a claim of the pod allocated, whether
	// or not the pod is bound yet (the claim and the pod come through
	// different watches, in no set order).
	uid types.UID
	// what was checked, to pick again when kube-scheduler allocates the
	// picked devices to another pod's claim (its order is not ours).
	checked *corev1.Pod
	claims  []*resourceapi.ResourceClaimSpec
	// claim is the reservation as an allocated claim (AsClaims), made once
	// per pick: the snapshots of a burst see the same object for the same
	// devices (feasibility.Snapshot.WithClaimsAfter).
	claim *resourceapi.ResourceClaim
	// freeAt is the allocations' version + 1 at which Conflicting last
	// found no allocated claim holding its devices (0: not yet, or picked
	// since).
	freeAt uint64
}

// asClaim makes res's claim from its id and its devices.
func (res *reservation) asClaim(id string) {
	res.claim = &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: res.namespace, Name: "claimbridge-reserved-" + id},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: res.results},
		}},
	}
}

// NewReservations returns an empty record; ttl <= 0 takes DefaultReservationTTL.
func NewReservations(ttl time.Duration) *Reservations {
	if ttl <= 0 {
		ttl = DefaultReservationTTL
	}
	return &Reservations{ttl: ttl, byID: map[string]*reservation{}, tried: map[string]time.Time{}}
}

// Version moves with every change of what is held.
func (r *Reservations) Version() uint64 { return r.version.Load() }

// Reserve holds the devices a FitsNow verdict picked for the pod of an
// admission, from now on (from created, for a pod found later); checked and
// claims are what the verdict was for (the translated pod and its claim).
func (r *Reservations) Reserve(id string, checked *corev1.Pod, claims []*resourceapi.ResourceClaimSpec, v feasibility.Verdict, created time.Time) {
	if id == "" || v.Kind != feasibility.FitsNow || len(v.Results) == 0 {
		return
	}
	r.mu.Lock()
	res := &reservation{namespace: checked.Namespace, pod: checked.Name, node: v.Node, results: slices.Clone(v.Results),
		expires: created.Add(r.ttl), checked: checked, claims: claims}
	res.asClaim(id)
	if _, again := r.byID[id]; again {
		r.claims = nil // a new claim in its place: made anew
	} else {
		r.order = append(r.order, id)
		if r.claims != nil {
			// The record only grew: its claims are those AsClaims gave,
			// and this one after them (r.order holds just those ids,
			// as AsClaims left it).
			r.claims = append(r.claims, res.claim)
		}
	}
	r.byID[id] = res
	delete(r.tried, id)
	r.expiresBy(res.expires)
	r.mu.Unlock()
	r.version.Add(1)
}

// expiresBy moves the next sweep no later than t; r.mu is held.
func (r *Reservations) expiresBy(t time.Time) {
	if r.nextExpiry.IsZero() || t.Before(r.nextExpiry) {
		r.nextExpiry = t
	}
}

// Conflicting lists the reservations (id, the pod and claims checked) that
// hold a device a real claim has been allocated in the meantime:
// kube-scheduler placed the pods in another order than they were admitted,
// so the devices held no longer stand for what is left free.
//
// When allocated tells the version of the allocations (AllocationsVersion),
// a reservation found free of conflicts at that version is not looked at
// again until it moves: the admissions of a burst do not each go through
// every reservation.
func (r *Reservations) Conflicting(allocated Allocations) []Conflict {
	if allocated == nil {
		return nil
	}
	var version uint64 // 0: not known
	if v, ok := allocated.(interface{ AllocationsVersion() uint64 }); ok {
		version = v.AllocationsVersion() + 1 // read before the indexes
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.byID))
	for id, res := range r.byID {
		if version == 0 || res.freeAt != version {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var out []Conflict
	for _, id := range ids {
		res := r.byID[id]
		if res.checked == nil || (res.uid != "" && allocated.PodClaimAllocated(res.uid)) {
			continue // its own claim is allocated: it ends, nothing to pick
		}
		// A share of a device (consumable capacity) is not taken by
		// another claim's share of it: the snapshot counts the shares.
		if slices.ContainsFunc(res.results, func(d resourceapi.DeviceRequestAllocationResult) bool {
			return d.ShareID == nil && allocated.DeviceAllocated(DeviceKey(d))
		}) {
			out = append(out, Conflict{ID: id, Pod: res.checked, Claims: res.claims, Expires: res.expires})
			continue
		}
		res.freeAt = version
	}
	return out
}

// Conflict is a reservation to pick again.
type Conflict struct {
	ID      string
	Pod     *corev1.Pod
	Claims  []*resourceapi.ResourceClaimSpec
	Expires time.Time
}

// Repick replaces a reservation's devices with those of a new verdict,
// keeping its expiry; a verdict that does not fit now leaves it as it was.
func (r *Reservations) Repick(c Conflict, v feasibility.Verdict) {
	if v.Kind != feasibility.FitsNow || len(v.Results) == 0 {
		return
	}
	r.mu.Lock()
	res, ok := r.byID[c.ID]
	if ok {
		res.node, res.results = v.Node, slices.Clone(v.Results)
		res.asClaim(c.ID)
		res.freeAt = 0
		r.claims = nil
	}
	r.mu.Unlock()
	if ok {
		r.version.Add(1)
	}
}

// DeviceKey names an allocated device as Allocations.DeviceAllocated
// asks for it: "driver/pool/device".
func DeviceKey(d resourceapi.DeviceRequestAllocationResult) string {
	return d.Driver + "/" + d.Pool + "/" + d.Device
}

// Allocations answers what the allocated claims of the inventory hold
// (without the reservations): the informer-backed Inventory from claim
// indexes, a StaticInventory from its list. A nil Allocations holds nothing.
type Allocations interface {
	// DeviceAllocated: an allocated claim holds the device ("driver/pool/device").
	DeviceAllocated(key string) bool
	// PodClaimAllocated: the pod owns an allocated claim.
	PodClaimAllocated(uid types.UID) bool
}

// AllocatedDevices are the devices an allocated claim holds.
func AllocatedDevices(c *resourceapi.ResourceClaim) []string {
	if c.Status.Allocation == nil {
		return nil
	}
	out := make([]string, 0, len(c.Status.Allocation.Devices.Results))
	for _, d := range c.Status.Allocation.Devices.Results {
		out = append(out, DeviceKey(d))
	}
	return out
}

// AllocatedOwners are the pods that own an allocated claim.
func AllocatedOwners(c *resourceapi.ResourceClaim) []types.UID {
	if c.Status.Allocation == nil {
		return nil
	}
	var out []types.UID
	for _, o := range c.OwnerReferences {
		if o.Kind == "Pod" && o.APIVersion == "v1" {
			out = append(out, o.UID)
		}
	}
	return out
}

// Release ends a reservation; a no-op for an id it does not hold.
func (r *Reservations) Release(id string) {
	r.mu.Lock()
	_, held := r.byID[id]
	_, tried := r.tried[id]
	delete(r.byID, id)
	delete(r.tried, id)
	if held {
		r.claims = nil
	}
	if held || tried {
		r.removed.Add(1)
	}
	r.mu.Unlock()
	if held {
		r.version.Add(1)
	}
}

// Seen records the UID of the pod of an admission, as the inventory shows
// it: the reservation ends once the inventory shows a claim of that pod
// allocated (Claims), so that its devices are counted by one or the other,
// never by neither, and not by both longer than the watches lag.
func (r *Reservations) Seen(id string, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res, ok := r.byID[id]; ok && uid != "" {
		if res.uid != uid {
			r.sweptAt = 0 // its claim may be allocated already
		}
		res.uid = uid
	}
}

// Held reports whether an admission's devices are held or were tried.
func (r *Reservations) Held(id string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byID[id]; ok {
		return true
	}
	until, ok := r.tried[id]
	return ok && now.Before(until)
}

// Tried records that the pod of an admission could not be taken over (its
// claim does not fit now); it is not tried again before the TTL passes.
func (r *Reservations) Tried(id string, now time.Time) {
	r.mu.Lock()
	r.tried[id] = now.Add(r.ttl)
	r.expiresBy(now.Add(r.ttl))
	r.mu.Unlock()
}

// Len is the number of reservations held.
func (r *Reservations) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// Claims sweeps (Sweep), then returns the reservations as allocated
// ResourceClaims (AsClaims).
func (r *Reservations) Claims(now time.Time, allocated Allocations) []*resourceapi.ResourceClaim {
	r.Sweep(now, allocated)
	return r.AsClaims()
}

// Sweep drops the expired reservations and those of pods that own an
// allocated claim in the inventory.
func (r *Reservations) Sweep(now time.Time, allocated Allocations) { r.sweep(now, allocated) }

// sweep is Sweep; claimed reports whether it dropped a reservation because
// its pod's claim is allocated: the allocation then stands in for it, and a
// snapshot must count the claims as allocated now, or the devices the
// reservation held would look free until the inventory's claim handler
// runs (the informer's index shows a claim before its handler is called).
func (r *Reservations) sweep(now time.Time, allocated Allocations) (claimed bool) {
	// The allocations' version, read before they are asked: a claim
	// allocated after it moves it again, and the next sweep looks.
	var version uint64
	versioned, _ := allocated.(interface{ AllocationsVersion() uint64 })
	if versioned != nil {
		version = versioned.AllocationsVersion() + 1
	}
	r.mu.Lock()
	if version != 0 && version == r.sweptAt && now.Before(r.nextExpiry) {
		// Nothing expired, no claim was allocated and no pod's UID came
		// since the last sweep: it would drop nothing.
		r.mu.Unlock()
		return false
	}
	expired := false
	r.nextExpiry = time.Time{}
	for id, res := range r.byID {
		byClaim := allocated != nil && res.uid != "" && allocated.PodClaimAllocated(res.uid)
		if !now.Before(res.expires) || byClaim {
			delete(r.byID, id)
			expired = true
			claimed = claimed || byClaim
			continue
		}
		r.expiresBy(res.expires)
	}
	for id, until := range r.tried {
		if !now.Before(until) {
			delete(r.tried, id)
			r.removed.Add(1)
			continue
		}
		r.expiresBy(until)
	}
	if r.nextExpiry.IsZero() {
		r.nextExpiry = now.Add(r.ttl) // nothing held: the next Reserve or Tried moves it
	}
	r.sweptAt = version
	if expired {
		r.claims = nil
		r.removed.Add(1)
	}
	r.mu.Unlock()
	if expired {
		r.version.Add(1)
	}
	return claimed
}

// AsClaims returns the reservations as allocated ResourceClaims, for the
// inventory to count like any allocation, in the order they were made (a
// reservation picked again keeps its place): the same record gives the
// same claims, and a record that only grew gives the claims it gave
// before, first. The slice is shared until the record changes: callers do
// not modify it.
func (r *Reservations) AsClaims() []*resourceapi.ResourceClaim {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.byID) == 0 {
		r.order = r.order[:0]
		return nil
	}
	if r.claims != nil {
		return r.claims
	}
	order, out := r.order[:0], make([]*resourceapi.ResourceClaim, 0, len(r.byID))
	seen := make(map[string]bool, len(r.byID))
	for _, id := range r.order {
		if res, ok := r.byID[id]; ok && !seen[id] {
			seen[id] = true
			order = append(order, id)
			out = append(out, res.claim)
		}
	}
	r.order, r.claims = order, out
	return out
}

// PodDone reports whether a translated pod no longer waits for its claim:
// it is bound (kube-scheduler allocated its claim before binding it),
// finished or being deleted.
func PodDone(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" || PodGone(p)
}

// PodGone: the pod is finished or being deleted; its devices go back.
func PodGone(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// NotRunning: the pod does not run and may not: unbound, or bound and still
// Pending, or refused by its node's kubelet for want of an extended
// resource (Failed, reason OutOf<resource>, as the kubelet's admission
// says); not being deleted.
func NotRunning(p *corev1.Pod) bool {
	switch {
	case p.DeletionTimestamp != nil:
		return false
	case p.Status.Phase == corev1.PodFailed:
		return strings.HasPrefix(p.Status.Reason, "OutOf")
	case p.Status.Phase == corev1.PodSucceeded:
		return false
	}
	return p.Spec.NodeName == "" || p.Status.Phase == corev1.PodPending || p.Status.Phase == ""
}

// PendingOrder sorts pods of other admissions in creation order, so that
// they are taken over in the order they were admitted.
func PendingOrder(a, b *corev1.Pod) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), compareKeys(a.Namespace, a.Name, b.Namespace, b.Name))
}

// compareKeys compares the keys "ans/aname" and "bns/bname" as strings,
// without making them (a sort of every pod in the cache calls it some
// n·log n times).
func compareKeys(ans, aname, bns, bname string) int {
	at := func(ns, name string, i int) (byte, bool) {
		switch {
		case i < len(ns):
			return ns[i], true
		case i == len(ns):
			return '/', true
		case i-len(ns)-1 < len(name):
			return name[i-len(ns)-1], true
		}
		return 0, false
	}
	if ans == bns {
		return strings.Compare(aname, bname)
	}
	for i := 0; ; i++ {
		x, okA := at(ans, aname, i)
		y, okB := at(bns, bname, i)
		switch {
		case !okA && !okB:
			return 0
		case !okA:
			return -1
		case !okB:
			return 1
		case x != y:
			return cmp.Compare(x, y)
		}
	}
}
