package decide_test

import (
	"fmt"
	"testing"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/benchinput"
	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

func benchPolicy(b *testing.B) *translate.Policy {
	b.Helper()
	p, err := translate.LoadPolicy([]byte(benchinput.GPUNICPolicy))
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkDecide: the whole decision on one pod (translation, placement
// proof over the node classes, the allocator's verdict) on a 1,000-node
// snapshot, cold (every cache off: a pod shape seen for the first time, or
// a snapshot that changed since) and warm (the caches hold the shape),
// against one JSON decode+encode of the pod's AdmissionReview.
func BenchmarkDecide(b *testing.B) {
	pod, policy := benchinput.GPUNICPod("trainer-0"), benchPolicy(b)
	n := 1000
	f := fleetgen.Synthetic(n)
	snap, err := feasibility.NewSnapshot(&feasibility.Inventory{Nodes: f.Nodes, Slices: f.Slices, Classes: f.Classes}, 1, feasibility.DefaultFeatures())
	if err != nil {
		b.Fatal(err)
	}
	for _, warm := range []bool{false, true} {
		size, cache := -1, "cold"
		if warm {
			size, cache = 0, "warm"
		}
		b.Run(fmt.Sprintf("nodes=%d/%s", n, cache), func(b *testing.B) {
			c := feasibility.NewChecker(feasibility.Options{CacheSize: size})
			in := decide.Input{Pod: pod, Policy: policy, Checker: c, Snapshot: snap, Admitted: true}
			c.Prepare(b.Context(), snap) // node classes and allocators of the snapshot
			if _, err := decide.Pod(b.Context(), in); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				d, err := decide.Pod(b.Context(), in)
				if err != nil || d.Outcome != reason.OutcomeTranslate || d.Verdict == nil || d.Verdict.Cached != warm {
					b.Fatalf("want a translation with a verdict (cached %v), got %+v %v", warm, d, err)
				}
			}
		})
	}
	b.Run("admission-review-json-roundtrip", func(b *testing.B) { benchinput.AdmissionRoundTrip(b, pod) })
}
