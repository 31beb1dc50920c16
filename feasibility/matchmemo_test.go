package feasibility

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/feasibility/signature"
	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
	"github.com/claimbridge/claimbridge/translate"
)

// direct evaluates the expression on the device as the allocator does,
// without the memo.
func direct(ctx context.Context, cc *cel.Cache, expression string, d *deviceRef) uint8 {
	compiled := cc.GetOrCompile(expression)
	if compiled.Error != nil {
		return signature.MatchError
	}
	ok, _, err := compiled.DeviceMatches(ctx, cel.Device{Driver: d.driver, AllowMultipleAllocations: d.device.AllowMultipleAllocations, Attributes: d.device.Attributes, Capacity: d.device.Capacity})
	switch {
	case err != nil:
		return signature.MatchError
	case ok:
		return signature.MatchYes
	}
	return signature.MatchNo
}

// twinSnapshot is one node with two devices of one driver that differ in
// the attribute named differ alone (set on the second device to other).
func twinSnapshot(t *testing.T, differ resourceapi.QualifiedName, other resourceapi.DeviceAttribute) *Snapshot {
	t.Helper()
	base := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"productName":   {StringValue: ptr.To("NVIDIA H100 80GB HBM3")},
		"index":         {IntValue: ptr.To[int64](0)},
		"uuid":          {StringValue: ptr.To("GPU-0")},
		"driverVersion": {VersionValue: ptr.To("550.54.15")},
	}
	second := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
	for k, v := range base {
		second[k] = v
	}
	second[differ] = other
	capacity := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}}
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "node-0-gpu"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: "gpu.nvidia.com", NodeName: ptr.To("node-0"),
			Pool: resourceapi.ResourcePool{Name: "node-0", ResourceSliceCount: 1},
			Devices: []resourceapi.Device{
				{Name: "gpu-0", Attributes: base, Capacity: capacity},
				{Name: "gpu-1", Attributes: second, Capacity: capacity},
			},
		},
	}
	snap, err := NewSnapshot(&Inventory{Nodes: []*corev1.Node{node}, Slices: []*resourceapi.ResourceSlice{slice}}, 1, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestSelectorMemoDoesNotShareBetweenDevicesThatDifferInWhatItReads(t *testing.T) {
	cases := map[string]struct {
		differ     resourceapi.QualifiedName
		other      resourceapi.DeviceAttribute
		expression string
		want       [2]uint8
	}{
		"a selector reading an index tells the devices apart": {
			differ: "index", other: resourceapi.DeviceAttribute{IntValue: ptr.To[int64](1)},
			expression: `device.attributes["gpu.nvidia.com"].index == 1`,
			want:       [2]uint8{signature.MatchNo, signature.MatchYes},
		},
		"a selector reading a per-device identity tells the devices apart": {
			differ: "uuid", other: resourceapi.DeviceAttribute{StringValue: ptr.To("GPU-1")},
			expression: `device.attributes["gpu.nvidia.com"].uuid == "GPU-0"`,
			want:       [2]uint8{signature.MatchYes, signature.MatchNo},
		},
		"a selector reading a qualified name reads the driver's own attribute": {
			differ: "index", other: resourceapi.DeviceAttribute{IntValue: ptr.To[int64](1)},
			expression: `device.attributes["gpu.nvidia.com"].index > 0 && device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA")`,
			want:       [2]uint8{signature.MatchNo, signature.MatchYes},
		},
		"a selector iterating the attributes reads them all": {
			differ: "uuid", other: resourceapi.DeviceAttribute{StringValue: ptr.To("GPU-1")},
			expression: `device.attributes["gpu.nvidia.com"].exists(k, k == "uuid" && device.attributes["gpu.nvidia.com"][k] == "GPU-1")`,
			want:       [2]uint8{signature.MatchNo, signature.MatchYes},
		},
		"an attribute of another type fails the selector on its device only": {
			differ: "index", other: resourceapi.DeviceAttribute{StringValue: ptr.To("zero")},
			expression: `device.attributes["gpu.nvidia.com"].index < 1`,
			want:       [2]uint8{signature.MatchYes, signature.MatchError},
		},
		"a version that does not parse fails every selector, even one that does not read it": {
			differ: "driverVersion", other: resourceapi.DeviceAttribute{VersionValue: ptr.To("not-a-version")},
			expression: `device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"`,
			want:       [2]uint8{signature.MatchYes, signature.MatchError},
		},
		"the same attribute under its qualified name is no longer the same device": {
			differ: "gpu.nvidia.com/productName", other: resourceapi.DeviceAttribute{StringValue: ptr.To("NVIDIA L4")},
			expression: `device.attributes["gpu.nvidia.com"].index == 0`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			snap := twinSnapshot(t, tc.differ, tc.other)
			cc := NewChecker(Options{}).celCache(snap.features)
			devs := snap.nodes[0].devices
			if tc.want == [2]uint8{} {
				// CEL reads one of the two names by chance: what the
				// device answers is its own, never its twin's.
				if snap.selectorMemo().Sharable(devs[1].sig()) {
					t.Fatalf("device with two names of one attribute is sharable")
				}
				return
			}
			// Both orders: the first device evaluated must not answer for the second.
			for _, order := range [][2]int{{0, 1}, {1, 0}} {
				memo := signature.NewMemo(snap.selectorMemo().Slots())
				e := memo.Expr(cc, tc.expression)
				var got [2]uint8
				for _, i := range order {
					got[i] = e.Match(t.Context(), memo, devs[i].sig())
				}
				// And again, from the slots.
				for _, i := range order {
					if again := e.Match(t.Context(), memo, devs[i].sig()); again != got[i] {
						t.Errorf("order %v, device %d: %d, then %d", order, i, got[i], again)
					}
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("order %v: answers (-want,+got):\n%s", order, diff)
				}
				for i := range devs {
					if want := direct(t.Context(), cc, tc.expression, &devs[i]); got[i] != want {
						t.Errorf("order %v, device %d: memo %d, direct %d", order, i, got[i], want)
					}
				}
			}
		})
	}
}

