package feasibility

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/claimbridge/claimbridge/feasibility/identity"
	"github.com/claimbridge/claimbridge/feasibility/legacy"
	"github.com/claimbridge/claimbridge/feasibility/signature"
	"github.com/claimbridge/claimbridge/feasibility/upstream"
)

// Features selects the allocator features; the names map to feature gates as in kube-scheduler's
// AllocatorFeatures (see [DefaultFeatures]). DeviceTaints also enables applying DeviceTaintRules
// (DRADeviceTaintRules is GA together with DRADeviceTaints in 1.37).
type Features = structured.Features

// DefaultFeatures returns the allocator features of a Kubernetes 1.37 cluster with default
// feature gates: DRAAdminAccess, DRAPrioritizedList, DRAPartitionableDevices, DRADeviceTaints,
// DRADeviceBindingConditions+DRAResourceClaimDeviceStatus and DRAConsumableCapacity on;
// DRAFractionalCapacityRange (beta, off by default), DRAListTypeAttributes,
// DRAOptionalNodeOperations, DRADerivedAttributes and DRADeviceCompatibilityGroups (alpha) off.
func DefaultFeatures() Features {
	return Features{
		AdminAccess:            true,
		PrioritizedList:        true,
		PartitionableDevices:   true,
		DeviceTaints:           true,
		DeviceBindingAndStatus: true,
		ConsumableCapacity:     true,
	}
}

// Snapshot is an immutable view of one inventory generation, built once by [NewSnapshot] and
// shared by any number of concurrent checks. It holds the slices with DeviceTaintRules applied,
// the allocated state, and the per-node device index used for pruning.
type Snapshot struct {
	generation uint64
	features   Features
	classes    map[string]*resourceapi.DeviceClass
	slices     []*resourceapi.ResourceSlice
	allocated  structured.AllocatedState
	// nodes sorted by name; index by position. In a snapshot made by
	// WithClaims, ReplaceClaims or ReplacePods they are its base's: read
	// their allocated and busy marks and their usage through nodeAt.
	nodes []*nodeInfo
	// devices counts the devices visible to at least one node.
	devices int
	// claims are the inventory's claims (the allocated state's source),
	// pods and podsListed its pods (the nodes' usage). pods is nil in a
	// snapshot made by UpdatePods: only the nodes' usage holds them then.
	claims     []*resourceapi.ResourceClaim
	pods       []*corev1.Pod
	podsListed bool
	// pools indexes the nodes by the pools they see (WithClaims);
	// nodeSlices the slices by node and pool (revalidate).
	pools      *poolIndex
	nodeSlices *upstream.SliceIndex
	// base is the snapshot built by NewSnapshot that this one was derived
	// from by WithClaims (nil for one built by NewSnapshot); replaced are
	// the nodes, by position, whose allocated devices differ from base's,
	// with this snapshot's marks (nodeAt).
	base     *Snapshot
	replaced map[int]*nodeInfo
	// id is unique per snapshot. epoch is shared by the snapshots of one
	// lineage: the same fleet and pods, each holding every allocation of
	// the one before it and maybe more (WithClaimsAfter), so that a node
	// that could not serve a pod on one cannot serve it on a later one.
	// root is the id of the snapshot WithClaims derived this one from and
	// held the claims it holds on top of it (0 and nil otherwise);
	// WithClaimsAfter keeps them along a chain of snapshots it derived one
	// from the other.
	id, epoch, root uint64
	held            []*resourceapi.ResourceClaim

	mu         sync.Mutex
	allocators map[*cel.Cache]*allocatorPair
	// shares are Checker.Sharing's answers, by policy fingerprint (guarded
	// by mu).
	shares map[string]FleetSharing

	// unknowns: some device has unknown attributes (a forecast fleet's).
	unknowns bool

	// devicePlugin holds the nodes for the device plugin's side (LegacyOffers,
	// LegacyUnservable) and answers their questions of every node once per
	// fleet snapshot (shared by the snapshots derived from it).
	devicePlugin *legacy.Nodes

	// selectors remembers what the selectors of the checks answered on the
	// devices; nil in a derived snapshot, which reads its base's.
	selectors *signature.Memo

	// pooledBy holds, per set of pool labels, the positions of the nodes
	// of autoscaled pools (pooled), computed on first use.
	pooledMu sync.Mutex
	pooledBy map[string][]int

	// nameIndex gives a node's position by its name, built on first use
	// (nodeIndex).
	nameOnce  sync.Once
	nameIndex map[string]int

	// Node classes for the placement check, computed on first use.
	classOnce          sync.Once
	nodeClasses        []*nodeClass
	classesFingerprint string
	// split: some slice's devices hold their identities apart (package
	// identity); the allocator is then given a node's slices whole.
	split bool
}

