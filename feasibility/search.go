package feasibility

// The search: the allocator over the candidate nodes in parallel, and the
// choice of node the way kube-scheduler scores prioritized alternatives.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/reason"
)

type searchResult struct {
	node     *nodeInfo
	results  []resourceapi.DeviceRequestAllocationResult
	err      error
	errNode  string
	deadline bool
	pruned   int
	score    int64  // of the node's allocation
	first    string // the first node in name order the allocator served
	// Per candidate: why it failed, and whether the allocator said so.
	outcome []string
	ran     []bool
}

// searchPass is one pass of the search: the allocator it asks, the
// candidates, and what the pass knows of them beforehand.
type searchPass struct {
	// alloc answers on the candidates: the allocator over the allocated
	// state, or over free devices (free).
	alloc structured.Allocator
	free  bool
	nodes []*nodeInfo
	// why collects, per message, the nodes that failed for it when no
	// node fits.
	why *reason.Nodes
	// prev, when set, is the pass over the allocated state: nodes without
	// allocated devices on which the allocator already failed are not run
	// again, as an empty allocated state cannot change their answer.
	prev *searchResult
	// blocked, when set, gives per node a reason it cannot take the pod
	// today whatever its devices (its CPU or memory is taken); such nodes
	// are not run.
	blocked []string
}

// search runs the allocator over the candidates in parallel and returns the first node in
// name order that fits, or the first fatal error (whichever comes first in that order), like
// a scheduler that stops at the first feasible node.
//
// kube-scheduler scores the nodes where the claims fit by the alternatives
// they got (8 - index per firstAvailable request, see computeScore in its
// DynamicResources plugin) and binds to the best. A node is decisive, and
// ends the search, when it gets every request's first alternative;
// otherwise every node is tried and the best score wins (lowest index on a
// tie).
func (c *Checker) search(ctx context.Context, p *plan, pass searchPass) searchResult {
	n := len(pass.nodes)
	r := &searchRun{
		ctx: ctx, p: p, searchPass: pass,
		outcome:  make([]string, n),
		ran:      make([]bool, n),
		results:  make([][]resourceapi.AllocationResult, n),
		scores:   make([]int64, n),
		errs:     make([]error, n),
		prunedAt: make([]bool, n),
		top:      upstream.TopScore(p.claims),
		// Nodes of one class answer alike when their devices are free (see
		// classRepresentatives): only the first of each is run, and it wins
		// any tie with the others, so skipping them changes no choice.
		rep: classRepresentatives(pass.nodes, pass.free, pass.blocked),
	}
	r.best.Store(int64(n))
	var wg sync.WaitGroup
	for range min(c.parallelism, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.work()
		}()
	}
	wg.Wait()
	return r.result()
}

// searchRun is the state of one search, shared by its workers.
type searchRun struct {
	ctx context.Context
	p   *plan
	searchPass
	next   atomic.Int64
	best   atomic.Int64 // index of the decisive node so far
	pruned atomic.Int64
	// Per candidate: why it failed ("" = not decided), whether the
	// allocator ran, its results, their score, a fatal error, and whether
	// the index pruned it.
	outcome  []string
	ran      []bool
	results  [][]resourceapi.AllocationResult
	scores   []int64
	errs     []error
	prunedAt []bool
	// top is the score of a decisive allocation (upstream.TopScore); rep
	// the candidate that stands for each (classRepresentatives).
	top int64
	rep []int
}

// decide makes candidate i the decisive node unless one before it is.
func (r *searchRun) decide(i int64) {
	for {
		b := r.best.Load()
		if i >= b || r.best.CompareAndSwap(b, i) {
			return
		}
	}
}

// work takes the next candidate until none is left before the decisive
// node, or the context ends.
func (r *searchRun) work() {
	for {
		i := r.next.Add(1) - 1
		if i >= int64(len(r.nodes)) || i > r.best.Load() {
			return
		}
		if r.ctx.Err() != nil {
			return
		}
		if !r.try(i) {
			return
		}
	}
}

