package feasibility

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
	"github.com/claimbridge/claimbridge/internal/testing/placementcorpus"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// countingAllocator counts the calls the view did not answer.
type countingAllocator struct {
	structured.Allocator
	calls int
}

func (c *countingAllocator) Allocate(ctx context.Context, node *corev1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	c.calls++
	return c.Allocator.Allocate(ctx, node, claims)
}

// allocAnswer is what an allocator said, comparable.
type allocAnswer struct {
	Results []resourceapi.AllocationResult
	Err     string
}

// anyShareID compares share IDs by presence: the allocator draws a new one
// for every allocation of a shared device.
var anyShareID = cmp.FilterPath(func(p cmp.Path) bool {
	return p.Last().String() == ".ShareID"
}, cmp.Comparer(func(a, b *types.UID) bool { return (a == nil) == (b == nil) }))

// compareViews asks the allocator over every slice and the one on each
// node's view, over the allocated state and over free devices, on every
// node of the snapshot, and reports any difference. It returns how many
// calls the view answered itself.
func compareViews(t *testing.T, snap *Snapshot, pod *corev1.Pod, specs []*resourceapi.ResourceClaimSpec) int {
	t.Helper()
	ctx := context.Background()
	claims, err := upstream.DefaultClaims(pod, specs)
	if err != nil {
		t.Fatal(err)
	}
	cc := NewChecker(Options{}).celCache(snap.features)
	lister := upstream.ClassLister(snap.classes)
	viewed := 0
	for _, free := range []bool{false, true} {
		st := snap.allocated
		if free {
			st = upstream.EmptyAllocatedState()
		}
		full, err := structured.NewAllocator(ctx, snap.features, st, lister, snap.slices, cc)
		if err != nil {
			t.Fatal(err)
		}
		counted := &countingAllocator{Allocator: full}
		view := snap.viewed(counted, free, lister, cc)
		for _, ni := range snap.nodes {
			var want, got allocAnswer
			res, err := full.Allocate(ctx, ni.node, claims)
			want.Results, want.Err = res, fmt.Sprint(err)
			before := counted.calls
			res, err = view.Allocate(ctx, ni.node, claims)
			got.Results, got.Err = res, fmt.Sprint(err)
			if counted.calls == before {
				viewed++
			}
			if diff := cmp.Diff(want, got, anyShareID); diff != "" {
				t.Errorf("node %s (free %v): the view's allocation differs from the allocator's over every slice (-want,+got):\n%s", ni.node.Name, free, diff)
			}
		}
	}
	return viewed
}

// TestViewAllocatesAsTheFullSlicesOnTheCorpus translates every pod of the
// placement corpus and asks each node of its fleet with and without the
// selectors' answers written in: the allocations and errors are the same.
func TestViewAllocatesAsTheFullSlicesOnTheCorpus(t *testing.T) {
	files, err := placementcorpus.Load("testdata/placement")
	if err != nil {
		t.Fatal(err)
	}
	viewed := 0
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f := files[name]
		inv, err := LoadInventory(filepath.Join("testdata/placement/fleets", f.Fleet))
		if err != nil {
			t.Fatal(err)
		}
		snap, err := NewSnapshot(inv, 1, DefaultFeatures())
		if err != nil {
			t.Fatal(err)
		}
		policy, err := f.CompilePolicy()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range f.Cases {
			res, err := translate.Pod(translate.Input{Pod: c.Pod, Policy: policy, Classes: inv.Classes})
			if err != nil || res.Outcome != reason.OutcomeTranslate {
				continue
			}
			t.Run(name+"/"+c.Name, func(t *testing.T) {
				viewed += compareViews(t, snap, res.Pod, []*resourceapi.ResourceClaimSpec{&res.Template.Spec.Spec})
			})
		}
	}
	if viewed == 0 {
		t.Errorf("the view answered no call: the comparison compared the allocator with itself")
	}
}

// oneAttributeApart is a fleet of DGX H100 nodes whose GPUs differ in one
// attribute: on each node, the GPUs at odd positions report another driver
// version, and on every third node two GPUs another product; some GPUs are
// allocated to a running claim.
func oneAttributeApart() *Inventory {
	f := fleetgen.Synthetic(12)
	for _, s := range f.Slices {
		if s.Spec.Driver != fleetgen.DriverGPU {
			continue
		}
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			if i%2 == 1 {
				d.Attributes["driverVersion"] = resourceapi.DeviceAttribute{VersionValue: new("535.0.0")}
			}
			if n := *s.Spec.NodeName; n[len(n)-1]%3 == 0 && i < 2 {
				d.Attributes["productName"] = resourceapi.DeviceAttribute{StringValue: new("NVIDIA H200")}
			}
		}
	}
	inv := inventoryFrom(f)
	inv.Claims = fleetgen.AllocateAll(fleetgen.Synthetic(1), fleetgen.DriverNIC, fleetgen.ClassNIC)
	return inv
}

