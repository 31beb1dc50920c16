package feasibility

// Placing a whole cluster. The cutover forecast places tens of thousands
// of pods one after the other on one fleet, each holding its devices for
// the next. A snapshot per placement (WithClaims) copies the allocated
// state and the claims each time, which grows with the pods placed; a
// Scratch is a snapshot its one owner changes in place instead, so that a
// placement costs the devices it holds. Candidates lists once, per pod
// shape, the nodes a placement needs to ask at all.

import (
	"cmp"
	"context"
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/podfacts"
)

// Scratch is a snapshot of a fleet that one caller owns and changes in
// place: every Hold adds the allocations of a claim. Its Snapshot answers
// checks as the snapshot WithClaims would make with the same claims, at
// the generation of the last Hold; it must not be used by two goroutines
// at once, nor kept by anyone once the scratch changes.
type Scratch struct {
	snap   *Snapshot
	shared sets.Set[structured.DeviceID] // devices held shared (markAllocated)
}

// Scratch returns a scratch copy of s at generation: s is left as it is.
func (s *Snapshot) Scratch(generation uint64) *Scratch {
	d := s.withClaims(slices.Clone(s.claims), nil, generation, upstream.WithAllocations(s.allocated, nil, s.features))
	d.epoch = s.epoch // the allocations only grow: a lineage of s
	return &Scratch{snap: d, shared: upstream.SharedDevices(d.allocated)}
}

// Snapshot is the scratch as it is now. It changes with the next Hold.
func (x *Scratch) Snapshot() *Snapshot { return x.snap }

// Hold adds the allocations of claim, at generation (which must be new to
// the checker that reads the scratch: its verdicts are cached by
// generation). Only the nodes that see the devices claim holds are copied.
func (x *Scratch) Hold(claim *resourceapi.ResourceClaim, generation uint64) {
	d := x.snap
	d.generation, d.id = generation, snapshotIDs.Add(1)
	if claim == nil || claim.Status.Allocation == nil {
		return
	}
	d.claims = append(d.claims, claim)
	index := d.base.pools.build(d.base.nodes)
	touched := sets.New[int]()
	for _, r := range claim.Status.Allocation.Devices.Results {
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		if d.features.ConsumableCapacity && r.ShareID != nil {
			if have, ok := d.allocated.AggregatedCapacity[id]; ok && r.ConsumedCapacity != nil {
				// Shared with the snapshot the scratch was made from.
				d.allocated.AggregatedCapacity[id] = have.Clone()
			}
			x.shared.Insert(id)
		}
		touched.Insert(index[[2]string{r.Driver, r.Pool}]...)
	}
	upstream.AddAllocations(&d.allocated, []*resourceapi.ResourceClaim{claim}, d.features)
	for i := range touched {
		cur := d.nodeAt(i)
		ni := &nodeInfo{node: cur.node, devices: slices.Clone(cur.devices), used: cur.used, pods: cur.pods, usageKnown: cur.usageKnown, orig: d.base.nodes[i]}
		markAllocated(ni, d.allocated, x.shared)
		d.replaced[i] = ni
	}
}

// Free counts the devices the node sees that a new claim could still get
// (not held, or allocatable more than once): a bound no placement on the
// node can exceed. -1 for a node the fleet does not have.
func (x *Scratch) Free(node string) int {
	s := x.snap
	i, found := s.nodeIndex(node)
	if !found {
		return -1
	}
	n := 0
	for _, d := range s.nodeAt(i).devices {
		if !d.allocated || d.multi {
			n++
		}
	}
	return n
}

// Candidate is a node that can serve a pod with every device free, and
// the score kube-scheduler gives the alternatives it gets there.
type Candidate struct {
	Node  string
	Score int64
}

