package feasibility

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
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
	// Unknown: the deadline was hit or the inventory is not synced.
	Unknown VerdictKind = "Unknown"
)

// ReasonCode classifies a verdict; stable, usable as a metrics label.
type ReasonCode string

const (
	ReasonFits                ReasonCode = "Fits"
	ReasonDevicesInUse        ReasonCode = "DevicesInUse"
	ReasonNoCandidateNodes    ReasonCode = "NoCandidateNodes"
	ReasonNoMatchingDevices   ReasonCode = "NoMatchingDevices"
	ReasonDeviceClassNotFound ReasonCode = "DeviceClassNotFound"
	ReasonInvalidClaim        ReasonCode = "InvalidClaim"
	ReasonAllocatorError      ReasonCode = "AllocatorError"
	ReasonDeadlineExceeded    ReasonCode = "DeadlineExceeded"
	ReasonInventoryNotSynced  ReasonCode = "InventoryNotSynced"
	ReasonBusy                ReasonCode = "Busy"
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
	// ("2 nodes (a, b): …"), most frequent first.
	Reasons []string
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
	// placements holds the placement answers per pod shape, by node class.
	placements *lru[*placementEntry]
	// classes carries node class keys from one snapshot to the next.
	classes classMemo
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
		placements:  newLRU[*placementEntry](opts.CacheSize),
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
	defaulted, err := defaultClaims(pod, claims)
	if err != nil {
		return Verdict{Kind: NeverFits, Code: ReasonInvalidClaim, Reasons: []string{err.Error()}, NodesConsidered: len(snap.nodes)}
	}
	key, err := cacheKey(snap, pod, defaulted)
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
		v = c.check(ctx, snap, pod, defaulted)
		<-c.searches
	} else if ctx.Err() != nil {
		v = c.check(ctx, snap, pod, defaulted) // reports the caller's deadline
	} else {
		v = Verdict{Kind: Unknown, Code: ReasonBusy, NodesConsidered: len(snap.nodes),
			Reasons: []string{fmt.Sprintf("all %d search slots stayed busy for %v", cap(c.searches), c.timeout)}}
	}

	c.mu.Lock()
	delete(c.inflight, key)
	if v.Kind != Unknown {
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

// defaultClaims turns the specs into claims and applies the apiserver's defaults
// (k8s.io/kubernetes/pkg/apis/resource/v1/defaults.go): "an empty AllocationMode becomes
// ExactCount; ExactCount with Count == 0 becomes Count = 1"; toleration operator Equal.
// The allocator does not default: an empty mode is a fatal error and count 0 "succeeds".
func defaultClaims(pod *corev1.Pod, specs []*resourceapi.ResourceClaimSpec) ([]*resourceapi.ResourceClaim, error) {
	out := make([]*resourceapi.ResourceClaim, 0, len(specs))
	for i, spec := range specs {
		if spec == nil {
			return nil, fmt.Errorf("claim %d: nil spec", i)
		}
		claim := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: pod.Namespace,
				Name:      pod.Name + "-claim-" + strconv.Itoa(i),
				UID:       types.UID("claimbridge-feasibility-" + strconv.Itoa(i)),
			},
			Spec: *spec.DeepCopy(),
		}
		for ri := range claim.Spec.Devices.Requests {
			r := &claim.Spec.Devices.Requests[ri]
			switch {
			case r.Exactly != nil && len(r.FirstAvailable) == 0:
				defaultExact(&r.Exactly.AllocationMode, &r.Exactly.Count, r.Exactly.Tolerations)
			case r.Exactly == nil && len(r.FirstAvailable) > 0:
				for si := range r.FirstAvailable {
					s := &r.FirstAvailable[si]
					defaultExact(&s.AllocationMode, &s.Count, s.Tolerations)
				}
			default:
				return nil, fmt.Errorf("claim %d, request %q: exactly one of exactly or firstAvailable must be set", i, r.Name)
			}
		}
		out = append(out, claim)
	}
	return out, nil
}

func defaultExact(mode *resourceapi.DeviceAllocationMode, count *int64, tolerations []resourceapi.DeviceToleration) {
	if *mode == "" {
		*mode = resourceapi.DeviceAllocationModeExactCount
	}
	if *mode == resourceapi.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
	for i := range tolerations {
		if tolerations[i].Operator == "" {
			tolerations[i].Operator = resourceapi.DeviceTolerationOpEqual
		}
	}
}

