package inventory

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/feasibility/identity"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
	"github.com/claimbridge/claimbridge/internal/testing/vendortruth"
)

// compacted returns what the informer keeps of each slice (transform), each
// from a protobuf round trip of it, as kube-apiserver sends it.
func compacted(t *testing.T, in []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
	t.Helper()
	out := make([]*resourceapi.ResourceSlice, len(in))
	for i, s := range in {
		b, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var decoded resourceapi.ResourceSlice
		if err := decoded.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		decoded.TypeMeta = s.TypeMeta // not in the protobuf encoding
		got, err := transform(&decoded)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = got.(*resourceapi.ResourceSlice)
	}
	return out
}

func vendorSlices(t *testing.T) []*resourceapi.ResourceSlice {
	t.Helper()
	var out []*resourceapi.ResourceSlice
	add := func(name string, devs []resourceapi.Device) {
		// Two nodes of each: what they share is what a fleet repeats.
		for _, node := range []string{"node-a", "node-b"} {
			out = append(out, &resourceapi.ResourceSlice{
				ObjectMeta: metav1.ObjectMeta{Name: node + "-" + name},
				Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: ptr.To(node),
					Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}, Devices: devs},
			})
		}
	}
	for _, m := range append(append([]string{}, vendortruth.Models...), "amd-mi300x", "amd-mi300x-cpx", "a100-shared") {
		devs, ok, err := vendortruth.Devices(m)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			add(m, devs)
		}
	}
	for _, m := range vendortruth.MIGModels {
		devs, err := vendortruth.DynamicMIG(m)
		if err != nil {
			t.Fatal(err)
		}
		add("dynamicmig-"+m, devs)
	}
	return out
}

// randomSlices are slices of devices with every kind of attribute value,
// capacities with and without request policies and the device fields
// besides them, drawn from small sets of values so that devices share
// some and differ in others.
func randomSlices(seed uint64, n int) []*resourceapi.ResourceSlice {
	r := rand.New(rand.NewPCG(seed, 0))
	pick := func(vals ...string) string { return vals[r.IntN(len(vals))] }
	attribute := func() resourceapi.DeviceAttribute {
		switch r.IntN(8) {
		case 0:
			return resourceapi.DeviceAttribute{StringValue: ptr.To(pick("Hopper", "Ampere", "", "gpu"))}
		case 1:
			return resourceapi.DeviceAttribute{StringValue: ptr.To(fmt.Sprintf("GPU-%08x", r.Uint32()))}
		case 2:
			return resourceapi.DeviceAttribute{VersionValue: ptr.To(pick("9.0.0", "12.4.0", "1.2.3-rc.1"))}
		case 3:
			return resourceapi.DeviceAttribute{IntValue: ptr.To(r.Int64N(2000) - 10)}
		case 4:
			return resourceapi.DeviceAttribute{BoolValue: ptr.To(r.IntN(2) == 1)}
		case 5:
			return resourceapi.DeviceAttribute{StringValues: []string{pick("a", "b"), pick("c", "d")}}
		case 6:
			return resourceapi.DeviceAttribute{IntValues: []int64{r.Int64N(4), r.Int64N(4)}, BoolValues: []bool{r.IntN(2) == 1}}
		default:
			return resourceapi.DeviceAttribute{VersionValues: []string{pick("1.0.0", "2.0.0")}}
		}
	}
	capacity := func() resourceapi.DeviceCapacity {
		c := resourceapi.DeviceCapacity{Value: resource.MustParse(pick("80Gi", "81559Mi", "1", "1000m", "40192Mi"))}
		if r.IntN(3) == 0 {
			c.RequestPolicy = &resourceapi.CapacityRequestPolicy{Default: ptr.To(resource.MustParse(pick("1Gi", "0"))),
				ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(resource.MustParse("1Mi")), Step: ptr.To(resource.MustParse(pick("1Mi", "1Gi")))}}
		}
		return c
	}
	var out []*resourceapi.ResourceSlice
	for si := range n {
		s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("slice-%d", si)},
			Spec: resourceapi.ResourceSliceSpec{Driver: pick("gpu.nvidia.com", "dra.net"), NodeName: ptr.To(fmt.Sprintf("node-%d", si%4)),
				Pool: resourceapi.ResourcePool{Name: fmt.Sprintf("pool-%d", si), ResourceSliceCount: 1}}}
		for di := range 1 + r.IntN(8) {
			d := resourceapi.Device{Name: fmt.Sprintf("dev-%d", di)}
			for range r.IntN(18) {
				if d.Attributes == nil {
					d.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
				}
				d.Attributes[resourceapi.QualifiedName(pick("type", "uuid", "numa", "dra.net/rdma", "resource.kubernetes.io/pcieRoot", fmt.Sprintf("a%d", r.IntN(20))))] = attribute()
			}
			for range r.IntN(4) {
				if d.Capacity == nil {
					d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
				}
				d.Capacity[resourceapi.QualifiedName(pick("memory", "shares", "multiprocessors"))] = capacity()
			}
			if r.IntN(4) == 0 {
				d.AllowMultipleAllocations = ptr.To(true)
				d.BindingConditions = []string{"attached"}
				d.Taints = []resourceapi.DeviceTaint{{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
				d.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: "gpu-0",
					Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("10Gi")}}}}
			}
			s.Spec.Devices = append(s.Spec.Devices, d)
		}
		out = append(out, s)
	}
	return out
}

