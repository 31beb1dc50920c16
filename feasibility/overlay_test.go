package feasibility

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
)

// heldClaims holds one device of every step-th node (its first), and every
// device of the node after it, as allocated claims; a device that allows
// multiple allocations is held shared.
func heldClaims(snap *Snapshot, step int) []*resourceapi.ResourceClaim {
	var out []*resourceapi.ResourceClaim
	for i := 0; i < len(snap.nodes); i += step {
		for j, ni := range []*nodeInfo{snap.nodes[i], snap.nodes[min(i+1, len(snap.nodes)-1)]} {
			var results []resourceapi.DeviceRequestAllocationResult
			for _, d := range ni.devices {
				r := result("r", d.driver, d.pool, d.device.Name)
				if d.multi {
					r.ShareID = ptr.To(types.UID(fmt.Sprintf("share-%d", i)))
				}
				results = append(results, r)
				if j == 0 {
					break
				}
			}
			if len(results) == 0 {
				continue
			}
			out = append(out, &resourceapi.ResourceClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("held-%d-%d", i, j)},
				Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
					Devices: resourceapi.DeviceAllocationResult{Results: results},
				}},
			})
		}
	}
	return out
}

// snapshotState is what a check reads of a snapshot's nodes and classes.
type snapshotState struct {
	Nodes     []string
	Allocated []string
	Busy      []string
	Classes   map[string][]string
	Keys      []string
}

func stateOf(s *Snapshot) snapshotState {
	var memo classMemo
	st := snapshotState{Classes: map[string][]string{}}
	for i := range s.nodes {
		ni := s.nodeAt(i)
		st.Nodes = append(st.Nodes, ni.node.Name)
		if ni.busy {
			st.Busy = append(st.Busy, ni.node.Name)
		}
		for _, d := range ni.devices {
			if d.allocated {
				st.Allocated = append(st.Allocated, ni.node.Name+"/"+d.driver+"/"+d.pool+"/"+d.device.Name)
			}
		}
	}
	classes := s.nodeClassList(&memo)
	for i := range s.nodes {
		st.Keys = append(st.Keys, s.nodeAt(i).class())
	}
	for _, c := range classes {
		for _, m := range c.members {
			st.Classes[c.key] = append(st.Classes[c.key], m.node.Name+"="+m.class())
			if m.class() != c.key {
				st.Classes[c.key] = append(st.Classes[c.key], "member of another class: "+m.node.Name)
			}
		}
	}
	return st
}

// ignoreShareIDs: the allocator names each share of a shared device it
// allocates with a new random ShareID, so two searches that take the same
// shares differ in them.
var ignoreShareIDs = cmpopts.IgnoreFields(resourceapi.DeviceRequestAllocationResult{}, "ShareID")