// try decides candidate i: from its class's first node, its block, the
// pass before, the index, or the allocator. It returns false when the
// allocator was cut short by the context.
func (r *searchRun) try(i int64) bool {
	ctx, p, ni := r.ctx, r.p, r.nodes[i]
	if r.rep[i] != int(i) {
		return true // answered by its class's first node
	}
	if r.blocked != nil && r.blocked[i] != "" {
		r.outcome[i] = r.blocked[i]
		return true
	}
	if r.prev != nil && r.prev.ran[i] && !ni.busy && r.prev.outcome[i] != "" {
		r.outcome[i], r.ran[i] = r.prev.outcome[i], true
		return true
	}
	if msg := p.prune(ctx, ni, r.free); msg != "" {
		r.outcome[i], r.prunedAt[i] = msg, true
		r.pruned.Add(1)
		return true
	}
	var out []resourceapi.AllocationResult
	var err error
	if r.free || !ni.busy {
		// The allocator over free devices answers alike there.
		out, err = p.answers.allocate(ctx, r.alloc, p.freeQuery(), ni.node)
	} else {
		out, err = r.alloc.Allocate(ctx, ni.node, p.claims)
	}
	r.ran[i] = true
	switch {
	case err != nil && ctx.Err() != nil:
		return false
	case err != nil && errors.Is(err, structured.ErrFailedAllocationOnNode):
		r.outcome[i] = "failed allocation: " + err.Error()
	case err != nil:
		r.errs[i] = err
		r.decide(i)
	case len(out) != len(p.claims):
		r.outcome[i] = "devices match but the allocator found no solution (constraints, capacity, device taints or devices needed by several requests)"
	default:
		r.results[i], r.scores[i] = out, upstream.Score(p.claims, out)
		if r.scores[i] == r.top {
			r.decide(i)
		}
	}
	return true
}

// result is what the workers found: the candidates a class's first node
// stood for take its outcome, then the decisive node, its error, the best
// score, or why every node failed.
func (r *searchRun) result() searchResult {
	var res searchResult
	nodes := r.nodes
	for i, rep := range r.rep {
		if rep != i && r.outcome[rep] != "" {
			r.outcome[i], r.ran[i] = r.outcome[rep], r.ran[rep]
			if r.prunedAt[rep] {
				r.pruned.Add(1)
			}
		}
	}
	res.pruned = int(r.pruned.Load())
	res.outcome, res.ran = r.outcome, r.ran
	for i := range r.results {
		if r.results[i] != nil {
			res.first = nodes[i].node.Name
			break
		}
	}
	b := r.best.Load()
	if b < int64(len(nodes)) && r.errs[b] != nil {
		res.err, res.errNode = r.errs[b], nodes[b].node.Name
		return res
	}
	if b == int64(len(nodes)) {
		// No node got every first alternative: the best score wins. A
		// deadline keeps the best node found so far.
		for i := range r.results {
			if r.results[i] != nil && (b == int64(len(nodes)) || r.scores[i] > r.scores[b]) {
				b = int64(i)
			}
		}
	}
	if b < int64(len(nodes)) {
		res.node, res.score = nodes[b], r.scores[b]
		for _, a := range r.results[b] {
			res.results = append(res.results, a.Devices.Results...)
		}
		return res
	}
	for i, msg := range r.outcome {
		if msg == "" {
			// Not checked before the deadline.
			res.deadline = true
			continue
		}
		r.why.Add(msg, nodes[i].node.Name)
	}
	return res
}

// classRepresentatives gives, per candidate, the index of the first
// candidate of its class that the search may stand for it: nodes of one
// class have the same labels, taints, allocatable and devices up to names
// and identities (classes.go), so on nodes whose devices are all free (the
// free pass, or a node that is not busy) the allocator gives them the same
// answer and the same score. Nodes without a class key, busy nodes in the
// pass over the allocated state, and nodes blocked today stand for
// themselves.
func classRepresentatives(nodes []*nodeInfo, free bool, blocked []string) []int {
	rep := make([]int, len(nodes))
	var first []int // by class index - 1: the class's first candidate, plus one
	for i, ni := range nodes {
		rep[i] = i
		c := ni.classIdx()
		if c == 0 || (!free && ni.busy) || (blocked != nil && blocked[i] != "") {
			continue
		}
		if c > len(first) {
			first = append(first, make([]int, c-len(first))...)
		}
		if r := first[c-1]; r > 0 {
			rep[i] = r - 1
		} else {
			first[c-1] = i + 1
		}
	}
	return rep
}