func TestCompactedSlicesHoldTheSameFacts(t *testing.T) {
	cases := map[string][]*resourceapi.ResourceSlice{
		"the NVIDIA and AMD drivers' devices, on two nodes": vendorSlices(t),
		"a synthetic fleet of every shape":                  fleetgen.Synthetic(8).Slices,
	}
	for seed := range uint64(8) {
		cases[fmt.Sprintf("random devices, seed %d", seed)] = randomSlices(seed, 24)
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			want := make([]*resourceapi.ResourceSlice, len(in))
			for i, s := range in {
				want[i] = s.DeepCopy()
			}
			got := compacted(t, in)
			if diff := cmp.Diff(want, identity.Whole(got)); diff != "" {
				t.Errorf("compacted slices, whole (-want,+got):\n%s", diff)
			}
			for _, sl := range got {
				for _, d := range sl.Spec.Devices {
					for name := range d.Attributes {
						if identity.Is(name) {
							t.Errorf("%s/%s: the identity %s is in the device's map", sl.Name, d.Name, name)
						}
					}
				}
			}
			// Compacting the same again changes nothing either.
			if diff := cmp.Diff(want, identity.Whole(compacted(t, identity.Whole(got)))); diff != "" {
				t.Errorf("compacted twice (-want,+got):\n%s", diff)
			}
		})
	}
}

// mapID is the identity of a map: two devices that share one have the same.
func mapID(m any) uintptr { return reflect.ValueOf(m).Pointer() }