type allocatorPair struct {
	now, free structured.Allocator
	err       error
}

// nodeInfo is one node and the devices it can see.
type nodeInfo struct {
	node    *corev1.Node
	devices []deviceRef
	// busy: some visible device is allocated (exclusively or shared). A node that is not busy
	// gives the same allocator answer with and without the allocated state.
	busy bool
	// classKey identifies the node's class (see classes.go); set with the
	// classes. A copy that WithClaims made holds its original instead
	// (read both with class).
	classKey string
	// classIndex is the class's index in its snapshot's list (from 1; 0
	// before the classes are computed and for a node without devices).
	classIndex int
	orig       *nodeInfo
	// used sums the requests of the inventory's pods bound to the node, and
	// pods counts them; usageKnown is false when the inventory lists no pods.
	used       corev1.ResourceList
	pods       int64
	usageKnown bool
}

// deviceRef is one device as the allocator would see it from a node.
type deviceRef struct {
	driver, pool string
	device       *resourceapi.Device
	id           structured.DeviceID
	// allocated: dedicated to an existing claim (not usable unless adminAccess).
	allocated bool
	multi     bool
	// slot numbers the device in its fleet snapshot (signature.Memo).
	slot int
	// unknown lists the qualified names of the attributes and capacities
	// its driver publishes that the device leaves out because their values
	// are not known (its slice's claimbridge.io/unknown-attributes: a
	// forecast's device), sorted; shared by the devices of the slice.
	unknown []string
	// ids are the device's identities its attribute map leaves out
	// (package identity: the inventory's devices).
	ids []identity.Attribute
}

// sig is the device as the selector memo and the class keys read it.
func (d *deviceRef) sig() signature.Device {
	return signature.Device{Slot: d.slot, Driver: d.driver, Device: d.device, Unknown: d.unknown, Identity: d.ids}
}

// attributes are all the device's attributes. The caller must not change
// them.
func (d *deviceRef) attributes() map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	return identity.Merged(d.device, d.ids)
}

// selectorMemo returns the memo of the snapshot's fleet snapshot, or nil
// for a snapshot assembled without NewSnapshot (nothing is remembered then).
func (s *Snapshot) selectorMemo() *signature.Memo {
	return s.fleetSnapshot().selectors
}

// Generation is the inventory generation the snapshot was built for.
func (s *Snapshot) Generation() uint64 { return s.generation }

// Features returns the allocator features of the snapshot.
func (s *Snapshot) Features() Features { return s.features }

// NewSnapshot indexes inv. generation must change whenever the inventory does: verdicts are
// cached by (claims, generation). The inventory's objects are not modified and must not be
// modified afterwards. An error means the inventory is inconsistent (e.g. duplicate nodes).
// A fleet that publishes list-type attributes is checked with features.ListTypeAttributes,
// whatever features says: only a cluster with DRAListTypeAttributes stores them.
func NewSnapshot(inv *Inventory, generation uint64, features Features) (*Snapshot, error) {
	if inv == nil {
		return nil, fmt.Errorf("new snapshot: nil inventory")
	}
	s := &Snapshot{
		generation: generation,
		features:   features,
		classes:    map[string]*resourceapi.DeviceClass{},
		allocators: map[*cel.Cache]*allocatorPair{},
		claims:     inv.Claims,
		pods:       inv.Pods,
		podsListed: inv.PodsListed,
		pools:      &poolIndex{},
		nodeSlices: &upstream.SliceIndex{},
	}
	s.id = snapshotIDs.Add(1)
	s.epoch = s.id
	if err := s.addClasses(inv.Classes); err != nil {
		return nil, err
	}

	// DeviceTaintRules, as the scheduler's ListWithDeviceTaintRules (resourceslice/tracker).
	s.slices = inv.Slices
	if features.DeviceTaints && len(inv.TaintRules) > 0 {
		s.slices = upstream.ApplyTaintRules(inv.Slices, inv.TaintRules)
	}

	s.allocated = upstream.AllocatedState(inv.Claims, features)

	byName, err := s.addNodes(inv.Nodes)
	if err != nil {
		return nil, err
	}
	addUsage(s.nodes, byName, inv.Pods, inv.PodsListed)
	s.indexDevices(byName)
	s.markBusy()
	return s, nil
}