// cacheKey hashes what the verdict depends on besides the snapshot: the defaulted claim specs
// and the pod's node constraints.
func cacheKey(snap *Snapshot, pod *corev1.Pod, claims []*resourceapi.ResourceClaim) (string, error) {
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
	}{specs, pod.Spec.NodeSelector, affinity, pod.Spec.Tolerations, podRequests(pod)})
	if err != nil {
		return "", fmt.Errorf("hash claims: %w", err)
	}
	h := sha256.Sum256(b)
	// The snapshot pointer is not part of the key: the generation identifies the inventory.
	return strconv.FormatUint(snap.generation, 10) + "/" + hex.EncodeToString(h[:]), nil
}

// requirement is one way to satisfy one request: the request itself or one of its subrequests.
type requirement struct {
	claim     int
	request   string // "<req>" or "<req>/<sub>"
	parent    string
	class     *resourceapi.DeviceClass
	selectors []resourceapi.DeviceSelector // class selectors first, then the request's
	mode      resourceapi.DeviceAllocationMode
	count     int64
	admin     bool
	// noPrune: a selector does not compile; let the allocator report it.
	noPrune bool
}

// need is the number of devices one node must offer for the requirement: "All" needs at least
// one ("At least one device is required for 'All' allocation mode").
func (r *requirement) need() int64 {
	if r.mode == resourceapi.DeviceAllocationModeAll {
		return 1
	}
	return r.count
}

// plan is everything derived from the claims once per check.
type plan struct {
	claims []*resourceapi.ResourceClaim
	reqs   []requirement
	// groups[i] lists the requirement indices that are the alternatives of one request;
	// a node is a candidate when every group has an alternative it can satisfy.
	groups [][]int
	proj   projection
	// match caches the selector result per projected device: one byte per requirement,
	// 'y' match, 'n' no match, '?' error (never pruned).
	mu    sync.Mutex
	match map[string][]byte
	parts map[string]keyParts // per driver
}

type keyParts struct {
	attrs, caps [][2]resourceapi.QualifiedName
}

func (c *Checker) check(ctx context.Context, snap *Snapshot, pod *corev1.Pod, claims []*resourceapi.ResourceClaim) Verdict {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	celCache := c.celCache(snap.features)
	v := Verdict{NodesConsidered: len(snap.nodes)}

	p, reasons := c.plan(snap, celCache, claims)
	if len(reasons) > 0 {
		v.Kind, v.Code, v.Reasons = NeverFits, ReasonDeviceClassNotFound, reasons
		v.NodesPruned = len(snap.nodes)
		return v
	}
	allocs, err := snap.allocatorsFor(ctx, celCache)
	if err != nil {
		v.Kind, v.Code, v.Reasons = Unknown, ReasonAllocatorError, []string{err.Error()}
		return v
	}

	// Node constraints of the pod (NodeAffinity and TaintToleration filters of kube-scheduler).
	why := newReasons()
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	// NodeResourcesFit for what the pod asks besides its claims: against
	// allocatable for both passes, and against what is free today (when the
	// inventory knows the pods) for the first.
	requests := podRequests(pod)
	empty := corev1.ResourceList{}
	var candidates []*nodeInfo
	var busy []string
	for _, ni := range snap.nodes {
		if len(ni.devices) == 0 {
			why.add("publish no DRA devices", ni.node.Name)
			continue
		}
		if msg := nodeRejects(required, pod, ni.node); msg != "" {
			why.add(msg, ni.node.Name)
			continue
		}
		if msg := snap.insufficient(&nodeInfo{node: ni.node, used: empty}, requests); msg != "" {
			why.add(msg, ni.node.Name)
			continue
		}
		candidates = append(candidates, ni)
		busy = append(busy, snap.insufficient(ni, requests))
	}
	if len(candidates) == 0 {
		v.Kind, v.Code, v.Reasons, v.NodesPruned = NeverFits, ReasonNoCandidateNodes, why.list(), len(snap.nodes)
		return v
	}

	// Pass 1: devices free today.
	nowWhy := why.clone()
	res := c.search(ctx, p, celCache, allocs.now, candidates, false, nowWhy, nil, busy)
	switch {
	case res.err != nil:
		return c.fatal(v, res)
	case res.node != nil:
		v.Kind, v.Code, v.Node, v.Results = FitsNow, ReasonFits, res.node.node.Name, res.results
		v.NodesPruned = len(snap.nodes) - len(candidates) + res.pruned
		return v
	case res.deadline:
		v.Kind, v.Code, v.Reasons = Unknown, ReasonDeadlineExceeded, []string{"deadline exceeded before every node was checked"}
		v.NodesPruned = len(snap.nodes) - len(candidates) + res.pruned
		return v
	}

	// Pass 2: the same nodes with every device free.
	freeWhy := why.clone()
	free := c.search(ctx, p, celCache, allocs.free, candidates, true, freeWhy, &res, nil)
	v.NodesPruned = len(snap.nodes) - len(candidates) + free.pruned
	switch {
	case free.err != nil:
		return c.fatal(v, free)
	case free.node != nil:
		v.Kind, v.Code, v.Node, v.Results = FitsWhenFree, ReasonDevicesInUse, free.node.node.Name, free.results
		v.Reasons = nowWhy.list()
		return v
	case free.deadline:
		v.Kind, v.Code, v.Reasons = Unknown, ReasonDeadlineExceeded, []string{"deadline exceeded before every node was checked"}
		return v
	}
	v.Kind, v.Code, v.Reasons = NeverFits, ReasonNoMatchingDevices, freeWhy.list()
	return v
}