func TestWithClaimsIsTheSnapshotOfTheClaimsAdded(t *testing.T) {
	fleets := append(fleetgen.Corpus(), fleetgen.Synthetic(24))
	for _, f := range fleets {
		t.Run(f.Name, func(t *testing.T) {
			inv := inventoryFrom(f)
			base, err := NewSnapshot(inv, 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			held := heldClaims(base, 3)
			first, second := held[:len(held)/2], held[len(held)/2:]
			withAll := *inv
			withAll.Claims = append(append(append([]*resourceapi.ResourceClaim{}, inv.Claims...), first...), second...)
			want, err := NewSnapshot(&withAll, 3, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			for name, got := range map[string]*Snapshot{
				"at once":    base.WithClaims(held, 3),
				"one by one": base.WithClaims(first, 2).WithClaims(second, 3),
			} {
				if diff := cmp.Diff(stateOf(want), stateOf(got)); diff != "" {
					t.Errorf("%s: snapshot state (-want,+got):\n%s", name, diff)
				}
				if diff := cmp.Diff(want.allocated, got.allocated); diff != "" {
					t.Errorf("%s: allocated state (-want,+got):\n%s", name, diff)
				}
				for ci, claims := range [][]*resourceapi.ResourceClaimSpec{alignedH100(), twoGPUsOneRoot(), missingProduct(),
					{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1).Obj()}, {makeClaim().Exactly("gpu", fleetgen.ClassGPU, 8).Obj()}} {
					// One worker: how many nodes a parallel search prunes before it stops varies.
					pod := makePod("p", "ns").Obj()
					wv := NewChecker(Options{CacheSize: -1, Timeout: time10s, Parallelism: 1}).Check(t.Context(), want, pod, claims)
					gv := NewChecker(Options{CacheSize: -1, Timeout: time10s, Parallelism: 1}).Check(t.Context(), got, pod, claims)
					if diff := cmp.Diff(wv, gv, ignoreShareIDs); diff != "" {
						t.Errorf("%s: claims %d: verdict (-want,+got):\n%s", name, ci, diff)
					}
				}
			}
			// The fleet snapshot is left as it was.
			if diff := cmp.Diff(stateOf(mustSnapshot(t, inv)), stateOf(base)); diff != "" {
				t.Errorf("the fleet snapshot changed (-want,+got):\n%s", diff)
			}
		})
	}
}

func mustSnapshot(t *testing.T, inv *Inventory) *Snapshot {
	t.Helper()
	s, err := NewSnapshot(inv, 1, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReplaceClaimsIsTheSnapshotOfTheNewClaims(t *testing.T) {
	fleets := append(fleetgen.Corpus(), fleetgen.Synthetic(24))
	for _, f := range fleets {
		t.Run(f.Name, func(t *testing.T) {
			inv := inventoryFrom(f)
			held := heldClaims(mustSnapshot(t, inv), 2)
			kept, dropped := held[:len(held)/2], held[len(held)/2:]
			before := *inv
			before.Claims = append(append([]*resourceapi.ResourceClaim{}, inv.Claims...), held...)
			base, err := NewSnapshot(&before, 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			// The dropped claims go, a new one holds a device of the
			// last node, and one kept claim moves to another device there.
			last := base.nodes[len(base.nodes)-1]
			if len(last.devices) == 0 {
				t.Skip("the last node has no devices")
			}
			var added []*resourceapi.ResourceClaim
			for _, d := range []deviceRef{last.devices[len(last.devices)-1], last.devices[0]} {
				added = append(added, &resourceapi.ResourceClaim{
					ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "added-" + d.device.Name},
					Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
						Results: []resourceapi.DeviceRequestAllocationResult{result("r", d.driver, d.pool, d.device.Name)},
					}}},
				})
			}
			moved := kept[0].DeepCopy()
			moved.Status.Allocation.Devices.Results = added[1].Status.Allocation.Devices.Results
			added = added[:1]
			after := *inv
			after.Claims = append(append(append(append([]*resourceapi.ResourceClaim{}, inv.Claims...), moved), kept[1:]...), added...)
			want, err := NewSnapshot(&after, 2, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			for name, got := range map[string]*Snapshot{
				"from the built snapshot": base.ReplaceClaims(after.Claims, 2),
				"from a derived snapshot": base.WithClaims(nil, 5).ReplaceClaims(after.Claims, 2),
				"then with a reservation": base.ReplaceClaims(after.Claims, 2).WithClaims(dropped[:1], 3),
			} {
				w := want
				if name == "then with a reservation" {
					full := after
					full.Claims = append(slices.Clone(after.Claims), dropped[:1]...)
					w = mustSnapshot(t, &full)
				}
				if diff := cmp.Diff(stateOf(w), stateOf(got)); diff != "" {
					t.Errorf("%s: snapshot state (-want,+got):\n%s", name, diff)
				}
				if diff := cmp.Diff(w.allocated, got.allocated); diff != "" {
					t.Errorf("%s: allocated state (-want,+got):\n%s", name, diff)
				}
				for ci, claims := range [][]*resourceapi.ResourceClaimSpec{alignedH100(), {makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1).Obj()}} {
					pod := makePod("p", "ns").Obj()
					wv := NewChecker(Options{CacheSize: -1, Timeout: time10s, Parallelism: 1}).Check(t.Context(), w, pod, claims)
					gv := NewChecker(Options{CacheSize: -1, Timeout: time10s, Parallelism: 1}).Check(t.Context(), got, pod, claims)
					if diff := cmp.Diff(wv, gv, ignoreShareIDs); diff != "" {
						t.Errorf("%s: claims %d: verdict (-want,+got):\n%s", name, ci, diff)
					}
				}
			}
		})
	}
}

// boundPod is a pod bound to node asking for cpu cores.
func boundPod(name, node, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
	}
}

type usage struct {
	Used  corev1.ResourceList
	Pods  int64
	Known bool
}

func usageOf(s *Snapshot) map[string]usage {
	out := map[string]usage{}
	for i := range s.nodes {
		ni := s.nodeAt(i)
		out[ni.node.Name] = usage{ni.used, ni.pods, ni.usageKnown}
	}
	return out
}