func TestCompactedDevicesShareWhatTheyRepeat(t *testing.T) {
	fleet := fleetgen.Synthetic(8)
	slices := compacted(t, fleet.Slices)
	// The GPUs of two DGX H100 nodes: one model behind the same PCIe roots.
	var dgx []*resourceapi.ResourceSlice
	for i, n := range fleet.Nodes {
		if n.Labels[fleetgen.SyntheticShapeLabel] != "dgx-h100" {
			continue
		}
		for j, s := range fleet.Slices {
			if *s.Spec.NodeName == n.Name && s.Spec.Driver == fleetgen.DriverGPU {
				dgx = append(dgx, slices[j])
			}
		}
		if len(dgx) == 2 {
			break
		}
		_ = i
	}
	if len(dgx) != 2 || len(dgx[0].Spec.Devices) < 2 || len(dgx[0].Spec.Devices) != len(dgx[1].Spec.Devices) {
		t.Fatalf("want the GPU slices of two DGX H100 nodes, got %d", len(dgx))
	}
	a, b := dgx[0].Spec.Devices, dgx[1].Spec.Devices
	ida, idb := identity.Of(dgx[0]), identity.Of(dgx[1])
	uuid := func(d *resourceapi.Device, ids []identity.Attribute) string {
		v, ok := identity.Lookup(d, ids, "uuid")
		if !ok || v.StringValue == nil {
			t.Fatalf("%s: no uuid", d.Name)
		}
		return *v.StringValue
	}
	// gpu-0 of one node and of the other: one map, two uuids.
	if mapID(a[0].Attributes) != mapID(b[0].Attributes) {
		t.Errorf("%s of two nodes of one shape: two attribute maps", a[0].Name)
	}
	if uuid(&a[0], ida.At(0)) == uuid(&b[0], idb.At(0)) {
		t.Errorf("%s of two nodes: one uuid", a[0].Name)
	}
	// Two GPUs of one node: behind two roots, two maps, and their values
	// and capacities shared.
	x, y := a[0], a[1]
	if mapID(x.Attributes) == mapID(y.Attributes) {
		t.Errorf("%s and %s share their attribute map: they differ in their PCIe root", x.Name, y.Name)
	}
	if x.Attributes["productName"].StringValue != y.Attributes["productName"].StringValue {
		t.Errorf("%s and %s: productName not one shared value", x.Name, y.Name)
	}
	if x.Attributes["cudaComputeCapability"].VersionValue != y.Attributes["cudaComputeCapability"].VersionValue {
		t.Errorf("%s and %s: cudaComputeCapability not one shared value", x.Name, y.Name)
	}
	if mapID(x.Capacity) != mapID(y.Capacity) {
		t.Errorf("%s and %s: the same capacities in two maps", x.Name, y.Name)
	}
	if uuid(&x, ida.At(0)) == uuid(&y, ida.At(1)) {
		t.Errorf("two GPUs' uuids are one value: %q", uuid(&x, ida.At(0)))
	}

	t.Run("pods and nodes that ask for and offer the same share their resource lists", func(t *testing.T) {
		pod := func(name string) *corev1.Pod {
			return builders.MakePod(name, "prod").Container("app").Request("cpu", "500m").Limit("nvidia.com/gpu", "1").Obj()
		}
		p, q := slimPod(pod("a")), slimPod(pod("b"))
		if mapID(p.Spec.Containers[0].Resources.Requests) != mapID(q.Spec.Containers[0].Resources.Requests) {
			t.Error("two pods' requests of 500m CPU are two lists")
		}
		fleet := fleetgen.Synthetic(8)
		n, m := slimNode(fleet.Nodes[0].DeepCopy()), slimNode(fleet.Nodes[4].DeepCopy())
		if diff := cmp.Diff(fleet.Nodes[0].Status.Allocatable, fleet.Nodes[4].Status.Allocatable); diff != "" {
			t.Fatalf("nodes 0 and 4 are not of one shape (-0,+4):\n%s", diff)
		}
		if mapID(n.Status.Allocatable) != mapID(m.Status.Allocatable) {
			t.Error("two nodes of one shape: their allocatable are two lists")
		}
	})
}

func TestSharedValuesDoNotLeakBetweenDevices(t *testing.T) {
	t.Run("a deep copy owns its values: changing it changes no other device", func(t *testing.T) {
		in := vendorSlices(t)
		slices := compacted(t, in)
		copied := slices[0].DeepCopy()
		d := &copied.Spec.Devices[0]
		for k, a := range d.Attributes {
			switch {
			case a.StringValue != nil:
				*a.StringValue += "-changed"
			case a.VersionValue != nil:
				*a.VersionValue = "0.0.1"
			case a.IntValue != nil:
				*a.IntValue++
			case a.BoolValue != nil:
				*a.BoolValue = !*a.BoolValue
			}
			d.Attributes[k] = a
		}
		for k := range d.Capacity {
			d.Capacity[k] = resourceapi.DeviceCapacity{Value: resource.MustParse("1")}
		}
		d.Capacity["added"] = resourceapi.DeviceCapacity{Value: resource.MustParse("2")}
		if diff := cmp.Diff(in, identity.Whole(slices)); diff != "" {
			t.Errorf("a change of a copy reached the compacted slices (-want,+got):\n%s", diff)
		}
	})

	t.Run("the snapshot, the checker and the summary write nothing into the slices they read", func(t *testing.T) {
		fleet := fleetgen.Synthetic(16)
		slices := compacted(t, fleet.Slices)
		// A rule taints every gpu-0: the snapshot copies the slices it
		// changes.
		rules := []*resourceapi.DeviceTaintRule{{ObjectMeta: metav1.ObjectMeta{Name: "gpu-0"}, Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Device: ptr.To("gpu-0")},
			Taint:          resourceapi.DeviceTaint{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule},
		}}}
		inv := &feasibility.Inventory{Nodes: fleet.Nodes, Slices: slices, Classes: fleet.Classes, Claims: fleet.Claims, TaintRules: rules, PodsListed: true}
		orig := *inv
		orig.Slices = fleet.Slices
		claims := [][]*resourceapi.ResourceClaimSpec{
			{exactly(fleetgen.ClassGPU, 1, `device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"`)},
			{exactly(fleetgen.ClassGPU, 8)},
			{exactly(fleetgen.ClassGPU, 2, `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`)},
			{exactly(fleetgen.ClassNIC, 1)},
			{exactly(fleetgen.ClassGPU, 1, `device.attributes["gpu.nvidia.com"].productName == "NVIDIA B200"`)},
			{exactly(fleetgen.ClassGPU, 9)},
			// What reads the identities the devices hold apart: a
			// selector on one GPU's uuid, two MIG devices of one GPU,
			// and two GPUs whose uuids differ.
			{exactly(fleetgen.ClassGPU, 1, fmt.Sprintf(`device.attributes["gpu.nvidia.com"].uuid == %q`, someUUID(t, fleet.Slices, 9)))},
			{exactly(fleetgen.ClassGPU, 1, `device.attributes["gpu.nvidia.com"].uuid.startsWith("GPU-") && device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"`)},
			{constrained(exactly(fleetgen.ClassMIG, 2), "gpu.nvidia.com/parentUUID")},
			{constrained(exactly(fleetgen.ClassMIG, 8), "gpu.nvidia.com/parentUUID")},
			{constrained(exactly(fleetgen.ClassGPU, 2), "gpu.nvidia.com/uuid")},
		}
		type answers struct {
			Summary  feasibility.Summary
			Verdicts []feasibility.Verdict
		}
		answer := func(inv *feasibility.Inventory) answers {
			snap, err := feasibility.NewSnapshot(inv, 1, feasibility.DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			// One worker: how many nodes a parallel search prunes varies.
			c := feasibility.NewChecker(feasibility.Options{CacheSize: -1, Timeout: 10 * time.Second, Parallelism: 1})
			out := answers{Summary: snap.Summary(t.Context())}
			for _, cl := range claims {
				out.Verdicts = append(out.Verdicts, c.Check(t.Context(), snap, builders.MakePod("p", "ns").Obj(), cl))
			}
			return out
		}
		want := answer(&orig)
		// The allocator names each share of a shared device it allocates
		// with a new random ShareID.
		if diff := cmp.Diff(want, answer(inv), cmpopts.IgnoreFields(resourceapi.DeviceRequestAllocationResult{}, "ShareID")); diff != "" {
			t.Errorf("verdicts on the compacted slices (-original,+compacted):\n%s", diff)
		}
		if diff := cmp.Diff(fleet.Slices, identity.Whole(slices)); diff != "" {
			t.Errorf("the compacted slices after the checks (-want,+got):\n%s", diff)
		}
	})
}

