package feasibility

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/claimbridge/claimbridge/feasibility/signature"
	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/reason"
)

// VerdictKind is the outcome of a check.
type VerdictKind string

const (
	// FitsNow: the allocator allocated all claims on Verdict.Node with the devices free today.
	FitsNow VerdictKind = "FitsNow"
	// FitsWhenFree: no node can serve the claims now, but some node could if its devices were
	// free (the pod would wait like any pod).
	FitsWhenFree VerdictKind = "FitsWhenFree"
	// NeverFits: no node can serve the claims even on an empty fleet, or the claims cannot be
	// allocated at all (fatal allocator error).
	NeverFits VerdictKind = "NeverFits"
	// Unknown: the deadline was hit, the inventory is not synced, or the
	// answer depends on attributes the fleet's devices leave unknown (a
	// forecast's: Verdict.DependsOn names them).
	Unknown VerdictKind = "Unknown"
)

// Verdict is the answer of [Checker.Check].
type Verdict struct {
	Kind VerdictKind
	Code ReasonCode
	// Node is the node the allocator chose (FitsNow) or could choose once devices are free
	// (FitsWhenFree): the first such node in name order.
	Node string
	// Results are the devices chosen on Node, claim after claim. A request with firstAvailable
	// shows the alternative that won as "<request>/<subrequest>".
	Results []resourceapi.DeviceRequestAllocationResult
	// Reasons explain the verdict in stable, human-readable sentences aggregated over nodes
	// ("2 nodes (a, b): …"): first the reasons of the nodes closest to serving the claims'
	// devices, naming those nodes first — among the nodes the pod's node selector and
	// affinity admit, then among the others: enough matching devices, then too few, then
	// devices of the class only, then other devices, then none; then the most frequent first.
	Reasons []string
	// DependsOn names, qualified, the attributes an Unknown verdict
	// (AttributesUnknown) depends on: the devices leave them unknown (a
	// forecast fleet's, whose nodes' labels do not tell them), and the
	// claims read them.
	DependsOn []string
	// NodesConsidered is the number of nodes of the snapshot; NodesPruned those rejected
	// without running the allocator (node constraints, device index).
	NodesConsidered, NodesPruned int
	// Cached is true when the verdict came from the cache (or a concurrent identical check).
	Cached bool
}

// Options configure a [Checker].
type Options struct {
	// Parallelism is the number of nodes checked concurrently. Default 16 (kube-scheduler).
	Parallelism int
	// Timeout bounds one Check (both passes). Default 2s. Hitting it yields Unknown.
	Timeout time.Duration
	// CacheSize is the number of verdicts kept (LRU). Default 1024; negative disables caching.
	CacheSize int
	// MaxSearches bounds the uncached searches that run at once; a check that
	// finds no free slot before its deadline is Unknown (code Busy). Cached
	// verdicts are always answered. This keeps a flood of distinct, expensive
	// pods from taking every CPU of the process. Default 2 × GOMAXPROCS.
	MaxSearches int
}

// Checker runs feasibility checks. It holds the compiled CEL expressions and the verdict
// cache; it is safe for concurrent use and may be used with any number of snapshots.
type Checker struct {
	parallelism int
	timeout     time.Duration

	searches chan struct{} // slots for uncached searches

	mu        sync.Mutex
	celCaches map[cel.Features]*cel.Cache
	cache     *lru[Verdict]
	inflight  map[string]*flight
	// lineage holds, per pod shape (the key without the generation), the
	// last verdict that chose a node or found none could ever serve, with
	// the epoch of its snapshot (revalidate).
	lineage *lru[lineageEntry]
	// revalidated, scanned and searchedFrom count the checks the lineage
	// answered on the node chosen before, by a scan and by a search from
	// the first node served before.
	revalidated, scanned, searchedFrom atomic.Int64
	// placements holds the placement answers per pod shape, by node class.
	placements *lru[*placementEntry]
	// autoscaled holds the answers of Autoscaled per inventory snapshot
	// and pod shapes.
	autoscaled *lru[AutoscaledPool]
	// classes carries node class keys from one snapshot to the next.
	classes classMemo
	// refs remembers the fields each selector expression references.
	refs signature.RefsMemo
}

