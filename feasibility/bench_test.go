package feasibility

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/feasibility/allocview"
	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/internal/testing/benchinput"
	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
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
			defaulted, err := upstream.DefaultClaims(pod, claims)
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

// BenchmarkScaling: one check on 100, 1,000 and 5,000 nodes, warm (the verdict cache holds
// it: the pods of one Deployment after the first) and cold (cache disabled: a pod shape seen for
// the first time, or a changed inventory), for a pod that fits, one whose product no node has
// and one that only the allocator can reject (a matchAttribute constraint).
func BenchmarkScaling(b *testing.B) {
	pod := makePod("p", "ns").Obj()
	cases := []struct {
		name   string
		claims []*resourceapi.ResourceClaimSpec
		want   VerdictKind
	}{
		{"fits", alignedH100(), FitsNow},
		{"missing-product", missingProduct(), NeverFits},
		{"constraint-unsatisfiable", twoGPUsOneRoot(), NeverFits},
	}
	for _, n := range []int{100, 1000, 5000} {
		snap := syntheticSnapshot(b, n)
		for _, tc := range cases {
			for _, warm := range []bool{true, false} {
				size, cache := -1, "cold"
				if warm {
					size, cache = 0, "warm"
				}
				b.Run(fmt.Sprintf("nodes=%d/%s/%s", n, tc.name, cache), func(b *testing.B) {
					c := NewChecker(Options{CacheSize: size, Timeout: time10s})
					c.Check(b.Context(), snap, pod, tc.claims) // builds the allocators; fills the cache if enabled
					for b.Loop() {
						v := c.Check(b.Context(), snap, pod, tc.claims)
						if v.Kind != tc.want || v.Cached != warm {
							b.Fatalf("want %s (cached %v), got %s (cached %v) %q", tc.want, warm, v.Kind, v.Cached, v.Reasons)
						}
					}
				})
			}
		}
	}
}

const time10s = 10 * time.Second

