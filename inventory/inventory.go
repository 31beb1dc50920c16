package inventory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/podfacts"
)

// Options configure the live inventory.
type Options struct {
	// Features of the allocator, matching the cluster's feature gates.
	// Default: Kubernetes 1.37 defaults.
	Features *feasibility.Features
	// MinRebuildInterval bounds how often a changed inventory is turned into
	// a new snapshot; within it, checks use the previous one (the verdict is
	// advisory anyway). Default 500ms; negative: rebuild at every change.
	MinRebuildInterval time.Duration
	// Resync of the informers. Default 0 (none).
	Resync time.Duration
	// ReservationTTL bounds how long the devices of an admitted pod are
	// held while its claim is not allocated. Default DefaultReservationTTL.
	ReservationTTL time.Duration
	// BackgroundBuild: a fleet whose snapshot took this long or longer to
	// build is built anew in the background, so that no admission waits
	// for it; until then the checks read the snapshot before, brought up
	// to date with the claims, pods and reservations as usual (a node added
	// or relabelled shows up one build later). A smaller fleet is built at
	// once. Default DefaultBackgroundBuild; negative: never in the
	// background.
	BackgroundBuild time.Duration
	// Prepare, when set, does ahead of time what the first checks on a
	// fleet snapshot built in the background would do
	// (feasibility.Checker.Prepare).
	Prepare func(context.Context, *feasibility.Snapshot)
	// SnapshotUpdates observes how long each part of bringing the snapshot
	// up to date took (fleet, claims, pods, reservations). Optional.
	SnapshotUpdates *prometheus.HistogramVec
}

// Inventory keeps informer caches of everything a decision reads: the
// fleet (Nodes, ResourceSlices with DeviceTaintRules applied, DeviceClasses,
// allocated ResourceClaims), Namespaces, ResourceQuotas and claimbridge's
// own ResourceClaimTemplates. Admission reads it; it never calls the API.
type Inventory struct {
	client  kubernetes.Interface
	opts    Options
	factory informers.SharedInformerFactory
	ours    informers.SharedInformerFactory

	nodes  cache.SharedIndexInformer
	slices cache.SharedIndexInformer
	// taintRules is nil without the DeviceTaints feature or where
	// kube-apiserver serves no v1 DeviceTaintRules; set by Start.
	taintRules cache.SharedIndexInformer
	classes    cache.SharedIndexInformer
	claims     cache.SharedIndexInformer
	namespaces cache.SharedIndexInformer
	quotas     cache.SharedIndexInformer
	templates  cache.SharedIndexInformer
	pods       cache.SharedIndexInformer

	reserved *Reservations
	// devicePluginHeld: the pods admission kept on the device plugin while
	// DRA was busy, until the informer shows them.
	devicePluginHeld *DevicePluginHolds

	generation atomic.Uint64 // moves with every change a verdict reads
	fleetGen   atomic.Uint64 // moves with every change of the fleet but its allocations
	claimGen   atomic.Uint64 // moves with every change of the allocated claims
	// pendingUnheld moves when a translated pod waiting for its claim shows
	// up without a reservation of this replica (PendingVersion).
	pendingUnheld atomic.Uint64
	podGen        atomic.Uint64 // moves with every change of the bound pods
	synced        atomic.Bool

	// podNodes are the nodes whose bound pods changed since the fleet
	// snapshot last summed their usage (podsChangedOn, takePodNodes).
	podNodesMu sync.Mutex
	podNodes   map[string]bool

	mu      sync.Mutex
	snap    *feasibility.Snapshot
	snapErr error
	builtAt time.Time
	snapRes uint64 // the reservations' version the snapshot holds
	// fleetSnap is the snapshot of the fleet alone (no reservations), at
	// fleetSnapGen of fleetGen, fleetSnapClaims of claimGen and
	// fleetSnapPods of podGen.
	fleetSnap       *feasibility.Snapshot
	fleetSnapGen    uint64
	fleetSnapClaims uint64
	fleetSnapPods   uint64
	// A fleet snapshot whose last build took backgroundBuild or longer is
	// built anew in the background (building) while the checks read the
	// one before, brought up to date as usual; rebuilt is the result, for
	// the next Snapshot to take, and podNodesSince the nodes whose pods
	// changed since it listed them. lastBuild is how long the last took.
	building      bool
	rebuilt       *rebuilt
	podNodesSince map[string]bool
	lastBuild     time.Duration
	// ctx is Start's: a background build ends with it.
	ctx context.Context
	// registrations of the inventory's own event handlers.
	registrations []cache.ResourceEventHandlerRegistration
	onChanges     []func()
}

