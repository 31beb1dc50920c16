package feasibility

// Snapshots that differ from another only by allocations: the devices the
// webhook holds for pods it just admitted (reservations) change with every
// admission of a burst, the fleet does not. WithClaims shares the fleet part
// of a snapshot (slices, node objects, device index, node classes, the
// allocator over free devices) and copies only the nodes whose devices the
// added allocations touch.

import (
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/claimbridge/claimbridge/feasibility/upstream"
)

// snapshotIDs numbers the snapshots (Snapshot.id).
var snapshotIDs atomic.Uint64

// poolIndex lists, per pool (driver, pool), the positions of the nodes that
// see one of its devices, in node order. Built once per fleet snapshot, on
// the first WithClaims, and shared by every snapshot derived from it.
type poolIndex struct {
	once  sync.Once
	nodes map[[2]string][]int
}

func (x *poolIndex) build(nodes []*nodeInfo) map[[2]string][]int {
	x.once.Do(func() {
		x.nodes = map[[2]string][]int{}
		for i, ni := range nodes {
			var last [2]string
			for _, d := range ni.devices {
				k := [2]string{d.driver, d.pool}
				if k == last {
					continue // devices of one pool come together
				}
				last = k
				if l := x.nodes[k]; len(l) == 0 || l[len(l)-1] != i {
					x.nodes[k] = append(l, i)
				}
			}
		}
	})
	return x.nodes
}

// WithClaims returns the snapshot of the same fleet with the allocations of
// claims added to those s holds, at generation: the snapshot [NewSnapshot]
// builds from the inventory of s with claims appended to its Claims. Its
// cost grows with the claims and the nodes that see their devices, not with
// the fleet: the nodes whose devices none of the claims holds, the node
// classes and the allocator over free devices are those of s. Neither s nor
// claims are modified; claims must not be modified afterwards.
func (s *Snapshot) WithClaims(claims []*resourceapi.ResourceClaim, generation uint64) *Snapshot {
	d := s.withClaims(slices.Concat(s.claims, claims), claims, generation, upstream.WithAllocations(s.allocated, claims, s.features))
	d.root, d.held = s.id, claims
	return d
}

// WithClaimsAfter is WithClaims for the snapshot that follows prev. When
// prev was made by WithClaimsAfter (or WithClaims) from s too and every
// claim prev holds on s is among claims (the same objects: a claim is never
// modified), the result holds every allocation prev holds, on the same
// fleet and pods, and continues prev's lineage: a node that could not
// serve a pod on prev cannot serve it on the result, so a check that chose
// a node on prev asks that node alone first ([Checker.Check]). When the
// claims prev holds are the first of claims, in order (a record that only
// grew), the result is derived from prev: its cost grows with the claims
// added since and the nodes they touch, not with every claim held. prev
// may be nil.
func (s *Snapshot) WithClaimsAfter(prev *Snapshot, claims []*resourceapi.ResourceClaim, generation uint64) *Snapshot {
	if prev != nil && prev.root == s.id && len(prev.held) <= len(claims) && slices.Equal(prev.held, claims[:len(prev.held)]) {
		d := prev.Holding(claims[len(prev.held):], generation)
		d.root, d.held = s.id, claims
		return d
	}
	d := s.WithClaims(claims, generation)
	if prev == nil || prev.root != s.id || len(prev.held) > len(claims) {
		return d
	}
	held := make(map[*resourceapi.ResourceClaim]bool, len(claims))
	for _, c := range claims {
		held[c] = true
	}
	for _, c := range prev.held {
		if !held[c] {
			return d
		}
	}
	d.epoch = prev.epoch
	return d
}

// ReplaceClaims returns the snapshot of the same fleet whose inventory holds
// claims instead of the claims of s, at generation: what [NewSnapshot]
// builds from the inventory of s with Claims replaced. A claim that is the
// same object as one of s is taken as unchanged (informers replace an
// object when it changes; nothing may modify one in place). Its cost grows
// with the claims and the nodes that see the devices of those added or
// removed, not with the fleet's nodes. Neither s nor claims are modified;
// claims must not be modified afterwards.
func (s *Snapshot) ReplaceClaims(claims []*resourceapi.ResourceClaim, generation uint64) *Snapshot {
	old := make(map[*resourceapi.ResourceClaim]bool, len(s.claims))
	for _, c := range s.claims {
		old[c] = true
	}
	var changed []*resourceapi.ResourceClaim
	for _, c := range claims {
		if old[c] {
			delete(old, c)
			continue
		}
		changed = append(changed, c)
	}
	for _, c := range s.claims {
		if old[c] {
			changed = append(changed, c) // removed
		}
	}
	return s.withClaims(claims, changed, generation, upstream.AllocatedState(claims, s.features))
}