// BenchmarkSnapshot: building the inventory snapshot, which the webhook does after the fleet
// changed (at most once per rebuild interval), and the first check on it, which builds the
// allocators and compiles the device classes' CEL.
func BenchmarkSnapshot(b *testing.B) {
	pod := makePod("p", "ns").Obj()
	for _, n := range []int{1000, 5000} {
		inv := inventoryFrom(fleetgen.Synthetic(n))
		b.Run(fmt.Sprintf("nodes=%d/build", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := NewSnapshot(inv, 1, DefaultFeatures()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("nodes=%d/build-and-first-check", n), func(b *testing.B) {
			c := NewChecker(Options{Timeout: time10s})
			var gen uint64
			for b.Loop() {
				gen++
				snap, err := NewSnapshot(inv, gen, DefaultFeatures())
				if err != nil {
					b.Fatal(err)
				}
				if v := c.Check(b.Context(), snap, pod, alignedH100()); v.Kind != FitsNow {
					b.Fatalf("want FitsNow, got %s %q", v.Kind, v.Reasons)
				}
			}
		})
	}
}

// placementInput is a realistic pod for the placement check: one H100 and
// its NIC by GFD product label, with its translation.
func placementInput(b *testing.B) PlacementInput {
	b.Helper()
	return translatedInput(b, benchinput.GPUNICPod("p"), benchinput.GPUNICPolicy)
}

// translatedInput is the pod under the policy (YAML), with its translation.
func translatedInput(b *testing.B, pod *corev1.Pod, policyYAML string) PlacementInput {
	b.Helper()
	policy, err := translate.LoadPolicy([]byte(policyYAML))
	if err != nil {
		b.Fatal(err)
	}
	res, err := translate.Pod(translate.Input{Pod: pod, Policy: policy})
	if err != nil || res.Outcome != reason.OutcomeTranslate {
		b.Fatalf("translate: %v %v", err, res.Reasons)
	}
	return PlacementInput{Policy: policy, Legacy: pod, Translated: res.Pod, Claims: []*resourceapi.ResourceClaimSpec{&res.Template.Spec.Spec}}
}

// BenchmarkPlacement: the placement check on 100, 1,000 and 5,000 nodes, warm
// (its cache holds the pod's shape: the pods of one Deployment after the
// first) and cold (a pod shape seen for the first time: one evaluation per
// node class), next to the verdict of the same pod (BenchmarkPlacement/…/verdict-*).
func BenchmarkPlacement(b *testing.B) {
	in := placementInput(b)
	for _, n := range []int{100, 1000, 5000} {
		snap := syntheticSnapshot(b, n)
		for _, warm := range []bool{true, false} {
			size, cache := -1, "cold"
			if warm {
				size, cache = 0, "warm"
			}
			b.Run(fmt.Sprintf("nodes=%d/placement-%s", n, cache), func(b *testing.B) {
				c := NewChecker(Options{CacheSize: size, Timeout: time10s})
				c.Placement(b.Context(), snap, in) // node classes and allocators of the snapshot
				for b.Loop() {
					p := c.Placement(b.Context(), snap, in)
					if !p.Equal() || p.Cached != warm {
						b.Fatalf("placement %+v, want equal and cached %v", p, warm)
					}
				}
			})
			b.Run(fmt.Sprintf("nodes=%d/verdict-%s", n, cache), func(b *testing.B) {
				c := NewChecker(Options{CacheSize: size, Timeout: time10s})
				c.Check(b.Context(), snap, in.Translated, in.Claims)
				for b.Loop() {
					if v := c.Check(b.Context(), snap, in.Translated, in.Claims); v.Kind != FitsNow {
						b.Fatalf("verdict %s %q", v.Kind, v.Reasons)
					}
				}
			})
		}
	}
}

// BenchmarkPlacementNewSnapshot: the first placement check on a new
// snapshot, which groups the nodes into classes (the webhook rebuilds the
// snapshot at most every 500 ms when the inventory changed), against
// building the snapshot alone.
func BenchmarkPlacementNewSnapshot(b *testing.B) {
	in := placementInput(b)
	for _, n := range []int{1000, 5000} {
		inv := inventoryFrom(fleetgen.Synthetic(n))
		b.Run(fmt.Sprintf("nodes=%d/build", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := NewSnapshot(inv, 1, DefaultFeatures()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("nodes=%d/build-and-first-placement", n), func(b *testing.B) {
			c := NewChecker(Options{Timeout: time10s})
			var gen uint64
			for b.Loop() {
				gen++
				snap, err := NewSnapshot(inv, gen, DefaultFeatures())
				if err != nil {
					b.Fatal(err)
				}
				if p := c.Placement(b.Context(), snap, in); !p.Equal() {
					b.Fatalf("placement %+v", p)
				}
			}
		})
	}
}

// BenchmarkNodeClasses: grouping the nodes of a snapshot into classes with
// nothing remembered (the first snapshot a process sees) and with the
// previous snapshot's keys (every later one), against building the snapshot.
func BenchmarkNodeClasses(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		snap := syntheticSnapshot(b, n)
		for _, remembered := range []bool{false, true} {
			name := "first"
			if remembered {
				name = "remembered"
			}
			b.Run(fmt.Sprintf("nodes=%d/%s", n, name), func(b *testing.B) {
				var memo classMemo
				(&Snapshot{nodes: snap.nodes, classes: snap.classes}).nodeClassList(&memo)
				for b.Loop() {
					// A snapshot of the same objects, classes not computed yet.
					s := &Snapshot{nodes: snap.nodes, classes: snap.classes}
					if !remembered {
						memo = classMemo{}
					}
					if len(s.nodeClassList(&memo)) != 4 {
						b.Fatal("want 4 classes")
					}
				}
			})
		}
	}
}

// reservedSnapshot is the synthetic fleet with one GPU of each of its
// first n nodes held by an allocated claim, added to the fleet's snapshot
// as the webhook adds the devices of pods it admitted a moment ago
// (reservations, Snapshot.WithClaims).
func reservedSnapshot(b *testing.B, nodes, n int) *Snapshot {
	b.Helper()
	inv := inventoryFrom(fleetgen.Synthetic(nodes))
	base, err := NewSnapshot(inv, 1, DefaultFeatures())
	if err != nil {
		b.Fatal(err)
	}
	held := 0
	var claims []*resourceapi.ResourceClaim
	for _, ni := range base.nodes {
		if held == n {
			break
		}
		for _, d := range ni.devices {
			if d.driver != fleetgen.DriverGPU {
				continue
			}
			claims = append(claims, &resourceapi.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("reserved-%d", held)},
				Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
					Results: []resourceapi.DeviceRequestAllocationResult{result("gpu", d.driver, d.pool, d.device.Name)},
				}}},
			})
			held++
			break
		}
	}
	if held != n {
		b.Fatalf("the fleet has GPUs on %d nodes, want %d", held, n)
	}
	snap := base.WithClaims(claims, 2)
	busy := 0
	for i := range snap.nodes {
		if snap.nodeAt(i).busy {
			busy++
		}
	}
	if busy != n {
		b.Fatalf("%d nodes busy, want %d", busy, n)
	}
	return snap
}