func exactly(class string, count int64, selectors ...string) *resourceapi.ResourceClaimSpec {
	req := &resourceapi.ExactDeviceRequest{DeviceClassName: class, Count: count}
	for _, s := range selectors {
		req.Selectors = append(req.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: s}})
	}
	return &resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "req", Exactly: req}}}}
}

// constrained adds to the claim a constraint that its devices match on the
// attribute.
func constrained(c *resourceapi.ResourceClaimSpec, attribute string) *resourceapi.ResourceClaimSpec {
	c.Devices.Constraints = append(c.Devices.Constraints, resourceapi.DeviceConstraint{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(attribute))})
	return c
}

// someUUID is the uuid of the n-th GPU that has one.
func someUUID(t *testing.T, slices []*resourceapi.ResourceSlice, n int) string {
	t.Helper()
	for _, sl := range slices {
		for _, d := range sl.Spec.Devices {
			if a, ok := d.Attributes["uuid"]; ok && a.StringValue != nil && strings.HasPrefix(*a.StringValue, "GPU-") {
				if n == 0 {
					return *a.StringValue
				}
				n--
			}
		}
	}
	t.Fatal("too few GPUs")
	return ""
}

func TestShareTableKeepsWhatIsRepeated(t *testing.T) {
	tab := newShareTable[string, *string](2)
	mk := func(s string) func() *string { return func() *string { return new(s) } }
	common := tab.get("common", mk("common"))
	for i := range 10 {
		u := fmt.Sprint("unique-", i)
		tab.get(u, mk(u))
		if got := tab.get("common", mk("common")); got != common {
			t.Fatalf("after %d unique values, the repeated value is a new pointer", i+1)
		}
		if n := len(tab.cur) + len(tab.prev); n > 4 {
			t.Fatalf("the table holds %d values, want at most 2×2", n)
		}
	}
	for i := range 4 {
		u := fmt.Sprint("more-", i)
		tab.get(u, mk(u))
	}
	// Dropped after more values than the table holds: a new pointer to
	// an equal value.
	if got := tab.get("common", mk("common")); got == common || *got != "common" {
		t.Errorf("after 4 more unique values: %p %q, want a new pointer to %q than %p", got, *got, "common", common)
	}
}