func (c *Checker) fatal(v Verdict, res searchResult) Verdict {
	v.Kind, v.Code = NeverFits, ReasonAllocatorError
	v.Reasons = []string{fmt.Sprintf("allocator error on node %s: %v", res.errNode, res.err)}
	return v
}

// nodeRejects mirrors kube-scheduler's NodeUnschedulable, NodeAffinity and TaintToleration
// filters and returns their message, or "" when the pod may run on the node.
func nodeRejects(required nodeaffinity.RequiredNodeAffinity, pod *corev1.Pod, node *corev1.Node) string {
	if node.Spec.Unschedulable {
		tolerated := slices.ContainsFunc(pod.Spec.Tolerations, func(t corev1.Toleration) bool {
			return t.ToleratesTaint(logr.Discard(), &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}, false)
		})
		if !tolerated {
			return "were unschedulable"
		}
	}
	// "Ignore parsing errors for backwards compatibility."
	if ok, _ := required.Match(node); !ok {
		return "didn't match Pod's node affinity/selector"
	}
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	if untolerated {
		return fmt.Sprintf("had untolerated taint {%s: %s}", taint.Key, taint.Value)
	}
	return ""
}

// plan resolves classes and prepares the requirements; reasons are returned for unknown classes.
func (c *Checker) plan(snap *Snapshot, celCache *cel.Cache, claims []*resourceapi.ResourceClaim) (*plan, []string) {
	p := &plan{claims: claims, proj: projection{attrs: map[[2]string]bool{}, caps: map[[2]string]bool{}}, match: map[string][]byte{}, parts: map[string]keyParts{}}
	var reasons []string
	addReq := func(r requirement, className string, selectors []resourceapi.DeviceSelector) int {
		class, ok := snap.classes[className]
		if !ok {
			reasons = append(reasons, fmt.Sprintf("request %s: device class %q not found", r.request, className))
			return -1
		}
		r.class = class
		r.selectors = append(slices.Clone(class.Spec.Selectors), selectors...)
		for _, s := range r.selectors {
			if s.CEL == nil {
				continue
			}
			compiled := celCache.GetOrCompile(s.CEL.Expression)
			if compiled.Error != nil {
				r.noPrune = true
				continue
			}
			p.proj.add(references(compiled.Environment, s.CEL.Expression))
		}
		p.reqs = append(p.reqs, r)
		return len(p.reqs) - 1
	}
	for ci, claim := range claims {
		for _, req := range claim.Spec.Devices.Requests {
			var group []int
			if req.Exactly != nil {
				e := req.Exactly
				i := addReq(requirement{claim: ci, request: req.Name, parent: req.Name, mode: e.AllocationMode, count: e.Count, admin: ptr.Deref(e.AdminAccess, false)}, e.DeviceClassName, e.Selectors)
				group = append(group, i)
			}
			for _, s := range req.FirstAvailable {
				i := addReq(requirement{claim: ci, request: req.Name + "/" + s.Name, parent: req.Name, mode: s.AllocationMode, count: s.Count}, s.DeviceClassName, s.Selectors)
				group = append(group, i)
			}
			p.groups = append(p.groups, group)
		}
	}
	return p, reasons
}

