// Package identity keeps the per-device identities of a fleet's devices
// (UUIDs, PCI addresses, MACs) apart from the rest of their attributes.
//
// Every device differs from every other in its identities, and only in
// them: the GPUs of one model behind one PCIe root of every node of a shape
// publish the same product, memory, architecture, versions, root and NUMA
// node. A device whose identities are held apart can therefore share its
// attribute map with the same device of every other node, and a fleet holds
// one map per distinct device instead of one per device (the inventory's
// largest cost: a Kubernetes 1.37 DeviceAttribute is 128 bytes, so a GPU's
// eleven attributes take a 16-slot map of about 2.6 KB).
//
// A split slice is registered here with the identities of its devices
// (Register); its devices' attribute maps hold the rest. Every reader that
// needs a device's whole attributes asks for them: Lookup for one name,
// Merged for the map, Whole for slices as the API has them. A slice that
// was never split reads as it is. Registration lives as long as the slice:
// it is dropped when the slice is collected.
package identity

import (
	"maps"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	resourceapi "k8s.io/api/resource/v1"
)

// Names are the attributes (in any domain) that hold a per-device identity:
// only their pattern of equality between devices matters to a placement
// (matchAttribute compares equality; no translation compares them with a
// literal), and no two devices of a node share one.
var Names = map[string]bool{
	"uuid": true, "parentUUID": true, "serial": true, "mac": true, "rdmaDevice": true,
	"pciAddress": true, "pciAddr": true, "parentPciAddr": true, "pciBusID": true, "pcieBusID": true,
}

// Is reports whether the attribute name, qualified or not, is an identity.
func Is(name resourceapi.QualifiedName) bool {
	s := string(name)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return Names[s[i+1:]]
		}
	}
	return Names[s]
}

// Attribute is one identity attribute of a device.
type Attribute struct {
	Name  resourceapi.QualifiedName
	Value resourceapi.DeviceAttribute
}

// Devices holds, per device of a slice (by index), the identity attributes
// its attribute map leaves out; nil for a device that has none.
type Devices [][]Attribute

// Split returns the attributes that are not identities (attrs itself when
// it holds none) and the identities, sorted by name.
func Split(attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) (map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, []Attribute) {
	var ids []Attribute
	for name, a := range attrs {
		if Is(name) {
			ids = append(ids, Attribute{Name: name, Value: a})
		}
	}
	if len(ids) == 0 {
		return attrs, nil
	}
	rest := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(attrs)-len(ids))
	for name, a := range attrs {
		if !Is(name) {
			rest[name] = a
		}
	}
	sortAttributes(ids)
	return rest, ids
}

func sortAttributes(ids []Attribute) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j].Name < ids[j-1].Name; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
}

// Lookup returns the device's attribute of that name: from its map, or
// from its identities.
func Lookup(d *resourceapi.Device, ids []Attribute, name resourceapi.QualifiedName) (resourceapi.DeviceAttribute, bool) {
	if a, ok := d.Attributes[name]; ok {
		return a, true
	}
	for i := range ids {
		if ids[i].Name == name {
			return ids[i].Value, true
		}
	}
	return resourceapi.DeviceAttribute{}, false
}

// Merged returns the device's whole attribute map: its own map when it has
// no identities held apart, else a new one. The caller must not change it.
func Merged(d *resourceapi.Device, ids []Attribute) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	if len(ids) == 0 {
		return d.Attributes
	}
	out := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(d.Attributes)+len(ids))
	maps.Copy(out, d.Attributes)
	for _, a := range ids {
		out[a.Name] = a.Value
	}
	return out
}

// registry maps a split slice to its devices' identities; an entry goes
// when its slice is collected.
var registry sync.Map // weak.Pointer[resourceapi.ResourceSlice] → Devices

// registered: something was registered in this process. Until then Of
// answers without making a weak pointer (which gives the slice a handle
// for the rest of its life).
var registered atomic.Bool

// Register records the identities of the devices of sl, whose attribute
// maps leave them out. Registering nil (or no identity at all) records
// nothing.
func Register(sl *resourceapi.ResourceSlice, ids Devices) {
	if sl == nil || !hasAny(ids) {
		return
	}
	registered.Store(true)
	wp := weak.Make(sl)
	if _, loaded := registry.Swap(wp, ids); !loaded {
		runtime.AddCleanup(sl, func(wp weak.Pointer[resourceapi.ResourceSlice]) { registry.Delete(wp) }, wp)
	}
}

func hasAny(ids Devices) bool {
	for _, d := range ids {
		if len(d) > 0 {
			return true
		}
	}
	return false
}

// Of returns the identities held apart from the devices of sl, nil for a
// slice that was not split.
func Of(sl *resourceapi.ResourceSlice) Devices {
	if sl == nil || !registered.Load() {
		return nil
	}
	v, ok := registry.Load(weak.Make(sl))
	if !ok {
		return nil
	}
	return v.(Devices)
}

// At returns the identities of the device at index di.
func (ids Devices) At(di int) []Attribute {
	if di < len(ids) {
		return ids[di]
	}
	return nil
}

// Copied registers for a copy of sl (a DeepCopy, the same devices in the
// same order) the identities of sl.
func Copied(sl, dup *resourceapi.ResourceSlice) {
	Register(dup, Of(sl))
}

// Whole returns the slices as the API has them: a split slice is copied
// with every device's whole attribute map, the others are returned as they
// are. slices itself is returned when none is split.
func Whole(slices []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
	var out []*resourceapi.ResourceSlice
	for i, sl := range slices {
		ids := Of(sl)
		if ids == nil {
			if out != nil {
				out[i] = sl
			}
			continue
		}
		if out == nil {
			out = make([]*resourceapi.ResourceSlice, len(slices))
			copy(out, slices[:i])
		}
		c := *sl
		c.Spec.Devices = make([]resourceapi.Device, len(sl.Spec.Devices))
		for di := range sl.Spec.Devices {
			c.Spec.Devices[di] = sl.Spec.Devices[di]
			c.Spec.Devices[di].Attributes = Merged(&sl.Spec.Devices[di], ids.At(di))
		}
		out[i] = &c
	}
	if out == nil {
		return slices
	}
	return out
}