// New prepares the informers; Start runs them.
func New(client kubernetes.Interface, opts Options) *Inventory {
	if opts.MinRebuildInterval == 0 {
		opts.MinRebuildInterval = 500 * time.Millisecond
	}
	if opts.BackgroundBuild == 0 {
		opts.BackgroundBuild = DefaultBackgroundBuild
	}
	if opts.Features == nil {
		f := feasibility.DefaultFeatures()
		opts.Features = &f
	}
	inv := &Inventory{client: client, opts: opts, reserved: NewReservations(opts.ReservationTTL),
		devicePluginHeld: NewDevicePluginHolds(0)}
	// Informers keep what is read of each object (see transform).
	strip := informers.WithTransform(transform)
	inv.factory = informers.NewSharedInformerFactoryWithOptions(client, opts.Resync, strip)
	inv.ours = informers.NewSharedInformerFactoryWithOptions(client, opts.Resync, strip, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = labels.Set{api.LabelManagedBy: api.ManagedByValue}.String()
	}))
	inv.nodes = inv.factory.Core().V1().Nodes().Informer()
	inv.slices = inv.factory.Resource().V1().ResourceSlices().Informer()
	inv.classes = inv.factory.Resource().V1().DeviceClasses().Informer()
	inv.claims = inv.factory.Resource().V1().ResourceClaims().Informer()
	inv.namespaces = inv.factory.Core().V1().Namespaces().Informer()
	inv.quotas = inv.factory.Core().V1().ResourceQuotas().Informer()
	inv.templates = inv.ours.Resource().V1().ResourceClaimTemplates().Informer()
	inv.pods = inv.factory.Core().V1().Pods().Informer()
	inv.addIndexers()
	inv.handled(inv.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { inv.podEvent(nil, o) },
		UpdateFunc: func(o, n any) {
			inv.podEvent(o, n)
		},
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				inv.reserved.Release(p.Annotations[api.AnnotationAdmission])
				if p.Spec.NodeName != "" {
					inv.podsChangedOn(p.Spec.NodeName)
				}
			}
		},
	}))
	// The generation moves only on what a verdict reads, so that node
	// heartbeats and claims waiting for allocation neither rebuild the
	// snapshot nor empty the verdict cache.
	inv.handled(inv.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { inv.changed() },
		UpdateFunc: func(o, n any) {
			if nodeChanged(o, n) {
				inv.changed()
			}
		},
		DeleteFunc: func(any) { inv.changed() },
	}))
	inv.handled(inv.classes.AddEventHandler(inv.fleetEvents()))
	// The snapshot applies the DeviceTaintRules (their informer starts
	// with Start) to the slices (feasibility.Inventory.TaintRules), as the
	// scheduler's resource slice tracker does; the tracker itself is not
	// used: its index of every device by driver and pool (for the rules'
	// lookups) held a tenth of the heap of a large fleet.
	inv.handled(inv.slices.AddEventHandler(inv.fleetEvents()))
	// A claim allocated, changed or released changes the allocations only:
	// the next snapshot replaces the fleet snapshot's claims
	// (feasibility.Snapshot.ReplaceClaims) instead of indexing the fleet.
	inv.handled(inv.claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if allocated(o) {
				inv.claimsChanged()
			}
		},
		UpdateFunc: func(o, n any) {
			if allocationChanged(o, n) {
				inv.claimsChanged()
			}
		},
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if allocated(o) {
				inv.claimsChanged()
			}
		},
	}))
	return inv
}

// fleetEvents moves the fleet's generation on every event.
func (inv *Inventory) fleetEvents() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { inv.changed() },
		UpdateFunc: func(any, any) { inv.changed() },
		DeleteFunc: func(any) { inv.changed() },
	}
}

// handled keeps the registration of one of the inventory's own event
// handlers, so that Start waits for it to have seen the first list.
func (inv *Inventory) handled(r cache.ResourceEventHandlerRegistration, err error) {
	if err == nil {
		inv.registrations = append(inv.registrations, r)
	}
}

// nodeChanged: a verdict reads a node's labels, taints and schedulability.
func nodeChanged(o, n any) bool {
	a, ok1 := o.(*corev1.Node)
	b, ok2 := n.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return a.Spec.Unschedulable != b.Spec.Unschedulable || !equality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints)
}

// allocated: only allocated claims take devices from the fleet.
func allocated(o any) bool {
	c, ok := o.(*resourceapi.ResourceClaim)
	return !ok || c.Status.Allocation != nil
}

func allocationChanged(o, n any) bool {
	a, ok1 := o.(*resourceapi.ResourceClaim)
	b, ok2 := n.(*resourceapi.ResourceClaim)
	if !ok1 || !ok2 {
		return true
	}
	return !equality.Semantic.DeepEqual(a.Status.Allocation, b.Status.Allocation)
}

func (inv *Inventory) changed() {
	inv.fleetGen.Add(1)
	inv.changedAny()
}