// Candidates lists the nodes of snap that would serve the pod and its
// claims were every device free (the pod's node selection, taints, what
// it asks besides its claims against what the node's pods leave, and the
// allocator over free devices), best score first, then in name order.
// The allocator runs once per node class. A placement that only adds
// allocations never serves the pod on a node left out. An error means the
// claims are invalid or the allocator failed.
func (c *Checker) Candidates(ctx context.Context, snap *Snapshot, pod *corev1.Pod, claims []*resourceapi.ResourceClaimSpec) ([]Candidate, error) {
	defaulted, err := upstream.DefaultClaims(pod, claims)
	if err != nil {
		return nil, err
	}
	celCache := c.celCache(snap.features)
	p, reasons := c.plan(snap, celCache, defaulted)
	if len(reasons) > 0 {
		return nil, nil // a class the fleet lacks: no node serves it
	}
	allocs, err := snap.allocatorsFor(ctx, celCache)
	if err != nil {
		return nil, err
	}
	snap.nodeClassList(&c.classes)
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	requests := snap.compared(podfacts.EffectiveRequests(pod), nil)
	byClass := map[string]int64{} // score, -1 for none
	var out []Candidate
	for i := range snap.nodes {
		ni := snap.nodeAt(i)
		if len(ni.devices) == 0 || upstream.NodeRejects(required, pod, ni.node) != "" || requests.Short(ni.node, ni.usage()) != "" {
			continue
		}
		key := ni.class()
		s, known := byClass[key]
		if !known || key == "" {
			if s, err = c.freeScore(ctx, p, celCache, allocs, ni); err != nil {
				return nil, err
			}
			byClass[key] = s
		}
		if s >= 0 {
			out = append(out, Candidate{Node: ni.node.Name, Score: s})
		}
	}
	slices.SortStableFunc(out, func(a, b Candidate) int { return cmp.Compare(b.Score, a.Score) })
	return out, nil
}