type flight struct {
	done    chan struct{}
	verdict Verdict
}

// NewChecker returns a Checker; zero fields of opts take their defaults.
func NewChecker(opts Options) *Checker {
	if opts.Parallelism <= 0 {
		opts.Parallelism = 16
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = 1024
	}
	if opts.MaxSearches <= 0 {
		opts.MaxSearches = 2 * runtime.GOMAXPROCS(0)
	}
	return &Checker{
		searches:    make(chan struct{}, opts.MaxSearches),
		parallelism: opts.Parallelism,
		timeout:     opts.Timeout,
		celCaches:   map[cel.Features]*cel.Cache{},
		cache:       newLRU[Verdict](opts.CacheSize),
		lineage:     newLRU[lineageEntry](opts.CacheSize),
		placements:  newLRU[*placementEntry](opts.CacheSize),
		autoscaled:  newLRU[AutoscaledPool](opts.CacheSize),
		inflight:    map[string]*flight{},
	}
}

func (c *Checker) celCache(f Features) *cel.Cache {
	key := cel.Features{EnableConsumableCapacity: f.ConsumableCapacity, EnableListTypeAttributes: f.ListTypeAttributes}
	c.mu.Lock()
	defer c.mu.Unlock()
	cc, ok := c.celCaches[key]
	if !ok {
		cc = cel.NewCache(256, key)
		c.celCaches[key] = cc
	}
	return cc
}

// Check answers whether the claims (the specs of the pod's ResourceClaimTemplates) can be
// allocated on a node the pod may run on. pod is the translated pod: its nodeSelector, required
// node affinity and tolerations restrict the candidate nodes. The claims are defaulted as the
// apiserver would before they reach the allocator. A nil snap yields Unknown.
func (c *Checker) Check(ctx context.Context, snap *Snapshot, pod *corev1.Pod, claims []*resourceapi.ResourceClaimSpec) Verdict {
	if snap == nil {
		return Verdict{Kind: Unknown, Code: ReasonInventoryNotSynced, Reasons: []string{"the device inventory is not synced yet"}}
	}
	if pod == nil {
		pod = &corev1.Pod{}
	}
	defaulted, err := upstream.DefaultClaims(pod, claims)
	if err != nil {
		return Verdict{Kind: NeverFits, Code: ReasonInvalidClaim, Reasons: []string{err.Error()}, NodesConsidered: len(snap.nodes)}
	}
	shape, err := shapeKey(pod, defaulted)
	key := strconv.FormatUint(snap.generation, 10) + "/" + shape
	if err != nil {
		return Verdict{Kind: NeverFits, Code: ReasonInvalidClaim, Reasons: []string{err.Error()}, NodesConsidered: len(snap.nodes)}
	}

	c.mu.Lock()
	if v, ok := c.cache.get(key); ok {
		c.mu.Unlock()
		v.Cached = true
		return v
	}
	if f, ok := c.inflight[key]; ok {
		c.mu.Unlock()
		select {
		case <-f.done:
			v := f.verdict
			v.Cached = true
			return v
		case <-ctx.Done():
			return Verdict{Kind: Unknown, Code: ReasonDeadlineExceeded, Reasons: []string{"deadline exceeded while waiting for an identical check"}, NodesConsidered: len(snap.nodes)}
		}
	}
	f := &flight{done: make(chan struct{})}
	c.inflight[key] = f
	c.mu.Unlock()

	var v Verdict
	if c.acquire(ctx) {
		v = c.checkIn(ctx, snap, pod, defaulted, shape)
		<-c.searches
	} else if ctx.Err() != nil {
		v, _ = c.check(ctx, snap, pod, defaulted, "") // reports the caller's deadline
	} else {
		v = Verdict{Kind: Unknown, Code: ReasonBusy, NodesConsidered: len(snap.nodes),
			Reasons: []string{fmt.Sprintf("all %d search slots stayed busy for %v", cap(c.searches), c.timeout)}}
	}

	c.mu.Lock()
	delete(c.inflight, key)
	if v.Kind != Unknown || v.Code == ReasonAttributesUnknown {
		// An Unknown for want of time or inventory may be answered next
		// time; one for attributes the fleet leaves unknown is the
		// snapshot's answer.
		c.cache.add(key, v)
	}
	c.mu.Unlock()
	f.verdict = v
	close(f.done)
	return v
}