// matches returns, per requirement, whether the device may match ('y'), does not ('n') or
// could not be evaluated ('?').
func (p *plan) matches(ctx context.Context, celCache *cel.Cache, d *deviceRef) []byte {
	p.mu.Lock()
	parts, ok := p.parts[d.driver]
	if !ok {
		parts.attrs, parts.caps = p.proj.keyParts(d.driver)
		p.parts[d.driver] = parts
	}
	p.mu.Unlock()
	key := p.proj.key(d.driver, d.device, d.driver+"/"+d.pool+"/"+d.device.Name, parts.attrs, parts.caps)
	p.mu.Lock()
	m, ok := p.match[key]
	p.mu.Unlock()
	if ok {
		return m
	}
	m = make([]byte, len(p.reqs))
	proj := p.proj.project(d.driver, d.device)
	input := cel.Device{Driver: d.driver, AllowMultipleAllocations: proj.AllowMultipleAllocations, Attributes: proj.Attributes, Capacity: proj.Capacity}
	for i := range p.reqs {
		r := &p.reqs[i]
		m[i] = 'y'
		if r.noPrune {
			m[i] = '?'
			continue
		}
		for _, s := range r.selectors {
			if s.CEL == nil {
				continue
			}
			ok, _, err := celCache.GetOrCompile(s.CEL.Expression).DeviceMatches(ctx, input)
			if err != nil {
				m[i] = '?'
				break
			}
			if !ok {
				m[i] = 'n'
				break
			}
		}
	}
	p.mu.Lock()
	p.match[key] = m
	p.mu.Unlock()
	return m
}

// prune decides from the device index alone whether the node cannot satisfy the claims. It is
// conservative: it only rejects a node when some request has no alternative for which the
// node has enough devices passing the class and request selectors (free ones, unless free is
// set or the request has admin access). Devices that allow multiple allocations or whose
// selectors fail to evaluate count as unlimited. Constraints, capacity, device taints and
// devices shared between requests are left to the allocator.
func (p *plan) prune(ctx context.Context, celCache *cel.Cache, ni *nodeInfo, free bool) string {
	counts := make([]int64, len(p.reqs))
	const unlimited = int64(1) << 40
	for di := range ni.devices {
		d := &ni.devices[di]
		m := p.matches(ctx, celCache, d)
		for i := range p.reqs {
			switch m[i] {
			case 'n':
				continue
			case '?':
				counts[i] = unlimited
				continue
			}
			if d.multi {
				counts[i] = unlimited
				continue
			}
			if d.allocated && !free && !p.reqs[i].admin && p.reqs[i].mode != resourceapi.DeviceAllocationModeAll {
				continue
			}
			counts[i]++
		}
	}
	for _, group := range p.groups {
		fits := false
		for _, i := range group {
			if counts[i] >= p.reqs[i].need() {
				fits = true
				break
			}
		}
		if !fits {
			return p.explain(group, counts, free)
		}
	}
	return ""
}

func (p *plan) explain(group []int, counts []int64, free bool) string {
	r := &p.reqs[group[0]]
	adjective := "free "
	if free {
		adjective = ""
	}
	if len(group) == 1 {
		return fmt.Sprintf("have %d %sdevices of class %s matching request %s (%s)", counts[group[0]], adjective, r.class.Name, r.request, needText(r))
	}
	var parts []string
	for _, i := range group {
		a := &p.reqs[i]
		parts = append(parts, fmt.Sprintf("%s: %d %sof class %s (%s)", a.request, counts[i], adjective, a.class.Name, needText(a)))
	}
	return fmt.Sprintf("have no alternative for request %s: %s", r.parent, joinSemicolon(parts))
}

func needText(r *requirement) string {
	if r.mode == resourceapi.DeviceAllocationModeAll {
		return "needs all, at least 1"
	}
	return "needs " + strconv.FormatInt(r.count, 10)
}

func joinSemicolon(parts []string) string {
	var out string
	for i, s := range parts {
		if i > 0 {
			out += "; "
		}
		out += s
	}
	return out
}

type searchResult struct {
	node     *nodeInfo
	results  []resourceapi.DeviceRequestAllocationResult
	err      error
	errNode  string
	deadline bool
	pruned   int
	// Per candidate: why it failed, and whether the allocator said so.
	outcome []string
	ran     []bool
}