// claimsChanged: an allocation changed, not the fleet.
func (inv *Inventory) claimsChanged() {
	inv.claimGen.Add(1)
	inv.changedAny()
}

// podsChanged: a pod was bound, finished or deleted: the usage of its node
// changed, not the fleet.
func (inv *Inventory) podsChanged() {
	inv.podGen.Add(1)
	inv.changedAny()
}

// podsChangedOn is podsChanged for a pod that was or is bound to these
// nodes: the next snapshot sums their usage again, and only theirs. The
// nodes are recorded before the generations move, so that a snapshot of a
// generation that counts the change also sums their usage (Snapshot).
func (inv *Inventory) podsChangedOn(nodes ...string) {
	inv.podNodesMu.Lock()
	for _, n := range nodes {
		if n == "" {
			continue
		}
		if inv.podNodes == nil {
			inv.podNodes = map[string]bool{}
		}
		inv.podNodes[n] = true
	}
	inv.podNodesMu.Unlock()
	inv.podsChanged()
}

// takePodNodes returns the nodes recorded by podsChangedOn and forgets
// them: one recorded afterwards waits for the next snapshot.
func (inv *Inventory) takePodNodes() []string {
	inv.podNodesMu.Lock()
	defer inv.podNodesMu.Unlock()
	out := make([]string, 0, len(inv.podNodes))
	for n := range inv.podNodes {
		out = append(out, n)
	}
	inv.podNodes = nil
	return out
}

// podsOn lists the pods bound to the node that have not finished, from
// the index by node: what its usage sums.
func (inv *Inventory) podsOn(node string) []*corev1.Pod {
	return indexedAs[*corev1.Pod](inv.pods, indexNodeName, node)
}

func (inv *Inventory) changedAny() {
	inv.generation.Add(1)
	inv.mu.Lock()
	hooks := inv.onChanges
	inv.mu.Unlock()
	for _, h := range hooks {
		h()
	}
}

// OnChange registers a function called after every fleet event.
func (inv *Inventory) OnChange(f func()) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.onChanges = append(inv.onChanges, f)
}