func TestReplacePodsIsTheSnapshotOfTheNewPods(t *testing.T) {
	f := fleetgen.Synthetic(12)
	inv := inventoryFrom(f)
	inv.PodsListed = true
	for i := range 8 {
		inv.Pods = append(inv.Pods, boundPod(fmt.Sprintf("p%d", i), f.Nodes[i].Name, "100"))
	}
	base := mustSnapshot(t, inv)
	held := heldClaims(base, 2)
	// p0 goes, p1 is replaced by a new object that finished, p8 is bound.
	finished := inv.Pods[1].DeepCopy()
	finished.Status.Phase = corev1.PodSucceeded
	pods := append([]*corev1.Pod{finished}, inv.Pods[2:]...)
	pods = append(pods, boundPod("p8", f.Nodes[9].Name, "150"), boundPod("p9", "gone", "1"))
	after := *inv
	after.Pods = pods
	after.Claims = held
	want := mustSnapshot(t, &after)
	for name, got := range map[string]*Snapshot{
		"pods, then claims":       base.ReplacePods(pods, 2).ReplaceClaims(held, 3),
		"claims, then pods":       base.ReplaceClaims(held, 2).ReplacePods(pods, 3),
		"reservations, then pods": base.WithClaims(held, 2).ReplacePods(pods, 3),
	} {
		if diff := cmp.Diff(usageOf(want), usageOf(got)); diff != "" {
			t.Errorf("%s: usage (-want,+got):\n%s", name, diff)
		}
		if diff := cmp.Diff(stateOf(want), stateOf(got)); diff != "" {
			t.Errorf("%s: snapshot state (-want,+got):\n%s", name, diff)
		}
		sameAnswers(t, name, want, got)
	}
	if diff := cmp.Diff(usageOf(mustSnapshot(t, inv)), usageOf(base)); diff != "" {
		t.Errorf("the fleet snapshot changed (-want,+got):\n%s", diff)
	}
}

// podsOn lists the pods bound to a node, as an index by node would.
func podsOn(pods []*corev1.Pod) func(node string) []*corev1.Pod {
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	return func(node string) []*corev1.Pod { return byNode[node] }
}

func TestUpdatePodsIsTheSnapshotOfTheNewPods(t *testing.T) {
	f := fleetgen.Synthetic(12)
	inv := inventoryFrom(f)
	inv.PodsListed = true
	for i := range 8 {
		inv.Pods = append(inv.Pods, boundPod(fmt.Sprintf("p%d", i), f.Nodes[i].Name, "100"))
	}
	inv.Pods = append(inv.Pods, boundPod("pending", "", "5"))
	base := mustSnapshot(t, inv)
	held := heldClaims(base, 2)
	node := func(i int) string { return f.Nodes[i].Name }
	// p0 is deleted, p1 is replaced by a new object that finished, p2
	// moves to the node of p3, p8 is bound to the node after p7's and p9
	// to a node the fleet does not have.
	finished := inv.Pods[1].DeepCopy()
	finished.Status.Phase = corev1.PodSucceeded
	moved := inv.Pods[2].DeepCopy()
	moved.Spec.NodeName = node(3)
	pods := append([]*corev1.Pod{finished, moved}, inv.Pods[3:]...)
	pods = append(pods, boundPod("p8", node(8), "150"), boundPod("p9", "gone", "1"))
	dirty := []string{node(0), node(1), node(2), node(3), node(8), "gone"}
	after := *inv
	after.Pods = pods
	after.Claims = held
	want := mustSnapshot(t, &after)
	// The same changes one event at a time, each naming the nodes it touches.
	steps := func(s *Snapshot) *Snapshot {
		cur := slices.Clone(inv.Pods)
		for gen, ev := range []struct {
			pods  []*corev1.Pod
			nodes []string
		}{
			{cur[1:], []string{node(0)}},
			{slices.Concat([]*corev1.Pod{finished}, cur[2:]), []string{node(1)}},
			{slices.Concat([]*corev1.Pod{finished, moved}, cur[3:]), []string{node(2), node(3)}},
			{pods, []string{node(8), "gone"}},
		} {
			s = s.UpdatePods(ev.nodes, podsOn(ev.pods), uint64(10+gen))
		}
		return s
	}
	for name, got := range map[string]*Snapshot{
		"pods, then claims":        base.UpdatePods(dirty, podsOn(pods), 2).ReplaceClaims(held, 3),
		"claims, then pods":        base.ReplaceClaims(held, 2).UpdatePods(dirty, podsOn(pods), 3),
		"reservations, then pods":  base.WithClaims(held, 2).UpdatePods(dirty, podsOn(pods), 3),
		"one event at a time":      steps(base).ReplaceClaims(held, 20),
		"pods, then all pods":      base.UpdatePods(dirty[:2], podsOn(pods), 2).ReplacePods(pods, 3).ReplaceClaims(held, 4),
		"nodes named twice, extra": base.UpdatePods(append(slices.Clone(dirty), node(3), node(11), ""), podsOn(pods), 2).ReplaceClaims(held, 3),
	} {
		if diff := cmp.Diff(usageOf(want), usageOf(got)); diff != "" {
			t.Errorf("%s: usage (-want,+got):\n%s", name, diff)
		}
		if diff := cmp.Diff(stateOf(want), stateOf(got)); diff != "" {
			t.Errorf("%s: snapshot state (-want,+got):\n%s", name, diff)
		}
		if diff := cmp.Diff(want.allocated, got.allocated); diff != "" {
			t.Errorf("%s: allocated state (-want,+got):\n%s", name, diff)
		}
		sameAnswers(t, name, want, got)
	}
	if diff := cmp.Diff(usageOf(mustSnapshot(t, inv)), usageOf(base)); diff != "" {
		t.Errorf("the fleet snapshot changed (-want,+got):\n%s", diff)
	}
}

