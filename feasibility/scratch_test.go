package feasibility

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
)

// TestScratchIsTheSnapshotOfTheClaimsHeld: claims held one by one in a
// scratch give the snapshot WithClaims makes with all of them (nodes,
// allocations, classes, verdicts), and what each node has free; the
// snapshot the scratch was made from is left as it was.
func TestScratchIsTheSnapshotOfTheClaimsHeld(t *testing.T) {
	for _, f := range append(fleetgen.Corpus(), fleetgen.Synthetic(24)) {
		t.Run(f.Name, func(t *testing.T) {
			inv := inventoryFrom(f)
			base := mustSnapshot(t, inv)
			held := heldClaims(base, 3)
			x := base.Scratch(2)
			for i, c := range held {
				x.Hold(c, uint64(3+i))
			}
			got := x.Snapshot()
			want := base.WithClaims(held, 100)
			if g := got.Generation(); g != uint64(2+len(held)) {
				t.Errorf("generation %d after %d holds from 2, want %d", g, len(held), 2+len(held))
			}
			if diff := cmp.Diff(stateOf(want), stateOf(got)); diff != "" {
				t.Errorf("snapshot state (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(want.allocated, got.allocated); diff != "" {
				t.Errorf("allocated state (-want,+got):\n%s", diff)
			}
			for i := range want.nodes {
				ni := want.nodeAt(i)
				free := 0
				for _, d := range ni.devices {
					if !d.allocated || d.multi {
						free++
					}
				}
				if n := x.Free(ni.node.Name); n != free {
					t.Errorf("%s: %d devices free, want %d", ni.node.Name, n, free)
				}
			}
			if n := x.Free("no-such-node"); n != -1 {
				t.Errorf("a node the fleet lacks: %d free, want -1", n)
			}
			for ci, claims := range [][]*resourceapi.ResourceClaimSpec{alignedH100(), twoGPUsOneRoot(), missingProduct(),
				{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1).Obj()}, {makeClaim().Exactly("gpu", fleetgen.ClassGPU, 8).Obj()}} {
				pod := makePod("p", "ns").Obj()
				wv := NewChecker(Options{CacheSize: -1, Timeout: time10s, Parallelism: 1}).Check(t.Context(), want, pod, claims)
				gv := NewChecker(Options{CacheSize: -1, Timeout: time10s, Parallelism: 1}).Check(t.Context(), got, pod, claims)
				if diff := cmp.Diff(wv, gv, ignoreShareIDs); diff != "" {
					t.Errorf("claims %d: verdict (-want,+got):\n%s", ci, diff)
				}
			}
			if diff := cmp.Diff(stateOf(mustSnapshot(t, inv)), stateOf(base)); diff != "" {
				t.Errorf("the snapshot the scratch was made from changed (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestCandidatesAreTheNodesThatServeWhenFree: the nodes a pod's claims get
// devices on with every device free, even where all are held, best
// alternative first; none for a product nowhere.
func TestCandidatesAreTheNodesThatServeWhenFree(t *testing.T) {
	inv := inventoryFrom(fleetgen.Synthetic(8)) // 2 each of dgx-h100, a100-mig, l4, a100
	inv.Claims = fleetgen.AllocateAll(fleetgen.Fleet{Slices: inv.Slices}, gpu, fleetgen.ClassGPU)
	snap := mustSnapshot(t, inv)
	c := NewChecker(Options{Timeout: time10s})
	prefer := []*resourceapi.ResourceClaimSpec{makeClaim().FirstAvailable("gpu",
		sub("h100", fleetgen.ClassGPU, 1, h100), sub("l4", fleetgen.ClassGPU, 2, l4)).Obj()}
	got, err := c.Candidates(t.Context(), snap, makePod("p", "ns").Obj(), prefer)
	if err != nil {
		t.Fatal(err)
	}
	var want []Candidate
	for _, shape := range []struct {
		name  string
		score int64
	}{{"dgx-h100", 8}, {"l4", 7}} {
		for _, n := range inv.Nodes {
			if n.Labels["claimbridge.example/shape"] == shape.name {
				want = append(want, Candidate{Node: n.Name, Score: shape.score})
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("candidates (-want,+got):\n%s", diff)
	}
	none, err := c.Candidates(t.Context(), snap, makePod("p", "ns").Obj(), missingProduct())
	if err != nil || len(none) != 0 {
		t.Errorf("a product nowhere: candidates %v, error %v; want none", none, err)
	}
}

// TestNodeCheckRemembersAnswersThatHold: placing pods node after node on a
// scratch, a remembering NodeCheck answers as one that runs the allocator
// every time (the same verdict kind, as many devices for the same
// requests), and the devices it gives a node are the node's own and free.
func TestNodeCheckRemembersAnswersThatHold(t *testing.T) {
	inv := inventoryFrom(fleetgen.Synthetic(24))
	base := mustSnapshot(t, inv)
	c := NewChecker(Options{Timeout: time10s})
	pod := makePod("p", "ns").Obj()
	for name, claims := range map[string][]*resourceapi.ResourceClaimSpec{
		"one GPU":      {makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1).Obj()},
		"three GPUs":   {makeClaim().Exactly("gpu", fleetgen.ClassGPU, 3).Obj()},
		"aligned H100": alignedH100(),
		"H100 or L4": {makeClaim().FirstAvailable("gpu",
			sub("h100", fleetgen.ClassGPU, 2, h100), sub("l4", fleetgen.ClassGPU, 1, l4)).Obj()},
	} {
		t.Run(name, func(t *testing.T) {
			x := base.Scratch(2)
			gen := uint64(3)
			remembering := c.ForNodes(base, pod, claims).Remember()
			plain := c.ForNodes(base, pod, claims)
			placed := 0
			for range 3 { // every node, three times over: fills them
				for i := range base.nodes {
					node := base.nodes[i].node.Name
					want := plain.On(t.Context(), x.Snapshot(), node)
					got := remembering.On(t.Context(), x.Snapshot(), node)
					if got.Kind != want.Kind || got.Code != want.Code {
						t.Fatalf("%s: %s %s, want %s %s", node, got.Kind, got.Code, want.Kind, want.Code)
					}
					if got.Kind != FitsNow {
						continue
					}
					if diff := cmp.Diff(requests(want.Results), requests(got.Results)); diff != "" {
						t.Fatalf("%s: requests served (-want,+got):\n%s", node, diff)
					}
					ni := x.Snapshot().nodeAt(i)
					for _, r := range got.Results {
						k := slices.IndexFunc(ni.devices, func(d deviceRef) bool {
							return d.driver == r.Driver && d.pool == r.Pool && d.device.Name == r.Device
						})
						if k < 0 || ni.devices[k].allocated {
							t.Fatalf("%s: given %s/%s/%s, not a free device of the node", node, r.Driver, r.Pool, r.Device)
						}
					}
					x.Hold(&resourceapi.ResourceClaim{
						ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("placed-%d", placed)},
						Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
							Devices: resourceapi.DeviceAllocationResult{Results: got.Results},
						}},
					}, gen)
					gen++
					placed++
				}
			}
			if placed == 0 {
				t.Fatal("nothing placed: the test no longer fills nodes")
			}
			// The DGX nodes' CPU devices are allocatable more than once: what
			// those nodes answer is not carried to another.
			if len(remembering.answers) == 0 && name != "aligned H100" {
				t.Error("no answer remembered on a fleet of identical nodes")
			}
		})
	}
}

// requests lists the requests the results serve, sorted.
func requests(rs []resourceapi.DeviceRequestAllocationResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Request)
	}
	slices.Sort(out)
	return out
}