// Start runs the informers until ctx ends. It implements manager.Runnable;
// every replica needs its own caches, so it does not need leader election.
func (inv *Inventory) Start(ctx context.Context) error {
	// DeviceTaintRules are read where kube-apiserver serves them in v1.
	if inv.opts.Features.DeviceTaints {
		served, err := taintRulesServed(inv.client)
		if err != nil {
			return err
		}
		if served {
			inv.taintRules = inv.factory.Resource().V1().DeviceTaintRules().Informer()
			inv.handled(inv.taintRules.AddEventHandler(inv.fleetEvents()))
		} else {
			ctrl.LoggerFrom(ctx).Info("kube-apiserver serves no resource.k8s.io/v1 DeviceTaintRules (Kubernetes 1.37 and later do): slices are read without them")
		}
	}
	inv.mu.Lock()
	inv.ctx = ctx
	inv.mu.Unlock()
	inv.factory.Start(ctx.Done())
	inv.ours.Start(ctx.Done())
	synced := []cache.InformerSynced{inv.nodes.HasSynced, inv.classes.HasSynced, inv.claims.HasSynced,
		inv.namespaces.HasSynced, inv.quotas.HasSynced, inv.templates.HasSynced, inv.pods.HasSynced, inv.slices.HasSynced}
	if inv.taintRules != nil {
		synced = append(synced, inv.taintRules.HasSynced)
	}
	// The handlers have seen every object of the first lists too, not
	// only the caches: the first snapshot lists every pod, and the
	// notifications of the first lists that reach a handler after it would
	// each sum a node's usage again (at 5,000 nodes and 50,000 pods,
	// snapshot updates of thousands of nodes for seconds after the start).
	for _, r := range inv.registrations {
		synced = append(synced, r.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	// The generation moves before the first snapshot can be taken: after
	// it, it would make that snapshot stale at once, and a large fleet's
	// second build would hold both in memory.
	inv.changed()
	inv.synced.Store(true)
	<-ctx.Done()
	inv.factory.Shutdown()
	inv.ours.Shutdown()
	return nil
}

// NeedLeaderElection: every replica serves admissions.
func (inv *Inventory) NeedLeaderElection() bool { return false }

// Synced reports whether every cache has synced.
func (inv *Inventory) Synced() bool { return inv.synced.Load() }

// ErrNotSynced is returned while the caches are filling.
var ErrNotSynced = errors.New("inventory not synced")

// Snapshot returns the fleet as a feasibility snapshot. A new one is built
// when the fleet changed, at most once per MinRebuildInterval.
//
// The fleet snapshot (without reservations) is rebuilt only when the fleet
// changed; the reservations are added to it in time proportional to them
// (feasibility.Snapshot.WithClaims), so that a burst's admissions do not
// each index the whole fleet again. A change of the allocated claims alone
// replaces its claims (ReplaceClaims), in time proportional to them and
// the nodes they are on; a change of the bound pods sums the usage of the
// nodes the pod events named again, from their pods (UpdatePods): not the
// fleet's.
func (inv *Inventory) Snapshot(now time.Time) (*feasibility.Snapshot, error) {
	if !inv.Synced() {
		return nil, ErrNotSynced
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	// Reservations change with every admission of a burst: a snapshot that
	// does not hold the current ones is rebuilt at once, whatever the
	// interval, or the pods of a burst would all see the same free devices.
	claimed := inv.reserved.sweep(now, inv)
	res := inv.reserved.Version()
	if res != inv.snapRes {
		inv.generation.Add(1)
	}
	gen := inv.generation.Load()
	if inv.snap != nil && res == inv.snapRes && (inv.snap.Generation() == gen || now.Sub(inv.builtAt) < inv.opts.MinRebuildInterval) {
		return inv.snap, inv.snapErr
	}
	// The nodes whose pods changed are taken after gen was read and before
	// the pods' generation (in decideUpdate): a change that gen counts was
	// recorded before it moved it, and one recorded after they are taken
	// stays for the next snapshot, whose generation it moved.
	podNodes, swapped := inv.takeChanges()
	u := inv.decideUpdate(gen, claimed, podNodes, swapped)
	if err := inv.updateFleet(u); err != nil {
		return nil, err
	}
	snap := inv.withReservations(u)
	inv.snap, inv.snapErr, inv.builtAt, inv.snapRes = snap, nil, now, res
	return snap, nil
}

// fleetUpdate is how one Snapshot brings the fleet snapshot up to date.
type fleetUpdate struct {
	// gen is the snapshot's generation; fleetGen, claimGen and podGen those
	// of the fleet, the allocated claims and the bound pods it reads.
	gen, fleetGen, claimGen, podGen uint64
	// podNodes are the nodes whose bound pods changed, to sum again.
	podNodes []string
	// claimed: a reservation was dropped for its pod's allocated claim.
	claimed bool
	// rebuild the fleet snapshot, in the background or at once, and why.
	rebuild, background bool
	why                 string
	// timed observes the parts of the update (inv.timer).
	timed func(part, why string, args ...any)
}

// takeChanges takes the nodes whose bound pods changed, and the fleet
// snapshot a background build finished (swapped) with the nodes whose pods
// changed while it ran; inv.mu is held.
func (inv *Inventory) takeChanges() (podNodes []string, swapped bool) {
	podNodes = inv.takePodNodes()
	if inv.building {
		for _, n := range podNodes {
			inv.podNodesSince[n] = true
		}
	}
	r := inv.rebuilt
	if r == nil {
		return podNodes, false
	}
	// Built in the background: it summed the usage of every node as its
	// pods were when it listed them, and holds the claims and the fleet of
	// the generations read before; what changed since is brought up to
	// date by updateFleet.
	inv.rebuilt = nil
	if r.err != nil {
		return podNodes, false
	}
	inv.fleetSnap = r.snap
	inv.fleetSnapGen, inv.fleetSnapClaims, inv.fleetSnapPods = r.fleetGen, r.claimGen, r.podGen
	for n := range r.podNodesSince {
		podNodes = append(podNodes, n)
	}
	return podNodes, true
}

// decideUpdate reads the generations and decides whether the fleet
// snapshot is rebuilt, in the background or at once, or brought up to
// date (claimed: a reservation was dropped for its pod's allocated claim);
// inv.mu is held.
func (inv *Inventory) decideUpdate(gen uint64, claimed bool, podNodes []string, swapped bool) fleetUpdate {
	u := fleetUpdate{gen: gen, fleetGen: inv.fleetGen.Load(), claimGen: inv.claimGen.Load(), podGen: inv.podGen.Load(), podNodes: podNodes, claimed: claimed}
	u.timed = inv.timer()
	u.rebuild = inv.fleetSnap == nil || inv.fleetSnapGen != u.fleetGen || inv.fleetSnap.Stale()
	u.background = inv.fleetSnap != nil && inv.opts.BackgroundBuild >= 0 && inv.lastBuild >= inv.opts.BackgroundBuild && inv.opts.MinRebuildInterval >= 0
	u.why = "the fleet changed"
	switch {
	case inv.fleetSnap == nil:
		u.why = "first"
	case inv.fleetSnapGen == u.fleetGen:
		u.why = "updates replaced half the nodes"
	}
	// Not when a build was just taken: the pods that changed while it ran
	// are brought up to date here, or builds would follow one another.
	if u.background && !u.rebuild && !swapped && len(u.podNodes) > catchUpNodes && len(u.podNodes) > inv.NodeCount()/16 {
		// The pods of many nodes changed at once (nodes drained, a large
		// Job done): summing their usage again costs a good part of a
		// build, which the background does; the checks meanwhile read the
		// usage before.
		// (A build running has them already, in takeChanges; one started
		// by updateFleet lists the pods as they are now.)
		u.rebuild, u.why = true, fmt.Sprintf("the bound pods of %d nodes changed", len(u.podNodes))
		u.podNodes = nil
	}
	return u
}

// updateFleet rebuilds the fleet snapshot at once, or starts a background
// build and brings the one in use up to date with the claims and the pods
// that changed; inv.mu is held.
func (inv *Inventory) updateFleet(u fleetUpdate) error {
	switch {
	case u.rebuild && !u.background:
		start := time.Now()
		fleet, err := inv.fleet()
		if err != nil {
			return err
		}
		// It lists every pod: the nodes taken need no update of their own.
		base, err := feasibility.NewSnapshot(fleet, u.gen, *inv.opts.Features)
		if err != nil {
			return fmt.Errorf("build inventory snapshot: %w", err)
		}
		inv.fleetSnap, inv.lastBuild = base, time.Since(start)
		u.timed("fleet", u.why)
	default:
		if u.rebuild {
			inv.buildInBackground(u.gen, u.fleetGen, u.claimGen, u.podGen, u.why)
		}
		// A reservation dropped for its pod's allocated claim: the claim is
		// in the informer's store, and maybe not yet in claimGen.
		if inv.fleetSnapClaims != u.claimGen || u.claimed {
			inv.fleetSnap = inv.fleetSnap.ReplaceClaims(listAs[*resourceapi.ResourceClaim](inv.claims), u.gen)
			u.timed("claims", "allocations changed")
		}
		if inv.fleetSnapPods != u.podGen || len(u.podNodes) > 0 {
			inv.fleetSnap = inv.fleetSnap.UpdatePods(u.podNodes, inv.podsOn, u.gen)
			u.timed("pods", "the bound pods of %d nodes changed", len(u.podNodes))
		}
	}
	if !inv.building {
		// While a build runs, the fleet snapshot in use is older than
		// fleetGen: a build that fails leaves it so, to be tried again.
		inv.fleetSnapGen = u.fleetGen
	}
	inv.fleetSnapClaims, inv.fleetSnapPods = u.claimGen, u.podGen
	return nil
}

// withReservations is the fleet snapshot with the reservations held now;
// inv.mu is held.
func (inv *Inventory) withReservations(u fleetUpdate) *feasibility.Snapshot {
	snap := inv.fleetSnap
	if claims := inv.reserved.AsClaims(); len(claims) > 0 || snap.Generation() != u.gen {
		// Reservations only added since the last snapshot, on the same
		// fleet: the checks of a burst ask the node they chose before
		// first (feasibility.Snapshot.WithClaimsAfter).
		snap = snap.WithClaimsAfter(inv.snap, claims, u.gen)
		u.timed("reservations", "%d reservations", len(claims))
	}
	return snap
}

// DefaultBackgroundBuild is Options.BackgroundBuild's default.
const DefaultBackgroundBuild = 50 * time.Millisecond

// rebuilt is a fleet snapshot built in the background.
type rebuilt struct {
	snap                       *feasibility.Snapshot
	err                        error
	fleetGen, claimGen, podGen uint64
	podNodesSince              map[string]bool
}

// buildInBackground starts building the fleet snapshot anew unless a
// build runs; inv.mu is held. The generations are read before the build
// lists the informers' objects, so that a change it may miss moves them
// past what it records, and the next Snapshot brings it up to date.
func (inv *Inventory) buildInBackground(gen, fleetGen, claimGen, podGen uint64, why string) {
	if inv.building {
		return
	}
	inv.building, inv.podNodesSince = true, map[string]bool{}
	ctx := inv.ctx
	go func() {
		start := time.Now()
		r := &rebuilt{fleetGen: fleetGen, claimGen: claimGen, podGen: podGen}
		fleet, err := inv.fleet()
		if err == nil {
			r.snap, err = feasibility.NewSnapshot(fleet, gen, *inv.opts.Features)
		}
		if err == nil && inv.opts.Prepare != nil {
			// The node classes and allocators the first checks on it
			// would build, built here instead.
			inv.opts.Prepare(ctx, r.snap)
		}
		if err == nil {
			r.snap = inv.catchUp(r.snap, gen)
		}
		r.err = err
		d := time.Since(start)
		if err != nil {
			ctrl.Log.WithName("inventory").Error(err, "build the fleet snapshot in the background; the one before stays in use")
		}
		inv.observeUpdate("fleet", d, why, "background", true)
		inv.mu.Lock()
		r.podNodesSince = inv.podNodesSince
		inv.rebuilt, inv.building, inv.podNodesSince, inv.lastBuild = r, false, nil, d
		inv.mu.Unlock()
		// The next Snapshot takes it.
		inv.generation.Add(1)
	}()
}

// catchUpNodes: a build done while the pods of more nodes than this
// changed sums their usage again itself, before it is taken (a variable
// for the tests).
var catchUpNodes = 64

// catchUp sums the usage of the nodes whose pods changed while snap was
// built, in the background, until few are left for the Snapshot that
// takes it (at most a few rounds: under constant churn the rest waits).
func (inv *Inventory) catchUp(snap *feasibility.Snapshot, gen uint64) *feasibility.Snapshot {
	for range 3 {
		inv.mu.Lock()
		since := inv.podNodesSince
		if len(since) <= catchUpNodes {
			inv.mu.Unlock()
			return snap
		}
		inv.podNodesSince = map[string]bool{}
		inv.mu.Unlock()
		nodes := make([]string, 0, len(since))
		for n := range since {
			nodes = append(nodes, n)
		}
		snap = snap.UpdatePods(nodes, inv.podsOn, gen)
	}
	return snap
}

// slowSnapshotUpdate: a part of a snapshot update that takes longer is
// logged with why it ran.
const slowSnapshotUpdate = 100 * time.Millisecond

// timer returns a function that observes the time since its last call
// (or since timer) as the part named (observeUpdate).
func (inv *Inventory) timer() func(part, why string, args ...any) {
	last := time.Now()
	return func(part, why string, args ...any) {
		now := time.Now()
		d := now.Sub(last)
		last = now
		inv.observeUpdate(part, d, fmt.Sprintf(why, args...))
	}
}

// observeUpdate observes how long a part of a snapshot update took and
// logs one over slowSnapshotUpdate with why it ran (and kv).
func (inv *Inventory) observeUpdate(part string, d time.Duration, why string, kv ...any) {
	if inv.opts.SnapshotUpdates != nil {
		inv.opts.SnapshotUpdates.WithLabelValues(part).Observe(d.Seconds())
	}
	if d >= slowSnapshotUpdate {
		ctrl.Log.WithName("inventory").Info("slow snapshot update", append([]any{"part", part, "why", why, "duration", d, "nodes", inv.NodeCount()}, kv...)...)
	}
}

// Reservations is the record of the devices held for pods just admitted.
func (inv *Inventory) Reservations() *Reservations { return inv.reserved }

// podEvent keeps the usage of the nodes and the reservations current: a
// pod bound, finished or deleted changes what a node has free; the
// reservation of a translated pod ends when it is gone, or when its claim
// shows up allocated (Reservations.Seen).
func (inv *Inventory) podEvent(o, n any) {
	p, ok := n.(*corev1.Pod)
	if !ok {
		return
	}
	if id := p.Annotations[api.AnnotationDevicePluginHold]; id != "" {
		inv.devicePluginHeld.Seen(id) // the pods of the inventory count it now
	}
	if id := p.Annotations[api.AnnotationAdmission]; id != "" {
		if PodGone(p) {
			inv.reserved.Release(id)
		} else {
			inv.reserved.Seen(id, p.UID)
			if !PodDone(p) && !inv.reserved.Held(id, time.Now()) {
				// Translated, waiting, and not held here: another
				// replica's, or this one's before a restart.
				inv.pendingUnheld.Add(1)
			}
		}
	}
	old, _ := o.(*corev1.Pod)
	if old == nil {
		if p.Spec.NodeName != "" {
			inv.podsChangedOn(p.Spec.NodeName)
		}
		return
	}
	// A bound pod resized in place changes its node's usage too: the
	// snapshot sums only the nodes named here.
	if old.Spec.NodeName != p.Spec.NodeName || (old.Status.Phase != p.Status.Phase && PodDone(p)) ||
		p.Spec.NodeName != "" && requestsChanged(old, p) {
		inv.podsChangedOn(old.Spec.NodeName, p.Spec.NodeName)
	}
}

// requestsChanged: what the pod requests of its node may differ (the
// containers' resources, overhead or pod-level resources, as slimPod
// keeps them).
func requestsChanged(old, p *corev1.Pod) bool {
	return !equality.Semantic.DeepEqual(old.Spec.Containers, p.Spec.Containers) ||
		!equality.Semantic.DeepEqual(old.Spec.InitContainers, p.Spec.InitContainers) ||
		!equality.Semantic.DeepEqual(old.Spec.Overhead, p.Spec.Overhead) ||
		!equality.Semantic.DeepEqual(old.Spec.Resources, p.Spec.Resources)
}

// PendingTranslated lists the translated pods that wait for their claims
// (not bound yet), in creation order: those this replica does not hold
// devices for were admitted by another replica, or before a restart. An
// index answers it, in time proportional to those pods, not to all.
func (inv *Inventory) PendingTranslated() []*corev1.Pod {
	return inv.PendingTranslatedWhere(nil)
}

// PendingTranslatedWhere is PendingTranslated of the pods keep keeps (all
// for nil): those are sorted only, so that an admission that looks for the
// pods no replica holds devices for does not sort every pending pod.
func (inv *Inventory) PendingTranslatedWhere(keep func(*corev1.Pod) bool) []*corev1.Pod {
	objs, err := inv.pods.GetIndexer().ByIndex(indexPendingTranslated, indexPendingTranslated)
	if err != nil {
		return nil
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p := o.(*corev1.Pod); keep == nil || keep(p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, PendingOrder)
	return out
}

// PendingVersion moves when a translated pod waiting for its claim shows
// up, or changes, without a reservation of this replica holding its
// devices: a TakeOver then has a pod to look at (Reservations.TakeOver).
func (inv *Inventory) PendingVersion() uint64 { return inv.pendingUnheld.Load() }

// Allocations implements handler's allocationSource: the claim indexes.
func (inv *Inventory) Allocations() Allocations { return inv }

// AllocationsVersion moves with every change of the allocated claims the
// indexes answer for (Reservations.Conflicting): it moves after the
// indexes show the change.
func (inv *Inventory) AllocationsVersion() uint64 { return inv.claimGen.Load() }

// DeviceAllocated implements Allocations from the claim index.
func (inv *Inventory) DeviceAllocated(key string) bool {
	objs, err := inv.claims.GetIndexer().ByIndex(indexAllocatedDevice, key)
	return err == nil && len(objs) > 0
}

// PodClaimAllocated implements Allocations from the claim index.
func (inv *Inventory) PodClaimAllocated(uid types.UID) bool {
	objs, err := inv.claims.GetIndexer().ByIndex(indexAllocatedOwner, string(uid))
	return err == nil && len(objs) > 0
}

// NotRunning lists the pods that ask for an extended resource and do not
// run (candidates for LegacyUnservable), in creation order: not bound to a
// node yet; bound and still Pending (a pod bound at creation whose node's
// kubelet has not admitted it); or refused by the kubelet for want of an
// extended resource (Failed, reason OutOf<resource>: after the switch to
// DRA a node no longer offers the device plugin's resource). Neither those
// being deleted nor those that ran to an end. An index answers it, in time
// proportional to those pods.
func (inv *Inventory) NotRunning() []*corev1.Pod {
	out := indexedAs[*corev1.Pod](inv.pods, indexNotRunningExtended, indexNotRunningExtended)
	slices.SortFunc(out, PendingOrder)
	return out
}

// HoldDevicePlugin counts the pod of an admission kept on the device plugin
// while DRA was busy until the informer shows it
// (api.AnnotationDevicePluginHold).
func (inv *Inventory) HoldDevicePlugin(id string, pod *corev1.Pod, now time.Time) {
	inv.devicePluginHeld.Hold(id, pod, now)
}

// DevicePluginPods lists the pods that kube-scheduler will place on
// device-plugin nodes before a pod admitted now, as far as the informer
// shows them: not bound yet and asking for an extended resource, in
// creation order; then the pods kept on the device plugin a moment ago
// that it does not show yet (HoldDevicePlugin), in admission order. podsOn
// gives the pods bound to a node as the informer shows them when it is
// called: the snapshot sums them at most every MinRebuildInterval, and a
// pod bound since would count nowhere. Read in this order (held, unbound,
// bound), a pod moving along is counted twice for a moment, never missed.
func (inv *Inventory) DevicePluginPods(now time.Time) (waiting []*corev1.Pod, podsOn func(node string) []*corev1.Pod) {
	held := inv.devicePluginHeld.Pods(now)
	waiting = slices.DeleteFunc(inv.NotRunning(), func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	return append(waiting, held...), inv.podsOn
}

// Indexes of the caches that admission reads without listing.
const (
	indexNotRunningExtended = "not-running-extended"
	indexPendingTranslated  = "pending-translated"
	indexAllocatedDevice    = "allocated-device"
	indexAllocatedOwner     = "allocated-owner"
	indexNodeName           = "node-name"
)

// addIndexers adds the indexes; before the informers start.
func (inv *Inventory) addIndexers() {
	_ = inv.pods.AddIndexers(cache.Indexers{
		indexPendingTranslated: func(obj any) ([]string, error) {
			if p, ok := obj.(*corev1.Pod); ok && p.Annotations[api.AnnotationAdmission] != "" && !PodDone(p) {
				return []string{indexPendingTranslated}, nil
			}
			return nil, nil
		},
		indexNotRunningExtended: func(obj any) ([]string, error) {
			if p, ok := obj.(*corev1.Pod); ok && NotRunning(p) && podfacts.NamesExtended(p) {
				return []string{indexNotRunningExtended}, nil
			}
			return nil, nil
		},
		// The pods whose requests a node's usage sums (podsOn): bound to
		// it and not finished, as the snapshot counts them.
		indexNodeName: func(obj any) ([]string, error) {
			if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" &&
				p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				return []string{p.Spec.NodeName}, nil
			}
			return nil, nil
		},
	})
	_ = inv.claims.AddIndexers(cache.Indexers{
		indexAllocatedDevice: func(obj any) ([]string, error) {
			if c, ok := obj.(*resourceapi.ResourceClaim); ok {
				return AllocatedDevices(c), nil
			}
			return nil, nil
		},
		indexAllocatedOwner: func(obj any) ([]string, error) {
			c, ok := obj.(*resourceapi.ResourceClaim)
			if !ok {
				return nil, nil
			}
			var out []string
			for _, uid := range AllocatedOwners(c) {
				out = append(out, string(uid))
			}
			return out, nil
		},
	})
}

// PendingSince gives, by admission id, the creation time of the
// translated pods that wait for their claims (the report's Waiting rows).
func (inv *Inventory) PendingSince() map[string]time.Time {
	out := map[string]time.Time{}
	for _, p := range inv.PendingTranslated() {
		out[p.Annotations[api.AnnotationAdmission]] = p.CreationTimestamp.Time
	}
	return out
}

// fleet lists the caches; the snapshot applies the DeviceTaintRules to
// the slices, as kube-scheduler's resource slice tracker does.
func (inv *Inventory) fleet() (*feasibility.Inventory, error) {
	var rules []*resourceapi.DeviceTaintRule
	if inv.taintRules != nil {
		rules = listAs[*resourceapi.DeviceTaintRule](inv.taintRules)
	}
	return &feasibility.Inventory{
		Nodes:      listAs[*corev1.Node](inv.nodes),
		Slices:     listAs[*resourceapi.ResourceSlice](inv.slices),
		TaintRules: rules,
		Classes:    listAs[*resourceapi.DeviceClass](inv.classes),
		Claims:     listAs[*resourceapi.ResourceClaim](inv.claims),
		Pods:       listAs[*corev1.Pod](inv.pods),
		// Every pod is listed, so a node's usage is known even with none.
		PodsListed: true,
	}, nil
}

// NodeCount is the number of nodes in the cache.
func (inv *Inventory) NodeCount() int { return len(inv.nodes.GetStore().ListKeys()) }

// Nodes lists the nodes of the cache (slimmed: labels, capacity,
// allocatable, taints).
func (inv *Inventory) Nodes() []*corev1.Node { return listAs[*corev1.Node](inv.nodes) }

// Classes lists the DeviceClasses.
func (inv *Inventory) Classes() []*resourceapi.DeviceClass {
	return listAs[*resourceapi.DeviceClass](inv.classes)
}

// Quotas lists the ResourceQuotas of a namespace.
func (inv *Inventory) Quotas(namespace string) []*corev1.ResourceQuota {
	return indexedAs[*corev1.ResourceQuota](inv.quotas, cache.NamespaceIndex, namespace)
}

// Template returns claimbridge's template of that namespace and name from
// the cache.
func (inv *Inventory) Template(namespace, name string) (*resourceapi.ResourceClaimTemplate, bool) {
	obj, ok, err := inv.templates.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	return obj.(*resourceapi.ResourceClaimTemplate), true
}

// Pods lists the pods of a namespace in the cache, of all for ""
// (slimmed: see slimPod).
func (inv *Inventory) Pods(namespace string) []*corev1.Pod {
	if namespace == "" {
		return listAs[*corev1.Pod](inv.pods)
	}
	return indexedAs[*corev1.Pod](inv.pods, cache.NamespaceIndex, namespace)
}

// AddPodEventHandler adds a handler of the pod informer's events (the
// leader's controllers watch pods through the inventory's informer, not
// one of their own).
func (inv *Inventory) AddPodEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return inv.pods.AddEventHandler(h)
}

// RemovePodEventHandler removes a handler AddPodEventHandler added.
func (inv *Inventory) RemovePodEventHandler(reg cache.ResourceEventHandlerRegistration) error {
	return inv.pods.RemoveEventHandler(reg)
}

// Templates lists claimbridge's templates.
func (inv *Inventory) Templates() []*resourceapi.ResourceClaimTemplate {
	return listAs[*resourceapi.ResourceClaimTemplate](inv.templates)
}

// indexedAs lists the objects of an informer's index under key as T.
func indexedAs[T any](i cache.SharedIndexInformer, index, key string) []T {
	objs, err := i.GetIndexer().ByIndex(index, key)
	if err != nil {
		return nil
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

func listAs[T any](i cache.SharedIndexInformer) []T {
	objs := i.GetStore().List()
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}