// An inventory that does not list its pods knows the nodes' usage only
// while it has some: an update that removes the last pod, or adds the
// first, changes whether any usage is known.
func TestUpdatePodsOfPodsNotListed(t *testing.T) {
	f := fleetgen.Synthetic(6)
	node := func(i int) string { return f.Nodes[i].Name }
	p0, p1 := boundPod("p0", node(0), "100"), boundPod("p1", node(1), "100")
	for name, tc := range map[string]struct {
		before, after []*corev1.Pod
		nodes         []string
	}{
		"the first pod bound":   {nil, []*corev1.Pod{p0}, []string{node(0)}},
		"the last pod deleted":  {[]*corev1.Pod{p0}, nil, []string{node(0)}},
		"one pod of two bound":  {[]*corev1.Pod{p0}, []*corev1.Pod{p0, p1}, []string{node(1)}},
		"a pod moved":           {[]*corev1.Pod{p0}, []*corev1.Pod{boundPod("p0", node(2), "100")}, []string{node(0), node(2)}},
		"a pod of another node": {[]*corev1.Pod{p0, boundPod("pending", "", "1")}, []*corev1.Pod{boundPod("pending", "", "1")}, []string{node(0)}},
	} {
		t.Run(name, func(t *testing.T) {
			inv := inventoryFrom(f)
			inv.Pods = tc.before
			after := *inv
			after.Pods = tc.after
			want := mustSnapshot(t, &after)
			got := mustSnapshot(t, inv).UpdatePods(tc.nodes, podsOn(tc.after), 2)
			if diff := cmp.Diff(usageOf(want), usageOf(got)); diff != "" {
				t.Errorf("usage (-want,+got):\n%s", diff)
			}
		})
	}
}

// A snapshot whose updates copied more than half of the fleet's nodes says
// it is stale, and a new one from NewSnapshot is not.
func TestStaleAfterUpdatesOfMostNodes(t *testing.T) {
	inv := inventoryFrom(fleetgen.Synthetic(8))
	inv.PodsListed = true // no pod bound yet, every pod listed
	base := mustSnapshot(t, inv)
	s := base
	for i, ni := range base.nodes {
		if s.Stale() != (i > len(base.nodes)/2) {
			t.Fatalf("after %d nodes updated: stale = %v", i, s.Stale())
		}
		name := ni.node.Name
		s = s.UpdatePods([]string{name}, func(string) []*corev1.Pod { return []*corev1.Pod{boundPod("p-"+name, name, "1")} }, uint64(i+2))
	}
	if !s.Stale() || base.Stale() {
		t.Errorf("every node updated: stale = %v; the snapshot they were made from: stale = %v", s.Stale(), base.Stale())
	}
}

// sameAnswers: a pod asking for a GPU and 60 CPUs gets the same legacy fit
// and the same verdict from both snapshots.
func sameAnswers(t *testing.T, name string, want, got *Snapshot) {
	t.Helper()
	pod := boundPod("new", "", "60")
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	if diff := cmp.Diff(want.LegacyFitsNow(pod), got.LegacyFitsNow(pod)); diff != "" {
		t.Errorf("%s: legacy fit (-want,+got):\n%s", name, diff)
	}
	claims := []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1).Obj()}
	wv := NewChecker(Options{CacheSize: -1, Timeout: time10s, Parallelism: 1}).Check(t.Context(), want, pod, claims)
	gv := NewChecker(Options{CacheSize: -1, Timeout: time10s, Parallelism: 1}).Check(t.Context(), got, pod, claims)
	if diff := cmp.Diff(wv, gv, ignoreShareIDs); diff != "" {
		t.Errorf("%s: verdict (-want,+got):\n%s", name, diff)
	}
}