// addClasses adds the DeviceClasses by name. The same class loaded twice
// (e.g. from two fleet directories) is fine; two different classes of one
// name are an error.
func (s *Snapshot) addClasses(classes []*resourceapi.DeviceClass) error {
	for _, c := range classes {
		if old, ok := s.classes[c.Name]; ok {
			if !apiequality.Semantic.DeepEqual(old.Spec, c.Spec) {
				return fmt.Errorf("new snapshot: conflicting device classes named %q", c.Name)
			}
			continue
		}
		s.classes[c.Name] = c
	}
	return nil
}

// addNodes makes the snapshot's nodes, in name order, and returns their
// positions by name. Two nodes of one name are an error.
func (s *Snapshot) addNodes(list []*corev1.Node) (map[string]int, error) {
	nodes := slices.Clone(list)
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	s.devicePlugin = legacy.NewNodes(nodes)
	byName := make(map[string]int, len(nodes))
	// The nodes' infos in one array, their pointers in another: two
	// allocations for the fleet rather than one per node.
	infos := make([]nodeInfo, len(nodes))
	s.nodes = make([]*nodeInfo, len(nodes))
	for i, n := range nodes {
		if _, ok := byName[n.Name]; ok {
			return nil, fmt.Errorf("new snapshot: duplicate node %q", n.Name)
		}
		byName[n.Name] = i
		infos[i].node = n
		s.nodes[i] = &infos[i]
	}
	return byName, nil
}

// markBusy marks the nodes that see an allocated device, exclusively or
// shared.
func (s *Snapshot) markBusy() {
	shared := upstream.SharedDevices(s.allocated)
	if s.allocated.AllocatedDevices.Len() == 0 && shared.Len() == 0 {
		// Nothing is allocated: no node is busy, and no device needs a look.
		return
	}
	for _, ni := range s.nodes {
		for _, d := range ni.devices {
			if d.allocated || shared.Has(d.id) {
				ni.busy = true
				break
			}
		}
	}
}

// allocators returns the allocators for the current allocated state ("now") and for an empty
// one ("free"), built once per snapshot and CEL cache.
func (s *Snapshot) allocatorsFor(ctx context.Context, celCache *cel.Cache) (*allocatorPair, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.allocators[celCache]; ok {
		return p, p.err
	}
	p := &allocatorPair{}
	lister := upstream.ClassLister(s.classes)
	switch {
	case s.base != nil:
		// A snapshot of a burst asks few nodes (a lineage): an allocator
		// per node over the slices it reads answers as one over all, and
		// costs no indexing of the whole fleet per snapshot.
		p.now, p.err = newNodeAllocator(ctx, s, lister, celCache, false)
	case s.split:
		// Devices with identities held apart are given to the allocator
		// whole, a node's at a time: never the whole fleet's at once.
		p.now, p.err = newNodeAllocator(ctx, s, lister, celCache, false)
		if p.err == nil {
			p.free, p.err = newNodeAllocator(ctx, s, lister, celCache, true)
		}
	default:
		p.now, p.err = structured.NewAllocator(ctx, s.features, s.allocated, lister, s.slices, celCache)
		if p.err == nil {
			p.free, p.err = structured.NewAllocator(ctx, s.features, upstream.EmptyAllocatedState(), lister, s.slices, celCache)
		}
	}
	if p.err != nil {
		p.err = fmt.Errorf("new allocator: %w", p.err)
	}
	if p.err == nil && s.base != nil {
		// The same slices with every device free: the fleet snapshot's.
		var fleet *allocatorPair
		if fleet, p.err = s.base.allocatorsFor(ctx, celCache); p.err == nil {
			p.free = fleet.free
		}
	} else if p.err == nil {
		p.free = s.viewed(p.free, true, lister, celCache)
	}
	if p.err == nil {
		p.now = s.viewed(p.now, false, lister, celCache)
	}
	s.allocators[celCache] = p
	return p, p.err
}

// fleetSnapshot is the snapshot NewSnapshot built that s was derived
// from (s itself for one NewSnapshot built): the fleet, its nodes and the
// memos they share.
func (s *Snapshot) fleetSnapshot() *Snapshot {
	if s.base != nil {
		return s.base
	}
	return s
}

// nodeIndex returns the position of the named node in s.nodes. A derived
// snapshot's nodes are at its fleet snapshot's positions: they share one
// index.
func (s *Snapshot) nodeIndex(name string) (int, bool) {
	root := s.fleetSnapshot()
	root.nameOnce.Do(func() {
		root.nameIndex = make(map[string]int, len(root.nodes))
		for i, ni := range root.nodes {
			root.nameIndex[ni.node.Name] = i
		}
	})
	i, ok := root.nameIndex[name]
	return i, ok
}
