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

// search runs the allocator over the candidates in parallel and returns the first node in
// name order that fits, or the first fatal error (whichever comes first in that order), like
// a scheduler that stops at the first feasible node. With prev (the pass over the allocated
// state), nodes without allocated devices on which the allocator already failed are not run
// again: an empty allocated state cannot change their answer.
//
// blocked, when set, gives per node a reason it cannot take the pod today whatever its
// devices (its CPU or memory is taken); such nodes are not run.
func (c *Checker) search(ctx context.Context, p *plan, alloc structured.Allocator, nodes []*nodeInfo, free bool, why *reasonSet, prev *searchResult, blocked []string) searchResult {
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
	top := upstream.TopScore(p.claims)
	best.Store(int64(len(nodes)))
	decide := func(i int64) {
		for {
			b := best.Load()
			if i >= b || best.CompareAndSwap(b, i) {
				return
			}
		}
	}
	// Nodes of one class answer alike when their devices are free (see
	// classRepresentatives): only the first of each is run, and it wins
	// any tie with the others, so skipping them changes no choice.
	rep := classRepresentatives(nodes, free, blocked)
	prunedAt := make([]bool, len(nodes))
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
				if rep[i] != int(i) {
					continue // answered by its class's first node
				}
				if blocked != nil && blocked[i] != "" {
					outcome[i] = blocked[i]
					continue
				}
				if prev != nil && prev.ran[i] && !ni.busy && prev.outcome[i] != "" {
					outcome[i], ran[i] = prev.outcome[i], true
					continue
				}
				if msg := p.prune(ctx, ni, free); msg != "" {
					outcome[i], prunedAt[i] = msg, true
					pruned.Add(1)
					continue
				}
				var out []resourceapi.AllocationResult
				var err error
				if free || !ni.busy {
					// The allocator over free devices answers alike there.
					out, err = p.answers.allocate(ctx, alloc, p.freeQuery(), ni.node)
				} else {
					out, err = alloc.Allocate(ctx, ni.node, p.claims)
				}
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
					results[i], scores[i] = out, upstream.Score(p.claims, out)
					if scores[i] == top {
						decide(i)
					}
				}
			}
		}()
	}
	wg.Wait()
	for i, r := range rep {
		if r != i && outcome[r] != "" {
			outcome[i], ran[i] = outcome[r], ran[r]
			if prunedAt[r] {
				pruned.Add(1)
			}
		}
	}
	res.pruned = int(pruned.Load())
	res.outcome, res.ran = outcome, ran
	for i := range results {
		if results[i] != nil {
			res.first = nodes[i].node.Name
			break
		}
	}
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
		res.node, res.score = nodes[b], scores[b]
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
