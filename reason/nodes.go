package reason

// Reasons aggregated over nodes: what a check says when no node serves.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Nodes aggregates why nodes failed: each message with the names of the
// nodes that failed for it.
type Nodes struct {
	nodes map[string][]string
}

// NewNodes returns an empty aggregate.
func NewNodes() *Nodes { return &Nodes{nodes: map[string][]string{}} }

// Add records that node failed for msg.
func (r *Nodes) Add(msg, node string) { r.nodes[msg] = append(r.nodes[msg], node) }

// Clone returns a copy that records apart from r.
func (r *Nodes) Clone() *Nodes {
	c := NewNodes()
	for k, v := range r.nodes {
		c.nodes[k] = slices.Clone(v)
	}
	return c
}

// maxNamedNodes is how many node names a reason lists before "and N more".
const maxNamedNodes = 3

// List renders "<n> node(s) (<names>) <msg>". With rank (how far a node is
// from serving the claims' devices, lower is closer),
// the reasons of the closest nodes come first and name the closest nodes
// first: what keeps the nodes that have the devices from taking the pod is
// what the pod needs to hear, not the taints of nodes that never had them.
// Then the most frequent first, then by message; nodes by name.
func (r *Nodes) List(rank func(node string) int) []string {
	if rank == nil {
		rank = func(string) int { return 0 }
	}
	total := 0
	for _, nodes := range r.nodes {
		total += len(nodes)
	}
	ranks := make(map[string]int, total)
	best := make(map[string]int, len(r.nodes))
	for msg, nodes := range r.nodes {
		best[msg] = -1
		for _, n := range nodes {
			k, ok := ranks[n]
			if !ok {
				k = rank(n)
				ranks[n] = k
			}
			if best[msg] < 0 || k < best[msg] {
				best[msg] = k
			}
		}
	}
	msgs := slices.Sorted(maps.Keys(r.nodes))
	slices.SortStableFunc(msgs, func(a, b string) int {
		return cmp.Or(cmp.Compare(best[a], best[b]), cmp.Compare(len(r.nodes[b]), len(r.nodes[a])))
	})
	out := make([]string, 0, len(msgs))
	for _, msg := range msgs {
		nodes := r.nodes[msg]
		names := strings.Join(closest(nodes, ranks), ", ")
		if len(nodes) > maxNamedNodes {
			names += fmt.Sprintf(" and %d more", len(nodes)-maxNamedNodes)
		}
		noun := "nodes"
		if len(nodes) == 1 {
			noun = "node"
		}
		out = append(out, fmt.Sprintf("%d %s (%s) %s", len(nodes), noun, names, msg))
	}
	return out
}

// closest returns the first maxNamedNodes of nodes ordered by rank, then by
// name: what sorting them all would give, in time linear in the nodes (a
// reason may hold every node of the fleet).
func closest(nodes []string, ranks map[string]int) []string {
	less := func(a, b string) bool { return cmp.Or(cmp.Compare(ranks[a], ranks[b]), strings.Compare(a, b)) < 0 }
	top := make([]string, 0, maxNamedNodes)
	for _, n := range nodes {
		if len(top) == maxNamedNodes && !less(n, top[len(top)-1]) {
			continue
		}
		i := len(top)
		for i > 0 && less(n, top[i-1]) {
			i--
		}
		if len(top) < maxNamedNodes {
			top = append(top, "")
		}
		copy(top[i+1:], top[i:len(top)-1])
		top[i] = n
	}
	return top
}
