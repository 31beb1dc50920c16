package identity

import (
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func str(s string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{StringValue: ptr.To(s)}
}

func gpu(uuid, bus, root string) resourceapi.Device {
	return resourceapi.Device{Name: "gpu", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"uuid": str(uuid), "resource.kubernetes.io/pciBusID": str(bus), "resource.kubernetes.io/pcieRoot": str(root),
		"productName": str("NVIDIA H100 80GB HBM3"),
	}}
}

func TestIs(t *testing.T) {
	for name, want := range map[resourceapi.QualifiedName]bool{
		"uuid": true, "gpu.nvidia.com/uuid": true, "resource.kubernetes.io/pciBusID": true, "dra.net/mac": true,
		"parentUUID": true, "productName": false, "resource.kubernetes.io/pcieRoot": false, "uuids": false, "uuid/x": false,
	} {
		if got := Is(name); got != want {
			t.Errorf("Is(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestSplitLookupMerged(t *testing.T) {
	d := gpu("GPU-1", "0000:1b:00.0", "pci0000:15")
	rest, ids := Split(d.Attributes)
	if len(rest) != 2 || len(ids) != 2 {
		t.Fatalf("split into %d attributes and %d identities, want 2 and 2", len(rest), len(ids))
	}
	if ids[0].Name != "resource.kubernetes.io/pciBusID" || ids[1].Name != "uuid" {
		t.Errorf("identities not sorted by name: %v, %v", ids[0].Name, ids[1].Name)
	}
	split := resourceapi.Device{Name: d.Name, Attributes: rest}
	for name, want := range d.Attributes {
		got, ok := Lookup(&split, ids, name)
		if !ok || *got.StringValue != *want.StringValue {
			t.Errorf("Lookup(%s) = %v, %v", name, got, ok)
		}
	}
	if _, ok := Lookup(&split, ids, "serial"); ok {
		t.Error("Lookup found an attribute the device does not have")
	}
	if diff := cmp.Diff(d.Attributes, Merged(&split, ids)); diff != "" {
		t.Errorf("Merged (-want,+got):\n%s", diff)
	}
	// A device with no identities is its own map, and split as it is.
	plain := resourceapi.Device{Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"productName": str("x")}}
	if r, ids := Split(plain.Attributes); len(ids) != 0 || len(r) != 1 {
		t.Errorf("a device with no identity split into %d and %d", len(r), len(ids))
	}
	if got := Merged(&plain, nil); len(got) != 1 {
		t.Errorf("Merged with no identity: %v", got)
	}
}

func slice(name string, devices ...resourceapi.Device) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.nvidia.com", Devices: devices}}
}

// splitSlice splits the devices of a copy of sl and registers it.
func splitSlice(sl *resourceapi.ResourceSlice) *resourceapi.ResourceSlice {
	c := sl.DeepCopy()
	ids := make(Devices, len(c.Spec.Devices))
	for i := range c.Spec.Devices {
		c.Spec.Devices[i].Attributes, ids[i] = Split(c.Spec.Devices[i].Attributes)
	}
	Register(c, ids)
	return c
}

func TestRegisteredSlicesReadWhole(t *testing.T) {
	a := slice("a", gpu("GPU-1", "0000:1b:00.0", "pci0000:15"), gpu("GPU-2", "0000:43:00.0", "pci0000:3e"))
	b := slice("b", resourceapi.Device{Name: "cpu"})
	sa := splitSlice(a)
	if Of(b) != nil {
		t.Error("a slice never registered has identities")
	}
	if got := Of(sa).At(1); len(got) != 2 || *got[1].Value.StringValue != "GPU-2" {
		t.Errorf("Of(split).At(1) = %v", got)
	}
	if got := Of(sa).At(5); got != nil {
		t.Errorf("At past the devices = %v", got)
	}
	whole := Whole([]*resourceapi.ResourceSlice{b, sa})
	if whole[0] != b {
		t.Error("Whole copied a slice that was not split")
	}
	if diff := cmp.Diff([]*resourceapi.ResourceSlice{b, a}, whole); diff != "" {
		t.Errorf("Whole (-want,+got):\n%s", diff)
	}
	if _, ok := sa.Spec.Devices[0].Attributes["uuid"]; ok {
		t.Error("Whole wrote into the split slice")
	}
	unsplit := []*resourceapi.ResourceSlice{a, b}
	if got := Whole(unsplit); &got[0] != &unsplit[0] {
		t.Error("Whole of slices none of which is split is not the same list")
	}
	dup := sa.DeepCopy()
	Copied(sa, dup)
	if diff := cmp.Diff(a, Whole([]*resourceapi.ResourceSlice{dup})[0]); diff != "" {
		t.Errorf("a copy registered with Copied, whole (-want,+got):\n%s", diff)
	}
}

func TestRegistrationGoesWithTheSlice(t *testing.T) {
	count := func() int {
		n := 0
		registry.Range(func(any, any) bool { n++; return true })
		return n
	}
	before := count()
	for i := range 100 {
		splitSlice(slice("s", gpu("GPU-"+string(rune('a'+i%26)), "0000:1b:00.0", "pci0000:15")))
	}
	if got := count(); got < before+100 {
		t.Fatalf("%d registrations after registering 100, want at least %d", got, before+100)
	}
	// The slices are unreachable: their cleanups delete their entries.
	deadline := time.Now().Add(10 * time.Second)
	for count() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d registrations left of slices collected", count()-before)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
