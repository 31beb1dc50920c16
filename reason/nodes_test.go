package reason

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestClosestNamesTheNodesASortWouldNameFirst(t *testing.T) {
	ranks := map[string]int{}
	var nodes []string
	for i := range 40 {
		n := fmt.Sprintf("node-%02d", (i*17)%40)
		nodes = append(nodes, n)
		ranks[n] = (i * 7) % 5
	}
	for k := range len(nodes) + 1 {
		sorted := slices.Clone(nodes[:k])
		slices.SortFunc(sorted, func(a, b string) int {
			if ranks[a] != ranks[b] {
				return ranks[a] - ranks[b]
			}
			return strings.Compare(a, b)
		})
		want := sorted[:min(len(sorted), maxNamedNodes)]
		if got := closest(nodes[:k], ranks); !slices.Equal(want, got) {
			t.Errorf("%d nodes: want %q, got %q", k, want, got)
		}
	}
}