// BenchmarkReservations: a cold check (every admission of a burst changes
// what is held, so the verdict cache misses) on 1,000 nodes with 1,000
// reservations outstanding — a GPU held on every node, so every node is
// busy — against the same check with none.
func BenchmarkReservations(b *testing.B) {
	pod := makePod("p", "ns").Obj()
	for _, n := range []int{0, 1000} {
		snap := reservedSnapshot(b, 1000, n)
		b.Run(fmt.Sprintf("nodes=1000/reservations=%d", n), func(b *testing.B) {
			c := NewChecker(Options{CacheSize: -1, Timeout: time10s})
			c.Check(b.Context(), snap, pod, alignedH100()) // builds the allocators once per snapshot
			for b.Loop() {
				if v := c.Check(b.Context(), snap, pod, alignedH100()); v.Kind != FitsNow {
					b.Fatalf("want FitsNow, got %s %q", v.Kind, v.Reasons)
				}
			}
		})
	}
}

// BenchmarkUpdate: what one event costs the snapshot, at 100, 1,000 and
// 5,000 nodes: a reservation added (an admission of a burst), a claim
// allocated by kube-scheduler and a pod bound (informer events; a pod on
// every node, the update given the node it is bound to), each with the
// node classes of the new snapshot. Each touches one node; a rebuild
// (BenchmarkSnapshot) indexes the whole fleet.
func BenchmarkUpdate(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		base := syntheticSnapshot(b, n)
		var memo classMemo
		base.nodeClassList(&memo)
		held := heldClaims(base, n)[:1] // a device of the first node
		base.WithClaims(held, 2)        // indexes the pools once per fleet snapshot
		b.Run(fmt.Sprintf("nodes=%d/reservation", n), func(b *testing.B) {
			for b.Loop() {
				s := base.WithClaims(held, 2)
				if len(s.nodeClassList(&memo)) != 4 || !s.nodeAt(0).busy {
					b.Fatal("want 4 classes and the first node busy")
				}
			}
		})
		b.Run(fmt.Sprintf("nodes=%d/pod-bound", n), func(b *testing.B) {
			// A pod on every node, listed when the fleet snapshot is
			// built, then one more bound to the first: the update the
			// webhook makes, given the node its pod event named and that
			// node's pods.
			inv := inventoryFrom(fleetgen.Synthetic(n))
			for _, node := range inv.Nodes {
				inv.Pods = append(inv.Pods, boundPod("p-"+node.Name, node.Name, "1"))
			}
			inv.PodsListed = true
			listed, err := NewSnapshot(inv, 2, DefaultFeatures())
			if err != nil {
				b.Fatal(err)
			}
			listed.nodeClassList(&memo)
			first := listed.nodes[0].node.Name
			on := []*corev1.Pod{boundPod("p-"+first, first, "1"), boundPod("new", first, "1")}
			podsOn := func(string) []*corev1.Pod { return on }
			for b.Loop() {
				s := listed.UpdatePods([]string{first}, podsOn, 3)
				if len(s.nodeClassList(&memo)) != 4 || s.nodeAt(0).pods != 2 {
					b.Fatal("want 4 classes and two pods on the first node")
				}
			}
		})
		b.Run(fmt.Sprintf("nodes=%d/claim-allocated", n), func(b *testing.B) {
			all := slices.Concat(base.claims, held)
			for b.Loop() {
				s := base.ReplaceClaims(all, 2)
				if len(s.nodeClassList(&memo)) != 4 || !s.nodeAt(0).busy {
					b.Fatal("want 4 classes and the first node busy")
				}
			}
		})
	}
}