// Holding returns the snapshot that follows s in its lineage holding
// claims too: WithClaims, derived from s itself, so that a run that holds
// one allocation after the other (the cutover forecast places a whole
// cluster, pod by pod) pays for the new claims and the nodes they touch,
// and for copies of s's allocated sets, not for every claim held before
// (WithClaimsAfter, which the webhook uses, derives each snapshot from the
// fleet's with all its reservations). The result holds every allocation
// of s, on the same fleet and pods: a check that chose a node on s asks
// that node alone first ([Checker.Check]).
func (s *Snapshot) Holding(claims []*resourceapi.ResourceClaim, generation uint64) *Snapshot {
	d := s.WithClaims(claims, generation)
	d.epoch = s.epoch
	return d
}

func (s *Snapshot) withClaims(all, changed []*resourceapi.ResourceClaim, generation uint64, allocated structured.AllocatedState) *Snapshot {
	base := s.fleetSnapshot()
	d := &Snapshot{
		generation:   generation,
		features:     s.features,
		classes:      s.classes,
		slices:       s.slices,
		claims:       all,
		pods:         s.pods,
		podsListed:   s.podsListed,
		allocated:    allocated,
		devices:      s.devices,
		unknowns:     s.unknowns,
		allocators:   map[*cel.Cache]*allocatorPair{},
		base:         base,
		pools:        base.pools,
		nodeSlices:   base.nodeSlices,
		devicePlugin: base.devicePlugin,
		replaced:     make(map[int]*nodeInfo, len(s.replaced)),
		id:           snapshotIDs.Add(1),
	}
	d.epoch = d.id
	for i, ni := range s.replaced {
		d.replaced[i] = ni
	}
	// The nodes that see a device of a pool the changed claims allocate
	// from take their allocated and busy marks from the new state; every
	// other node reads as in s.
	index := base.pools.build(base.nodes)
	touched := sets.New[int]()
	for _, c := range changed {
		if c == nil || c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			touched.Insert(index[[2]string{r.Driver, r.Pool}]...)
		}
	}
	d.nodes = base.nodes
	if touched.Len() > 0 {
		shared := upstream.SharedDevices(d.allocated)
		for i := range touched {
			cur := s.nodeAt(i)
			ni := &nodeInfo{node: cur.node, devices: slices.Clone(cur.devices), used: cur.used, pods: cur.pods, usageKnown: cur.usageKnown, orig: base.nodes[i]}
			markAllocated(ni, d.allocated, shared)
			d.replaced[i] = ni
		}
	}
	return d
}

// ReplacePods returns the snapshot of the same fleet whose inventory holds
// pods instead of the pods of s (with the same PodsListed), at generation:
// what [NewSnapshot] builds from the inventory of s with Pods replaced. A
// pod that is the same object as one of s is taken as unchanged (informers
// replace an object when it changes). Only the usage of the nodes the pods
// added or removed are bound to is summed again: its cost grows with the
// pods, not with the fleet's nodes (but for a snapshot made by UpdatePods,
// whose pods are not listed: every node's usage is summed again then).
// Neither s nor pods are modified; pods must not be modified afterwards.
func (s *Snapshot) ReplacePods(pods []*corev1.Pod, generation uint64) *Snapshot {
	d := s.withClaims(s.claims, nil, generation, s.allocated)
	d.pods = pods
	old := make(map[*corev1.Pod]bool, len(s.pods))
	for _, p := range s.pods {
		old[p] = true
	}
	touched := map[string]bool{}
	for _, p := range pods {
		if old[p] {
			delete(old, p)
			continue
		}
		touched[p.Spec.NodeName] = true
	}
	for p := range old {
		touched[p.Spec.NodeName] = true // removed
	}
	if s.podsListed && s.pods == nil || !s.podsListed && (len(s.pods) == 0) != (len(pods) == 0) {
		// Which pods the usage holds is not known (UpdatePods, or an
		// inventory that listed none), or whether any node's usage is
		// known changes: every node.
		for _, ni := range s.nodes {
			touched[ni.node.Name] = true
		}
	}
	delete(touched, "")
	if len(touched) == 0 {
		return d
	}
	byName := map[string]int{}
	var copies []*nodeInfo
	for name := range touched {
		if ni := d.usageCopy(name); ni != nil {
			byName[name] = len(copies)
			copies = append(copies, ni)
		}
	}
	addUsage(copies, byName, pods, s.podsListed)
	return d
}

