package feasibility_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/internal/testing/vendortruth"
)

// TestAMDCorpusFleetIsTheVendorsDevices: every device of the placement
// corpus's "amd" fleet is the AMD DRA driver's device as AMD published it
// (vendortruth amd-mi300x, amd-mi300x-cpx) but for its name and PCI bus
// ID, the vendor's bus ID among them; a node publishes whole GPUs or
// partitions, never both, and the partitions of one GPU (one bus ID) come
// eight together, as the driver publishes a GPU in CPX mode.
func TestAMDCorpusFleetIsTheVendorsDevices(t *testing.T) {
	inv, _ := snapshotOf(t, "amd")
	vendor := map[string]resourceapi.Device{}
	for _, m := range vendortruth.AMDModels {
		devs, ok, err := vendortruth.Devices("amd-" + m)
		if err != nil || !ok || len(devs) != 1 {
			t.Fatalf("vendortruth %s: %d devices, %v, %v", m, len(devs), ok, err)
		}
		vendor[*devs[0].Attributes["type"].StringValue] = devs[0]
	}
	const busID = "resource.kubernetes.io/pciBusID"
	seenBus := map[string]bool{}
	if len(inv.Slices) != 2 {
		t.Fatalf("%d slices, want one per node of the fleet", len(inv.Slices))
	}
	for _, s := range inv.Slices {
		types, perBus := map[string]int{}, map[string]int{}
		for _, d := range s.Spec.Devices {
			typ := *d.Attributes["type"].StringValue
			want, ok := vendor[typ]
			if !ok {
				t.Fatalf("%s/%s: type %s, which no vendor device has", s.Name, d.Name, typ)
			}
			types[typ]++
			bus := *d.Attributes[busID].StringValue
			perBus[bus]++
			seenBus[bus] = true
			got, w := d.DeepCopy(), want.DeepCopy()
			got.Name, w.Name = "", ""
			delete(got.Attributes, busID)
			delete(w.Attributes, busID)
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("%s/%s differs from the vendor's %s (-vendor,+fleet):\n%s", s.Name, d.Name, typ, diff)
			}
		}
		if len(types) != 1 {
			t.Errorf("%s publishes %v: want whole GPUs or partitions, never both", s.Name, types)
		}
		for bus, n := range perBus {
			if want := map[bool]int{true: 8, false: 1}[types["amdgpu-partition"] > 0]; n != want {
				t.Errorf("%s: %d devices on bus %s, want %d", s.Name, n, bus, want)
			}
		}
	}
	for typ, d := range vendor {
		if bus := *d.Attributes[busID].StringValue; !seenBus[bus] {
			t.Errorf("no %s device has the vendor's bus ID %s", typ, bus)
		}
	}
}
