package feasibility

import (
	"fmt"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/translate/feasibility/fleetgen"
)

func syntheticSnapshot(b *testing.B, nodes int) *Snapshot {
	b.Helper()
	snap, err := NewSnapshot(inventoryFrom(fleetgen.Synthetic(nodes)), 1, DefaultFeatures())
	if err != nil {
		b.Fatal(err)
	}
	return snap
}

// alignedH100 asks for one H100 and the NIC on its PCIe root.
func alignedH100() []*resourceapi.ResourceClaimSpec {
	return []*resourceapi.ResourceClaimSpec{makeClaim().
		Exactly("gpu", fleetgen.ClassGPU, 1, h100).Exactly("nic", fleetgen.ClassNIC, 1).
		MatchAttribute("resource.kubernetes.io/pcieRoot").Obj()}
}

// twoGPUsOneRoot cannot be satisfied (one GPU per PCIe root) but only the allocator can tell:
// every DGX node passes the device index.
func twoGPUsOneRoot() []*resourceapi.ResourceClaimSpec {
	return []*resourceapi.ResourceClaimSpec{makeClaim().
		Exactly("gpu", fleetgen.ClassGPU, 2, h100).Exactly("nic", fleetgen.ClassNIC, 1).
		MatchAttribute("resource.kubernetes.io/pcieRoot").Obj()}
}

// missingProduct cannot be satisfied: no node publishes the product.
func missingProduct() []*resourceapi.ResourceClaimSpec {
	return []*resourceapi.ResourceClaimSpec{makeClaim().
		Exactly("gpu", fleetgen.ClassGPU, 1, `device.attributes["gpu.nvidia.com"].productName == "NVIDIA B200"`).Obj()}
}

// BenchmarkCheckWarm: the pods of one Deployment after the first.
func BenchmarkCheckWarm(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			snap := syntheticSnapshot(b, n)
			c := NewChecker(Options{})
			pod, claims := makePod("p", "ns").Obj(), alignedH100()
			if v := c.Check(b.Context(), snap, pod, claims); v.Kind != FitsNow {
				b.Fatalf("want FitsNow, got %s %q", v.Kind, v.Reasons)
			}
			for b.Loop() {
				if v := c.Check(b.Context(), snap, pod, claims); !v.Cached {
					b.Fatal("not cached")
				}
			}
		})
	}
}

// BenchmarkCheckCold1000: a verdict-cache miss on 1,000 nodes, against the baseline of one raw
// Allocate per node (what a brute-force check costs), for a claim that only the allocator can
// reject and for one the index rejects.
func BenchmarkCheckCold1000(b *testing.B) {
	snap := syntheticSnapshot(b, 1000)
	pod := makePod("p", "ns").Obj()
	for name, claims := range map[string][]*resourceapi.ResourceClaimSpec{
		"constraint-unsatisfiable": twoGPUsOneRoot(),
		"missing-product":          missingProduct(),
		"fits":                     alignedH100(),
	} {
		b.Run(name+"/checker", func(b *testing.B) {
			c := NewChecker(Options{CacheSize: -1, Timeout: time10s})
			c.Check(b.Context(), snap, pod, claims) // builds the allocators once per snapshot
			for b.Loop() {
				if v := c.Check(b.Context(), snap, pod, claims); v.Kind == Unknown {
					b.Fatalf("unknown: %q", v.Reasons)
				}
			}
		})
		b.Run(name+"/raw-allocate-per-node", func(b *testing.B) {
			c := NewChecker(Options{})
			defaulted, err := defaultClaims(pod, claims)
			if err != nil {
				b.Fatal(err)
			}
			allocs, err := snap.allocatorsFor(b.Context(), c.celCache(snap.features))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				for _, ni := range snap.nodes {
					if _, err := allocs.now.Allocate(b.Context(), ni.node, defaulted); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkUnsatisfiable5000: a pod no node can serve, on 5,000 nodes.
func BenchmarkUnsatisfiable5000(b *testing.B) {
	snap := syntheticSnapshot(b, 5000)
	pod := makePod("p", "ns").Obj()
	for name, claims := range map[string][]*resourceapi.ResourceClaimSpec{
		"missing-product":          missingProduct(),
		"constraint-unsatisfiable": twoGPUsOneRoot(),
	} {
		for _, cached := range []bool{false, true} {
			size := -1
			if cached {
				size = 0
			}
			b.Run(fmt.Sprintf("%s/cached=%v", name, cached), func(b *testing.B) {
				c := NewChecker(Options{CacheSize: size, Timeout: time10s})
				c.Check(b.Context(), snap, pod, claims) // builds the allocators; fills the cache if enabled
				for b.Loop() {
					if v := c.Check(b.Context(), snap, pod, claims); v.Kind != NeverFits {
						b.Fatalf("want NeverFits, got %s %q", v.Kind, v.Reasons)
					}
				}
			})
		}
	}
}

const time10s = 10 * time.Second