// BenchmarkBurst: the check of a burst's next pod at 1,000 and 5,000 nodes.
// Every pod before it holds its devices (a reservation), so each check runs
// on a new snapshot and misses the verdict cache: on the snapshots' lineage
// the node chosen before is asked first; the search (cache off) runs over
// the whole snapshot. A burst of 64 one-GPU pods, again and again.
func BenchmarkBurst(b *testing.B) {
	pod := makePod("p", "ns").Obj()
	claims := []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1).Obj()}
	for _, n := range []int{1000, 5000} {
		fleet := syntheticSnapshot(b, n)
		for _, mode := range []string{"lineage", "search"} {
			b.Run(fmt.Sprintf("nodes=%d/%s", n, mode), func(b *testing.B) {
				size := 0 // the default
				if mode == "search" {
					size = -1
				}
				c := NewChecker(Options{CacheSize: size, Timeout: time10s})
				var (
					held []*resourceapi.ResourceClaim
					prev *Snapshot
					gen  uint64 = 1
				)
				next := func() {
					if len(held) == 64 {
						held, prev = nil, nil
					}
					gen++
					snap := fleet.WithClaimsAfter(prev, held, gen)
					prev = snap
					v := c.Check(b.Context(), snap, pod, claims)
					if v.Kind != FitsNow || v.Cached {
						b.Fatalf("want an uncached FitsNow, got %s (cached %v) %q", v.Kind, v.Cached, v.Reasons)
					}
					held = append(held, reservedClaim(int(gen), v))
				}
				// The first pods of a burst, outside the timing: the
				// lineage answers the second on the node of the first.
				for range 3 {
					next()
				}
				if answered := c.revalidated.Load() > 0; answered != (mode == "lineage") {
					b.Fatalf("%s: the lineage answered a check: %v", mode, answered)
				}
				for b.Loop() {
					next()
				}
			})
		}
	}
}

// BenchmarkAutoscaled: what the autoscaled-pool check adds to the decision
// of a pod DRA serves only once devices free up, on 1,000 and 5,000 nodes,
// against LegacyFitsNow, which that decision already runs over every node:
// with every node in a Karpenter NodePool (the worst case: every node is
// looked at, and every DGX node counts), cold (cache off: a pod shape seen
// for the first time, or a new inventory snapshot) and warm (the pods of a
// Deployment after the first), and with the policy's pool labels on no
// node. The nodes of the pools and the node classes are found before the
// loop, once per snapshot, as the webhook's placement check finds the
// classes anyway.
func BenchmarkAutoscaled(b *testing.B) {
	claims := alignedH100()
	legacy := makePod("p", "ns").Obj()
	legacy.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}
	translated := makePod("p", "ns").Obj()
	for _, n := range []int{1000, 5000} {
		for _, pooled := range []bool{true, false} {
			f := fleetgen.Synthetic(n)
			if pooled {
				for _, node := range f.Nodes {
					node.Labels[v1alpha1.KarpenterNodePoolLabel] = "gpu"
				}
			}
			inv := inventoryFrom(f)
			inv.PodsListed = true
			snap, err := NewSnapshot(inv, 1, DefaultFeatures())
			if err != nil {
				b.Fatal(err)
			}
			in := AutoscaledInput{Labels: []string{v1alpha1.KarpenterNodePoolLabel}, Legacy: legacy, Translated: translated, Claims: claims}
			want := 0
			if pooled {
				want = n / 4 // the DGX H100 nodes: the others have no H100 for the claim
			}
			name := "no-pool"
			if pooled {
				name = "every-node-pooled"
			}
			for _, cache := range []string{"cold", "warm"} {
				size := 0
				if cache == "cold" {
					size = -1
				}
				c := NewChecker(Options{CacheSize: size})
				if got := c.Autoscaled(b.Context(), snap, in); got.Nodes != want {
					b.Fatalf("%d nodes of autoscaled pools serve the pod, want %d", got.Nodes, want)
				}
				b.Run(fmt.Sprintf("nodes=%d/%s/%s", n, name, cache), func(b *testing.B) {
					for b.Loop() {
						c.Autoscaled(b.Context(), snap, in)
					}
				})
			}
			if !pooled {
				continue
			}
			b.Run(fmt.Sprintf("nodes=%d/legacy-fits-now", n), func(b *testing.B) {
				for b.Loop() {
					snap.LegacyFitsNow(legacy)
				}
			})
		}
	}
}