// acquire takes a search slot, waiting at most the check timeout; a free slot
// is taken even when ctx has ended, so that the search reports the deadline.
func (c *Checker) acquire(ctx context.Context) bool {
	select {
	case c.searches <- struct{}{}:
		return true
	default:
	}
	wait, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	select {
	case c.searches <- struct{}{}:
		return true
	case <-wait.Done():
		return false
	}
}

// shapeKey hashes what the verdict depends on besides the snapshot: the defaulted claim specs
// and the pod's node constraints. The verdict cache's key is the snapshot's generation and
// this hash (the snapshot pointer is not part of it: the generation identifies the inventory).
func shapeKey(pod *corev1.Pod, claims []*resourceapi.ResourceClaim) (string, error) {
	var affinity *corev1.NodeSelector
	if pod.Spec.Affinity != nil && pod.Spec.Affinity.NodeAffinity != nil {
		affinity = pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	specs := make([]resourceapi.ResourceClaimSpec, len(claims))
	for i, c := range claims {
		specs[i] = c.Spec
	}
	b, err := json.Marshal(struct {
		Claims       []resourceapi.ResourceClaimSpec
		NodeSelector map[string]string
		Affinity     *corev1.NodeSelector
		Tolerations  []corev1.Toleration
		Requests     corev1.ResourceList
	}{specs, pod.Spec.NodeSelector, affinity, pod.Spec.Tolerations, podfacts.EffectiveRequests(pod)})
	if err != nil {
		return "", fmt.Errorf("hash claims: %w", err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// check runs the search. For a FitsNow verdict it also tells the score of
// its allocation (the alternatives it got) and the first node in name order
// the allocator served at all (the nodes before it served none). from, when
// set, is such a first node on an earlier snapshot of snap's lineage: the
// nodes before it are not asked, and a search that finds no node answers
// Unknown for the caller to search them all.
func (c *Checker) check(ctx context.Context, snap *Snapshot, pod *corev1.Pod, claims []*resourceapi.ResourceClaim, from string) (Verdict, searchInfo) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	celCache := c.celCache(snap.features)
	v := Verdict{NodesConsidered: len(snap.nodes)}
	p, allocs, failed := c.prepare(ctx, snap, claims)
	if failed != nil {
		return *failed, searchInfo{}
	}

	// Node constraints of the pod (NodeAffinity and TaintToleration filters of kube-scheduler).
	why := reason.NewNodes()
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	// NodeResourcesFit for what the pod asks besides its claims: against
	// allocatable for both passes, and against what is free today (when the
	// inventory knows the pods) for the first.
	requests := snap.compared(podfacts.EffectiveRequests(pod), nil)
	// Nodes of one class have the same labels but the hostname, taints
	// and schedulability: the node filters answer them alike, unless the
	// pod selects nodes by name.
	classes := snap.nodeClassList(&c.classes)
	var byClass []*string
	if !signature.SelectsNodeByName(pod) {
		byClass = make([]*string, len(classes)+1)
	}
	var candidates []*nodeInfo
	var busy []string
	for i := range snap.nodes {
		ni := snap.nodeAt(i) // with the allocated and busy marks of snap
		if len(ni.devices) == 0 {
			why.Add("publish no DRA devices", ni.node.Name)
			continue
		}
		msg := ""
		if k := ni.classIdx(); k > 0 && k < len(byClass) {
			if byClass[k] == nil {
				m := upstream.NodeRejects(required, pod, ni.node)
				byClass[k] = &m
			}
			msg = *byClass[k]
		} else {
			msg = upstream.NodeRejects(required, pod, ni.node)
		}
		if msg == "" {
			msg = requests.Short(ni.node, upstream.Usage{})
		}
		if msg != "" {
			why.Add(msg, ni.node.Name)
			continue
		}
		candidates = append(candidates, ni)
		busy = append(busy, requests.Short(ni.node, ni.usage()))
	}
	// Reasons name the nodes closest to serving the devices first; ranking
	// runs after the search, and a deadline the search hit must not make
	// every device look unknown.
	rank := p.ranker(context.WithoutCancel(ctx), snap, required)
	if len(candidates) == 0 {
		v.Kind, v.Code, v.Reasons, v.NodesPruned = NeverFits, ReasonNoCandidateNodes, why.List(rank), len(snap.nodes)
		return v, searchInfo{}
	}

	// Pass 1: devices free today. The node classes let the search run one
	// node of a class whose devices are free.
	nowWhy := why.Clone()
	if from != "" {
		for i, ni := range candidates {
			if ni.node.Name < from && busy[i] == "" {
				busy[i] = "served the claims on no snapshot before"
			}
		}
	}
	res := c.search(ctx, p, searchPass{alloc: allocs.now, nodes: candidates, why: nowWhy, blocked: busy})
	if from != "" && res.node == nil {
		return Verdict{Kind: Unknown}, searchInfo{}
	}
	switch {
	case res.err != nil:
		return c.unknownInstead(ctx, snap, celCache, claims, candidates, c.fatal(v, res)), searchInfo{}
	case res.node != nil:
		v.Kind, v.Code, v.Node, v.Results = FitsNow, ReasonFits, res.node.node.Name, res.results
		v.NodesPruned = len(snap.nodes) - len(candidates) + res.pruned
		return v, searchInfo{score: res.score, first: res.first}
	case res.deadline:
		v.Kind, v.Code, v.Reasons = Unknown, ReasonDeadlineExceeded, []string{"deadline exceeded before every node was checked"}
		v.NodesPruned = len(snap.nodes) - len(candidates) + res.pruned
		return v, searchInfo{}
	}

	// Pass 2: the same nodes with every device free.
	freeWhy := why.Clone()
	free := c.search(ctx, p, searchPass{alloc: allocs.free, free: true, nodes: candidates, why: freeWhy, prev: &res})
	v.NodesPruned = len(snap.nodes) - len(candidates) + free.pruned
	switch {
	case free.err != nil:
		return c.unknownInstead(ctx, snap, celCache, claims, candidates, c.fatal(v, free)), searchInfo{}
	case free.node != nil:
		v.Kind, v.Code, v.Node, v.Results = FitsWhenFree, ReasonDevicesInUse, free.node.node.Name, free.results
		v.Reasons = nowWhy.List(rank)
		return v, searchInfo{}
	case free.deadline:
		v.Kind, v.Code, v.Reasons = Unknown, ReasonDeadlineExceeded, []string{"deadline exceeded before every node was checked"}
		return v, searchInfo{}
	}
	v.Kind, v.Code, v.Reasons = NeverFits, ReasonNoMatchingDevices, freeWhy.List(rank)
	return c.unknownInstead(ctx, snap, celCache, claims, candidates, v), searchInfo{}
}

// prepare plans the claims on snap and takes the snapshot's allocators,
// or returns the verdict that says why the allocator cannot be asked.
func (c *Checker) prepare(ctx context.Context, snap *Snapshot, claims []*resourceapi.ResourceClaim) (*plan, *allocatorPair, *Verdict) {
	specs := make([]*resourceapi.ResourceClaimSpec, len(claims))
	for i, claim := range claims {
		specs[i] = &claim.Spec
	}
	if missing := snap.MissingClasses(specs); missing != nil {
		return nil, nil, missing
	}
	celCache := c.celCache(snap.features)
	p, reasons := c.plan(snap, celCache, claims)
	if len(reasons) > 0 {
		return nil, nil, &Verdict{Kind: NeverFits, Code: ReasonDeviceClassNotFound, Reasons: reasons, NodesConsidered: len(snap.nodes), NodesPruned: len(snap.nodes)}
	}
	p.answers = answersOf(ctx)
	allocs, err := snap.allocatorsFor(ctx, celCache)
	if err != nil {
		return nil, nil, &Verdict{Kind: Unknown, Code: ReasonAllocatorError, Reasons: []string{err.Error()}, NodesConsidered: len(snap.nodes)}
	}
	return p, allocs, nil
}

func (c *Checker) fatal(v Verdict, res searchResult) Verdict {
	v.Kind, v.Code = NeverFits, ReasonAllocatorError
	v.Reasons = []string{fmt.Sprintf("allocator error on node %s: %v", res.errNode, res.err)}
	return v
}