// freeScore is the score of the allocation the node gets with every device
// free, -1 when it gets none.
func (c *Checker) freeScore(ctx context.Context, p *plan, celCache *cel.Cache, allocs *allocatorPair, ni *nodeInfo) (int64, error) {
	if p.prune(ctx, ni, true) != "" {
		return -1, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	out, err := allocs.free.Allocate(ctx, ni.node, p.claims)
	switch {
	case err != nil && errors.Is(err, structured.ErrFailedAllocationOnNode):
		return -1, nil
	case err != nil:
		return -1, err
	case len(out) != len(p.claims):
		return -1, nil
	}
	return upstream.Score(p.claims, out), nil
}

// NodeCheck is a pod and its claims made ready to be asked of one node
// after another ([Checker.CheckOn] without defaulting and planning the
// claims per node), on snap and the snapshots derived from it (a Scratch).
// It remembers each answer by what decides it on a node whose devices
// are all its own, none shared: the node's class and which of its devices
// are held. Nodes of one class have the same devices but for names and
// identities (classes.go), so another such node in the same state is
// served by the devices at the same places in its class's order, without
// the allocator. Not for concurrent use.
type NodeCheck struct {
	c         *Checker
	pod       *corev1.Pod
	celCache  *cel.Cache
	plan      *plan
	invalid   *Verdict // the claims' own error, for every node
	required  nodeaffinity.RequiredNodeAffinity
	requests  upstream.Requests
	answers   map[string]*answer
	remembers bool
}

// answer is an allocation on a node of a class in a state: per result, the
// place of its device in the class's order (devices by driver and name).
type answer struct {
	ok      bool
	results []resourceapi.DeviceRequestAllocationResult
	at      []int
}

// ForNodes makes the pod and its claims ready to be asked of nodes of snap
// and of the snapshots derived from it.
func (c *Checker) ForNodes(snap *Snapshot, pod *corev1.Pod, claims []*resourceapi.ResourceClaimSpec) *NodeCheck {
	p := &NodeCheck{c: c, pod: pod, answers: map[string]*answer{}}
	defaulted, err := upstream.DefaultClaims(pod, claims)
	if err != nil {
		p.invalid = &Verdict{Kind: NeverFits, Code: ReasonInvalidClaim, Reasons: []string{err.Error()}}
		return p
	}
	p.celCache = c.celCache(snap.features)
	plan, reasons := c.plan(snap, p.celCache, defaulted)
	if len(reasons) > 0 {
		p.invalid = &Verdict{Kind: NeverFits, Code: ReasonDeviceClassNotFound, Reasons: reasons, NodesConsidered: 1}
		return p
	}
	p.plan = plan
	p.required = nodeaffinity.GetRequiredNodeAffinity(pod)
	p.requests = snap.compared(podfacts.EffectiveRequests(pod), nil)
	return p
}

// Remember lets the prepared check answer a node from another of its class
// in the same state (see NodeCheck); without it every node runs the
// allocator.
func (p *NodeCheck) Remember() *NodeCheck {
	p.remembers = true
	return p
}

// On answers for one node of snap, as CheckOn does.
func (p *NodeCheck) On(ctx context.Context, snap *Snapshot, node string) Verdict {
	if p.invalid != nil {
		return *p.invalid
	}
	v := Verdict{Kind: NeverFits, Code: ReasonNoCandidateNodes, NodesConsidered: 1}
	i, found := snap.nodeIndex(node)
	if !found {
		return v
	}
	ni := snap.nodeAt(i)
	if len(ni.devices) == 0 || upstream.NodeRejects(p.required, p.pod, ni.node) != "" || p.requests.Short(ni.node, ni.usage()) != "" {
		return v
	}
	if p.plan.prune(ctx, ni, false) != "" {
		return v
	}
	key, order := p.stateKey(snap, ni)
	if a, ok := p.answers[key]; ok && key != "" {
		if !a.ok {
			v.Code = ReasonDevicesInUse
			return v
		}
		v.Kind, v.Code, v.Node = FitsNow, ReasonFits, node
		for k, r := range a.results {
			d := order[a.at[k]]
			r.Driver, r.Pool, r.Device = d.driver, d.pool, d.device.Name
			v.Results = append(v.Results, r)
		}
		return v
	}
	allocs, err := snap.allocatorsFor(ctx, p.celCache)
	if err != nil {
		return Verdict{Kind: Unknown, Code: ReasonAllocatorError, Reasons: []string{err.Error()}}
	}
	ctx, cancel := context.WithTimeout(ctx, p.c.timeout)
	defer cancel()
	out, err := allocs.now.Allocate(ctx, ni.node, p.plan.claims)
	if err != nil {
		return Verdict{Kind: Unknown, Code: ReasonAllocatorError, Reasons: []string{err.Error()}}
	}
	if len(out) != len(p.plan.claims) {
		if key != "" {
			p.answers[key] = &answer{}
		}
		v.Code = ReasonDevicesInUse
		return v
	}
	v.Kind, v.Code, v.Node = FitsNow, ReasonFits, node
	for _, a := range out {
		v.Results = append(v.Results, a.Devices.Results...)
	}
	if key != "" {
		a := &answer{ok: true, results: v.Results}
		for _, r := range v.Results {
			k := slices.IndexFunc(order, func(d deviceRef) bool { return d.driver == r.Driver && d.pool == r.Pool && d.device.Name == r.Device })
			if k < 0 {
				return v // a device the node does not see: not remembered
			}
			a.at = append(a.at, k)
		}
		p.answers[key] = a
	}
	return v
}

// stateKey is the node's class and which of its devices are held, with
// its devices in the class's order; "" when the answer cannot be carried
// to another node: it has no class, or a device of a pool other nodes see
// or that is allocatable more than once.
func (p *NodeCheck) stateKey(snap *Snapshot, ni *nodeInfo) (string, []deviceRef) {
	if !p.remembers {
		return "", nil
	}
	snap.nodeClassList(&p.c.classes) // once per snapshot
	if ni.class() == "" {
		return "", nil
	}
	fleet := snap.fleetSnapshot()
	index := fleet.pools.build(fleet.nodes)
	order := slices.Clone(ni.devices)
	slices.SortFunc(order, func(a, b deviceRef) int {
		return cmp.Or(cmp.Compare(a.driver, b.driver), cmp.Compare(a.device.Name, b.device.Name))
	})
	held := make([]byte, len(order))
	for k, d := range order {
		if d.multi || len(index[[2]string{d.driver, d.pool}]) != 1 {
			return "", nil
		}
		held[k] = '0'
		if d.allocated {
			held[k] = '1'
		}
	}
	return ni.class() + "/" + string(held), order
}