// trainerInput is the webhook benchmark's pod (e2e/bench): a trainer with
// 7 GPUs and an RDMA NIC, a profiler with a GPU, by GFD product and memory
// with a preferred driver version, under the default profiles with
// rdma/hca as one NIC per pod; with its translation.
func trainerInput(b *testing.B) PlacementInput {
	b.Helper()
	return translatedInput(b, benchinput.TrainerPod("research", 7), benchinput.TrainerPolicy(v1alpha1.DefaultProfileNames()))
}

// BenchmarkAllocatorView: a cold placement proof and verdict of the
// webhook benchmark's pod (trainerInput: several requests with prioritized
// alternatives, each with class and request selectors) on 1,000 nodes, the
// allocator reading the selector memo's answers on a view of each node
// (allocview) against the allocator evaluating every selector itself.
func BenchmarkAllocatorView(b *testing.B) {
	in := trainerInput(b)
	inv := inventoryFrom(fleetgen.Synthetic(1000))
	for _, view := range []bool{true, false} {
		name := "view"
		if !view {
			name = "full-selectors"
		}
		b.Run("nodes=1000/placement-and-verdict-cold/"+name, func(b *testing.B) {
			defer func(v bool) { viewSelectors = v }(viewSelectors)
			viewSelectors = view
			snap, err := NewSnapshot(inv, 1, DefaultFeatures())
			if err != nil {
				b.Fatal(err)
			}
			c := NewChecker(Options{CacheSize: -1, Timeout: time10s})
			c.Prepare(b.Context(), snap) // node classes and allocators, with or without views
			if view && !viewBuilds(b, snap, c, in) {
				b.Fatal("the allocator's view of the first node refuses the claims: the allocator evaluates its selectors itself")
			}
			for b.Loop() {
				ctx := ShareAnswers(b.Context())
				if p := c.Placement(ctx, snap, in); p.Cached || p.Translated == 0 {
					b.Fatalf("placement %+v, want nodes for the translation, not cached", p)
				}
				if v := c.Check(ctx, snap, in.Translated, in.Claims); v.Kind != FitsNow || v.Cached {
					b.Fatalf("verdict %s %q", v.Kind, v.Reasons)
				}
			}
		})
	}
}

// viewBuilds reports whether the first node's view writes in the answers
// for the claims (allocview.Build), so that the benchmark measures it.
func viewBuilds(b *testing.B, snap *Snapshot, c *Checker, in PlacementInput) bool {
	claims, err := upstream.DefaultClaims(in.Translated, in.Claims)
	if err != nil {
		b.Fatal(err)
	}
	cc := c.celCache(snap.features)
	al, err := snap.allocatorsFor(b.Context(), cc)
	if err != nil {
		b.Fatal(err)
	}
	v, ok := al.now.(*allocview.Allocator)
	if !ok {
		return false
	}
	slices, answer := v.Node(b.Context(), snap.nodes[0].node.Name)
	_, ok = allocview.Build(slices, claims, upstream.ClassLister(snap.classes), answer)
	return ok
}
