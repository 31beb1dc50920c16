package feasibility

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// reasonSet aggregates per-node failure messages: message → node names.
type reasonSet struct {
	nodes map[string][]string
}

func newReasons() *reasonSet { return &reasonSet{nodes: map[string][]string{}} }

func (r *reasonSet) add(msg, node string) { r.nodes[msg] = append(r.nodes[msg], node) }

func (r *reasonSet) clone() *reasonSet {
	c := newReasons()
	for k, v := range r.nodes {
		c.nodes[k] = slices.Clone(v)
	}
	return c
}

// maxNamedNodes is how many node names a reason lists before "and N more".
const maxNamedNodes = 3

// list renders "<n> node(s) (<names>) <msg>", most frequent first, then by message.
func (r *reasonSet) list() []string {
	msgs := slices.Sorted(maps.Keys(r.nodes))
	slices.SortStableFunc(msgs, func(a, b string) int { return cmp.Compare(len(r.nodes[b]), len(r.nodes[a])) })
	out := make([]string, 0, len(msgs))
	for _, msg := range msgs {
		nodes := slices.Sorted(slices.Values(r.nodes[msg]))
		names := strings.Join(nodes[:min(len(nodes), maxNamedNodes)], ", ")
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