// search runs the allocator over the candidates in parallel and returns the first node in
// name order that fits, or the first fatal error (whichever comes first in that order), like
// a scheduler that stops at the first feasible node. With prev (the pass over the allocated
// state), nodes without allocated devices on which the allocator already failed are not run
// again: an empty allocated state cannot change their answer.
//
// blocked, when set, gives per node a reason it cannot take the pod today whatever its
// devices (its CPU or memory is taken); such nodes are not run.
func (c *Checker) search(ctx context.Context, p *plan, cc *cel.Cache, alloc structured.Allocator, nodes []*nodeInfo, free bool, why *reasonSet, prev *searchResult, blocked []string) searchResult {
	var (
		next    atomic.Int64
		best    atomic.Int64 // index of the decisive node so far
		res     searchResult
		pruned  atomic.Int64
		outcome = make([]string, len(nodes)) // per node: why it failed ("" = not decided)
		ran     = make([]bool, len(nodes))
		results = make([][]resourceapi.AllocationResult, len(nodes))
		scores  = make([]int64, len(nodes))
		errs    = make([]error, len(nodes))
		wg      sync.WaitGroup
	)
	// kube-scheduler scores the nodes where the claims fit by the
	// alternatives they got (8 - index per firstAvailable request, see
	// computeScore in its DynamicResources plugin) and binds to the best. A
	// node is decisive, and ends the search, when it gets every request's
	// first alternative; otherwise every node is tried and the best score
	// wins (lowest index on a tie).
	top := topScore(p.claims)
	best.Store(int64(len(nodes)))
	decide := func(i int64) {
		for {
			b := best.Load()
			if i >= b || best.CompareAndSwap(b, i) {
				return
			}
		}
	}
	workers := min(c.parallelism, len(nodes))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(nodes)) || i > best.Load() {
					return
				}
				if ctx.Err() != nil {
					return
				}
				ni := nodes[i]
				if blocked != nil && blocked[i] != "" {
					outcome[i] = blocked[i]
					continue
				}
				if prev != nil && prev.ran[i] && !ni.busy && prev.outcome[i] != "" {
					outcome[i], ran[i] = prev.outcome[i], true
					continue
				}
				if msg := p.prune(ctx, cc, ni, free); msg != "" {
					outcome[i] = msg
					pruned.Add(1)
					continue
				}
				out, err := alloc.Allocate(ctx, ni.node, p.claims)
				ran[i] = true
				switch {
				case err != nil && ctx.Err() != nil:
					return
				case err != nil && errors.Is(err, structured.ErrFailedAllocationOnNode):
					outcome[i] = "failed allocation: " + err.Error()
					continue
				case err != nil:
					errs[i] = err
					decide(i)
				case len(out) != len(p.claims):
					outcome[i] = "devices match but the allocator found no solution (constraints, capacity, device taints or devices needed by several requests)"
					continue
				default:
					results[i], scores[i] = out, score(p.claims, out)
					if scores[i] == top {
						decide(i)
					}
				}
			}
		}()
	}
	wg.Wait()
	res.pruned = int(pruned.Load())
	res.outcome, res.ran = outcome, ran
	b := best.Load()
	if b < int64(len(nodes)) && errs[b] != nil {
		res.err, res.errNode = errs[b], nodes[b].node.Name
		return res
	}
	if b == int64(len(nodes)) {
		// No node got every first alternative: the best score wins. A
		// deadline keeps the best node found so far.
		for i := range results {
			if results[i] != nil && (b == int64(len(nodes)) || scores[i] > scores[b]) {
				b = int64(i)
			}
		}
	}
	if b < int64(len(nodes)) {
		res.node = nodes[b]
		for _, a := range results[b] {
			res.results = append(res.results, a.Devices.Results...)
		}
		return res
	}
	for i, msg := range outcome {
		if msg == "" {
			// Not checked before the deadline.
			res.deadline = true
			continue
		}
		why.add(msg, nodes[i].node.Name)
	}
	return res
}

// topScore is the score of an allocation that gets the first alternative of
// every firstAvailable request.
func topScore(claims []*resourceapi.ResourceClaim) int64 {
	var s int64
	for _, c := range claims {
		for _, r := range c.Spec.Devices.Requests {
			if len(r.FirstAvailable) > 0 {
				s += resourceapi.FirstAvailableDeviceRequestMaxSize
			}
		}
	}
	return s
}

// score mirrors kube-scheduler's computeScore: each firstAvailable request
// adds 8 minus the index of the alternative it got.
func score(claims []*resourceapi.ResourceClaim, out []resourceapi.AllocationResult) int64 {
	var s int64
	for ci, c := range claims {
		if ci >= len(out) {
			break
		}
		got := map[string]bool{}
		for _, r := range out[ci].Devices.Results {
			got[r.Request] = true
		}
		for _, r := range c.Spec.Devices.Requests {
			for i, sub := range r.FirstAvailable {
				if got[r.Name+"/"+sub.Name] {
					s += int64(resourceapi.FirstAvailableDeviceRequestMaxSize - i)
				}
			}
		}
	}
	return s
}