func TestViewAllocatesAsTheFullSlicesOnDevicesOneAttributeApart(t *testing.T) {
	newer := `device.attributes["gpu.nvidia.com"].driverVersion.compareTo(semver("550.0.0")) >= 0`
	cases := map[string][]*resourceapi.ResourceClaimSpec{
		"newer driver, several GPUs": {makeClaim().Exactly("gpu", fleetgen.ClassGPU, 4, newer).Obj()},
		"newer driver and an H100 with its NIC on one PCIe root": {makeClaim().
			Exactly("gpu", fleetgen.ClassGPU, 1, newer, h100).Exactly("nic", fleetgen.ClassNIC, 1).
			MatchAttribute("resource.kubernetes.io/pcieRoot").Obj()},
		"prioritized: five newer, else two of any": {makeClaim().
			FirstAvailable("gpu", sub("newer", fleetgen.ClassGPU, 5, newer), sub("any", fleetgen.ClassGPU, 2)).Obj()},
		"every H100 of the node": {{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "all",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: fleetgen.ClassGPU, AllocationMode: resourceapi.DeviceAllocationModeAll, Selectors: celSelectors([]string{h100})}}}}}},
		"a product no device has":           {makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1, `device.attributes["gpu.nvidia.com"].productName == "NVIDIA B200"`).Obj()},
		"a selector that fails on the NICs": {makeClaim().Exactly("gpu", fleetgen.ClassNIC, 1, `device.attributes["gpu.nvidia.com"].productName == "x"`).Obj()},
		"two claims, one NIC each on one NUMA node": {
			makeClaim().Exactly("nic", fleetgen.ClassNIC, 1).Obj(),
			makeClaim().Exactly("gpu", fleetgen.ClassGPU, 2, newer).MatchAttribute("resource.kubernetes.io/numaNode").Obj(),
		},
	}
	snap, err := NewSnapshot(oneAttributeApart(), 1, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	viewed := 0
	for name, claims := range cases {
		t.Run(name, func(t *testing.T) {
			viewed += compareViews(t, snap, makePod("p", "ns").Obj(), claims)
		})
	}
	if viewed == 0 {
		t.Errorf("the view answered no call")
	}
}

// partitioned is one node whose GPU is published whole and as two halves
// sharing its memory counter, the whole GPU allocated to a running claim.
func partitioned() *Inventory {
	f := fleetgen.Synthetic(1)
	node := f.Nodes[0].Name
	device := func(name, kind string, memory string) resourceapi.Device {
		return resourceapi.Device{Name: name,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": {StringValue: new("gpu")}, "kind": {StringValue: new(kind)}},
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0",
				Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse(memory)}}}},
		}
	}
	// The counters in a slice of their own, as resource.k8s.io/v1 wants them.
	pool := resourceapi.ResourcePool{Name: node + "-partitioned", ResourceSliceCount: 2}
	counters := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-counters"},
		Spec: resourceapi.ResourceSliceSpec{Driver: fleetgen.DriverGPU, NodeName: new(node), Pool: pool,
			SharedCounters: []resourceapi.CounterSet{{Name: "gpu-0",
				Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("80Gi")}}}},
		},
	}
	slice := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-partitioned"},
		Spec: resourceapi.ResourceSliceSpec{Driver: fleetgen.DriverGPU, NodeName: new(node), Pool: pool,
			Devices: []resourceapi.Device{device("whole", "whole", "80Gi"), device("half-a", "half", "40Gi"), device("half-b", "half", "40Gi")},
		},
	}
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "busy", Name: "whole"}}
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		result("gpu", fleetgen.DriverGPU, slice.Spec.Pool.Name, "whole")}}}
	inv := inventoryFrom(f)
	inv.Slices = append(inv.Slices, counters, slice)
	inv.Claims = []*resourceapi.ResourceClaim{claim}
	return inv
}

func TestViewKeepsTheCountersOfAnAllocatedDeviceNoRequestMatches(t *testing.T) {
	snap, err := NewSnapshot(partitioned(), 1, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	half := makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1, `device.attributes["gpu.nvidia.com"].?kind.orValue("") == "half"`).Obj()
	if compareViews(t, snap, makePod("p", "ns").Obj(), []*resourceapi.ResourceClaimSpec{half}) == 0 {
		t.Errorf("the view answered no call")
	}
}