// UpdatePods returns the snapshot of the same fleet and claims whose
// inventory holds, as the pods bound to each of nodes, podsOn(node) instead
// of the pods of s bound to it, at generation: what [NewSnapshot] builds
// from the inventory of s with the pods of those nodes replaced. A pod
// bound, moved, finished or deleted changes the usage of the nodes it was
// and is bound to: the caller names them (the webhook records them from its
// pod events and reads their pods from an index by node). Only the usage of
// those nodes is summed again, from their pods alone: its cost grows with
// them, not with the fleet's nodes nor its pods. podsOn lists the pods bound
// to a node (any other pod it lists is ignored); a name of no node of the
// fleet is ignored. Neither s nor the pods are modified; the pods must not
// be modified afterwards.
//
// The result does not list the inventory's pods, which ReplacePods compares
// with: a ReplacePods after it sums every node's usage again. When the
// inventory of s does not list every pod (PodsListed false), whether any
// usage is known depends on all of them: the update then replaces the whole
// list (ReplacePods), in time proportional to the pods.
func (s *Snapshot) UpdatePods(nodes []string, podsOn func(node string) []*corev1.Pod, generation uint64) *Snapshot {
	if !s.podsListed {
		return s.ReplacePods(s.podsWith(nodes, podsOn), generation)
	}
	// The claims are those of s, and so is their allocated state: derived
	// from no claim, then given those of s, the snapshot does not sum the
	// allocations of every claim again.
	d := s.withClaims(s.claims, nil, generation, s.allocated)
	d.pods = nil // not listed: see ReplacePods
	byName := map[string]int{}
	var (
		copies []*nodeInfo
		pods   []*corev1.Pod
	)
	for _, name := range nodes {
		if _, dup := byName[name]; dup || name == "" {
			continue
		}
		ni := d.usageCopy(name)
		if ni == nil {
			continue
		}
		byName[name] = len(copies)
		copies = append(copies, ni)
		for _, p := range podsOn(name) {
			if p.Spec.NodeName == name {
				pods = append(pods, p)
			}
		}
	}
	addUsage(copies, byName, pods, true)
	return d
}

// podsWith is the pods of s with those bound to nodes replaced by podsOn's.
func (s *Snapshot) podsWith(nodes []string, podsOn func(node string) []*corev1.Pod) []*corev1.Pod {
	names := sets.New(nodes...)
	names.Delete("")
	var out []*corev1.Pod
	for _, p := range s.pods {
		if !names.Has(p.Spec.NodeName) {
			out = append(out, p)
		}
	}
	for _, name := range sets.List(names) {
		for _, p := range podsOn(name) {
			if p.Spec.NodeName == name {
				out = append(out, p)
			}
		}
	}
	return out
}

// usageCopy puts a copy of the node named name, without its usage, in the
// nodes s replaces (s is being built), for the caller to sum its usage; nil for a node the
// fleet does not have.
func (s *Snapshot) usageCopy(name string) *nodeInfo {
	i, found := s.nodeIndex(name)
	if !found {
		return nil
	}
	cur := s.nodeAt(i)
	ni := &nodeInfo{node: cur.node, devices: cur.devices, busy: cur.busy, orig: s.base.nodes[i]}
	s.replaced[i] = ni
	return ni
}

// Stale reports whether s carries copies of more than half of its fleet's
// nodes (made by the updates since NewSnapshot): every update and every
// reservation copies them again, so that a new NewSnapshot costs less than
// carrying them on.
func (s *Snapshot) Stale() bool { return len(s.replaced) > len(s.nodes)/2 }

// nodeAt is the node at position i with the allocated and busy marks of s
// (s.nodes holds those of the snapshot s was derived from, if any).
func (s *Snapshot) nodeAt(i int) *nodeInfo {
	if ni, ok := s.replaced[i]; ok {
		return ni
	}
	return s.nodes[i]
}

// markAllocated sets the node's devices' allocated marks and its busy mark
// from the allocated state, as NewSnapshot does.
func markAllocated(ni *nodeInfo, st structured.AllocatedState, shared sets.Set[structured.DeviceID]) {
	ni.busy = false
	for di := range ni.devices {
		d := &ni.devices[di]
		d.allocated = st.AllocatedDevices.Has(d.id)
		if d.allocated || shared.Has(d.id) {
			ni.busy = true
		}
	}
}

// derivedClasses gives a snapshot made by WithClaims the node classes of its
// fleet snapshot: a node's class does not depend on what is allocated. The
// nodes it replaced read their class keys from the originals (class).
func (s *Snapshot) derivedClasses(memo *classMemo) {
	s.nodeClasses = s.base.nodeClassList(memo)
	s.classesFingerprint = s.base.classesFingerprint
}

// class is the node's class key, once the classes of its snapshot are
// computed (nodeClassList).
func (ni *nodeInfo) class() string {
	if ni.orig != nil {
		return ni.orig.classKey
	}
	return ni.classKey
}

// classIdx is the node's classIndex, read like class.
func (ni *nodeInfo) classIdx() int {
	if ni.orig != nil {
		return ni.orig.classIndex
	}
	return ni.classIndex
}
