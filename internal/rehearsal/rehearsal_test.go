//go:build unix

package rehearsal

import (
	"testing"

	"github.com/claimbridge/claimbridge/cutover"
)

// TestAgreesWithinTheRange: a rehearsal agrees with an OrderDependent or Partial forecast
// only when the pods it bound lie within the range the forecast gave; with a firm result
// only when it bound the pods served; always where the forecast promised nothing.
func TestAgreesWithinTheRange(t *testing.T) {
	ordered := &cutover.Effect{Result: cutover.OrderDependent, Pods: 2, Served: 2, Alone: 2, Least: 1, Most: 2}
	partial := &cutover.Effect{Result: cutover.Partial, Pods: 3, Served: 2}
	moves := &cutover.Effect{Result: cutover.Moves, Pods: 2, Served: 2}
	breaks := &cutover.Effect{Result: cutover.Breaks, Pods: 1, Served: 0}
	unjudged := &cutover.Effect{Result: cutover.Unjudged, Pods: 1}
	for name, tc := range map[string]struct {
		c     *cutover.Effect
		bound int64
		want  bool
	}{
		"order-dependent, below its range":   {ordered, 0, false},
		"order-dependent, at its least":      {ordered, 1, true},
		"order-dependent, at its most":       {ordered, 2, true},
		"partial, the pods served":           {partial, 2, true},
		"partial, more than served":          {partial, 3, false},
		"moves, one pod short":               {moves, 1, false},
		"moves, every pod":                   {moves, 2, true},
		"breaks, yet a pod was bound":        {breaks, 1, false},
		"breaks, none bound":                 {breaks, 0, true},
		"unjudged, whatever it bound":        {unjudged, 1, true},
		"a row the forecast did not concern": {nil, 5, true},
	} {
		if got := Agrees(tc.c, tc.bound); got != tc.want {
			t.Errorf("%s: agrees %t, want %t", name, got, tc.want)
		}
	}
}