// probeSelectors read the fleets' devices in the ways claims do: literal
// attributes, identities, capacities, missing attributes, iteration.
var probeSelectors = []string{
	h100, a100, l4,
	`device.driver == "gpu.nvidia.com"`,
	`device.attributes["gpu.nvidia.com"].index == 0`,
	`device.attributes["gpu.nvidia.com"].uuid.endsWith("0")`,
	`has(device.attributes["gpu.nvidia.com"].profile) && device.attributes["gpu.nvidia.com"].profile == "1g.10gb"`,
	`device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`,
	`device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:00"`,
	`device.attributes["dra.net"].rdma`,
	`"gpu.nvidia.com" in device.attributes`,
	`device.attributes["gpu.nvidia.com"].exists(k, k == "productName")`,
	`device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("500.0.0"))`,
	`device.allowMultipleAllocations`,
}

// TestSelectorMemoAgreesWithEvaluationOverTheFleets evaluates the classes'
// selectors and the probes on every device of the shipped, corpus and
// synthetic fleets, with the memo (in name order and backwards, twice) and
// without it: the answers must be the same.
func TestSelectorMemoAgreesWithEvaluationOverTheFleets(t *testing.T) {
	fleets := slices.Concat(fleetgen.Shipped(), fleetgen.Corpus(), []fleetgen.Fleet{fleetgen.Synthetic(8)})
	for _, f := range fleets {
		t.Run(f.Name, func(t *testing.T) {
			snap, err := NewSnapshot(inventoryFrom(f), 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			cc := NewChecker(Options{}).celCache(snap.features)
			exprs := slices.Clone(probeSelectors)
			for _, c := range f.Classes {
				for _, s := range c.Spec.Selectors {
					if s.CEL != nil {
						exprs = append(exprs, s.CEL.Expression)
					}
				}
			}
			var devs []*deviceRef
			for _, ni := range snap.nodes {
				for i := range ni.devices {
					devs = append(devs, &ni.devices[i])
				}
			}
			if len(devs) == 0 {
				t.Skip("no DRA devices")
			}
			wants := make([]map[*deviceRef]uint8, len(exprs))
			for i, expression := range exprs {
				wants[i] = map[*deviceRef]uint8{}
				for _, d := range devs {
					wants[i][d] = direct(t.Context(), cc, expression, d)
				}
			}
			for _, backwards := range []bool{false, true} {
				memo := signature.NewMemo(snap.selectorMemo().Slots())
				order := slices.Clone(devs)
				if backwards {
					slices.Reverse(order)
				}
				for i, expression := range exprs {
					e := memo.Expr(cc, expression)
					for pass := range 2 {
						for _, d := range order {
							want := wants[i][d]
							if got := e.Match(t.Context(), memo, d.sig()); got != want {
								t.Errorf("%s (pass %d, backwards %v) on %s/%s/%s: memo %d, direct %d",
									expression, pass, backwards, d.driver, d.pool, d.device.Name, got, want)
							}
						}
					}
				}
			}
		})
	}
}

func TestSelectorMemoForgetsAnEvaluationCutShort(t *testing.T) {
	snap := twinSnapshot(t, "index", resourceapi.DeviceAttribute{IntValue: ptr.To[int64](1)})
	cc := NewChecker(Options{}).celCache(snap.features)
	memo := snap.selectorMemo()
	// A comprehension long enough for CEL to look at the context (every
	// hundred iterations).
	list := "[" + strings.Repeat("1, ", 39) + "1]"
	expression := list + `.all(x, ` + list + `.all(y, x * y > 0)) && device.attributes["gpu.nvidia.com"].index == 0`
	e := memo.Expr(cc, expression)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	d := &snap.nodes[0].devices[0]
	if got := e.Match(ctx, memo, d.sig()); got != signature.MatchError {
		t.Fatalf("with a cancelled context: %d, want %d", got, signature.MatchError)
	}
	if got := e.Match(t.Context(), memo, d.sig()); got != signature.MatchYes {
		t.Errorf("after a cancelled evaluation: %d, want %d", got, signature.MatchYes)
	}
}

// TestSharedAnswersGiveTheVerdictsOfTheAllocator checks pods of the
// synthetic fleet (one that fits, one the allocator rejects, one the index
// rejects) with the placement proof first and the verdict after it, sharing
// answers as a decision does, on the fleet with every device free and with
// the GPUs of its first two nodes held: every verdict is the one a check
// without shared answers gives. On the free fleet, the verdict of the pod
// that fits takes the proof's answer on the first node instead of asking
// the allocator again.
func TestSharedAnswersGiveTheVerdictsOfTheAllocator(t *testing.T) {
	f := fleetgen.Synthetic(16)
	free, err := NewSnapshot(inventoryFrom(f), 1, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	f.Claims = fleetgen.AllocateAll(f, fleetgen.DriverGPU, fleetgen.ClassGPU)[:2]
	held, err := NewSnapshot(inventoryFrom(f), 2, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	for name, claims := range map[string][]*resourceapi.ResourceClaimSpec{
		"one H100 and its NIC":      alignedH100(),
		"two H100 on one PCIe root": twoGPUsOneRoot(),
		"a product nowhere":         missingProduct(),
	} {
		for fleet, snap := range map[string]*Snapshot{"free": free, "held": held} {
			t.Run(name+"/"+fleet, func(t *testing.T) {
				pod := makePod("p", "ns").Obj()
				want := NewChecker(Options{CacheSize: -1}).Check(t.Context(), snap, pod, claims)
				c := NewChecker(Options{CacheSize: -1})
				ctx := ShareAnswers(t.Context())
				c.Placement(ctx, snap, PlacementInput{Policy: &translate.Policy{}, Legacy: pod, Translated: pod, Claims: claims})
				asked := len(answersOf(ctx).m)
				got := c.Check(ctx, snap, pod, claims)
				// How many nodes a search that fits pruned before its
				// workers stopped depends on their timing.
				var opts []cmp.Option
				if want.Kind == FitsNow {
					opts = append(opts, cmpopts.IgnoreFields(Verdict{}, "NodesPruned"))
				}
				if diff := cmp.Diff(want, got, opts...); diff != "" {
					t.Errorf("verdict with shared answers (-want,+got):\n%s", diff)
				}
				if name == "one H100 and its NIC" && fleet == "free" {
					shared := answersOf(ctx)
					if got.Kind != FitsNow || asked == 0 || shared.hits == 0 || len(shared.m) != asked {
						t.Errorf("verdict %s; the proof kept %d answers, %d after the verdict, %d taken: want the verdict to take one and ask nothing new",
							got.Kind, asked, len(shared.m), shared.hits)
					}
				}
			})
		}
	}
}

// TestClosenessByClassIsEachNodesOwn ranks every node of the shipped and
// corpus fleets for claims whose selectors read no identity, once per node
// class (as reasons do) and node by node: the ranks are the same.
func TestClosenessByClassIsEachNodesOwn(t *testing.T) {
	specs := map[string][]*resourceapi.ResourceClaimSpec{
		"one H100 and its NIC":      alignedH100(),
		"two H100 on one PCIe root": twoGPUsOneRoot(),
		"a product nowhere":         missingProduct(),
		"an L4 or an A100": {makeClaim().FirstAvailable("gpu",
			sub("l4", fleetgen.ClassGPU, 1, l4), sub("a100", fleetgen.ClassGPU, 2, a100)).Obj()},
		"a MIG slice": {makeClaim().Exactly("mig", fleetgen.ClassMIG, 1).Obj()},
	}
	for _, f := range slices.Concat(fleetgen.Shipped(), fleetgen.Corpus()) {
		snap, err := NewSnapshot(inventoryFrom(f), 1, DefaultFeatures())
		if err != nil {
			t.Fatal(err)
		}
		c := NewChecker(Options{})
		snap.nodeClassList(&c.classes)
		for name, spec := range specs {
			claims, err := upstream.DefaultClaims(makePod("p", "ns").Obj(), spec)
			if err != nil {
				t.Fatal(err)
			}
			p, reasons := c.plan(snap, c.celCache(snap.features), claims)
			if len(reasons) > 0 {
				continue // a class the fleet lacks
			}
			if !p.byClass {
				t.Fatalf("%s: the selectors read no identity, yet the plan ranks node by node", name)
			}
			byNode, _ := c.plan(snap, c.celCache(snap.features), claims)
			byNode.byClass = false
			required := nodeaffinity.GetRequiredNodeAffinity(makePod("p", "ns").Obj())
			classRank := p.ranker(t.Context(), snap, required)
			nodeRank := byNode.ranker(t.Context(), snap, required)
			for _, ni := range snap.nodes {
				if got, want := classRank(ni.node.Name), nodeRank(ni.node.Name); got != want {
					t.Errorf("%s, %s, node %s: rank %d by class, %d by node", f.Name, name, ni.node.Name, got, want)
				}
			}
		}
	}
}

func TestPlanReadingAnIdentityRanksNodeByNode(t *testing.T) {
	snap, err := NewSnapshot(inventoryFrom(fleetgen.Synthetic(4)), 1, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	c := NewChecker(Options{})
	claims, err := upstream.DefaultClaims(makePod("p", "ns").Obj(), []*resourceapi.ResourceClaimSpec{
		makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1, `device.attributes["gpu.nvidia.com"].uuid != ""`).Obj()})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := c.plan(snap, c.celCache(snap.features), claims); p.byClass {
		t.Errorf("a selector reading a UUID is ranked by class")
	}
}
