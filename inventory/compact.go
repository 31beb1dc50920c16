package inventory

import (
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/feasibility/identity"
)

// The devices of the ResourceSlices as the informer keeps them: what a fleet
// repeats from device to device and node to node is held once.
//
//   - A device's identities (its UUID, PCI address, MAC: package
//     feasibility/identity) are held apart from its other attributes, and
//     devices whose other attributes are the same (the GPU behind one PCIe
//     root of every node of a shape) share one attribute map. Readers ask
//     identity for a device's whole attributes.
//   - Attribute and capacity names and string values are interned (package
//     unique): one copy of their bytes.
//   - A DeviceAttribute's value is a pointer: devices whose attribute holds
//     the same string, version, integer or boolean point to the same value.
//   - Devices with the same capacities (every GPU of a model, every MIG
//     device of a profile) share one capacity map.
//   - Pods and nodes whose resource lists are the same (a Deployment's
//     replicas' requests and limits, the capacity and allocatable of the
//     nodes of a shape) share one ResourceList.
//
// Informer objects are read-only (client-go's rule for what its caches
// hold), and here the rule also protects the other devices: writing through
// a shared value or into a shared map would change every device that holds
// it. A reader that needs to change a slice changes a copy of it that
// identity.Whole made, which owns its attribute maps (as feasibility does
// before it adds a DeviceTaintRule's taint to a device,
// upstream.ApplyTaintRules, registering the copy's identities).

// CompactSlice makes the devices of the slice share their attribute maps,
// values and capacity maps with the devices of every slice compacted
// before, and registers their identities. The slice must be the caller's
// own (a newly decoded object, or a DeepCopy): its devices' maps are
// replaced, not changed. The informers' transform compacts every slice it
// caches this way.
func CompactSlice(sl *resourceapi.ResourceSlice) {
	devices := sl.Spec.Devices
	var ids identity.Devices
	for i := range devices {
		d := &devices[i]
		d.Name = intern(d.Name)
		if len(d.Attributes) > 0 {
			rest, own := identity.Split(d.Attributes)
			for j := range own {
				own[j].Name = resourceapi.QualifiedName(intern(string(own[j].Name)))
			}
			if len(own) > 0 {
				if ids == nil {
					ids = make(identity.Devices, len(devices))
				}
				ids[i] = own
			}
			d.Attributes = sharedAttributes(rest)
		}
		if len(d.Capacity) > 0 {
			d.Capacity = sharedCapacity(d.Capacity)
		}
	}
	identity.Register(sl, ids)
}

// sharedAttributes returns the attribute map shared by the devices whose
// attributes (identities left out) are attrs's, with interned names and
// shared values.
func sharedAttributes(attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	if len(attrs) == 0 {
		return attrs
	}
	// The generated Marshal sorts map keys: equal maps encode alike.
	key, err := (&resourceapi.Device{Attributes: attrs}).Marshal()
	if err != nil {
		return ownAttributes(attrs)
	}
	return attributeMaps.get(string(key), func() map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
		return ownAttributes(attrs)
	})
}

// ownAttributes is a new map of attrs with interned names and shared
// values.
func ownAttributes(attrs map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	out := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(attrs))
	for k, a := range attrs {
		out[resourceapi.QualifiedName(intern(string(k)))] = sharedAttribute(a)
	}
	return out
}

// sharedAttribute returns a with its scalar value the one shared pointer
// to it, and the strings of a list value interned.
func sharedAttribute(a resourceapi.DeviceAttribute) resourceapi.DeviceAttribute {
	switch {
	case a.StringValue != nil:
		a.StringValue = sharedString(*a.StringValue)
	case a.VersionValue != nil:
		a.VersionValue = sharedString(*a.VersionValue)
	case a.IntValue != nil:
		a.IntValue = sharedInt(*a.IntValue)
	case a.BoolValue != nil:
		a.BoolValue = &bools[b2i(*a.BoolValue)]
	}
	for i, s := range a.StringValues {
		a.StringValues[i] = intern(s)
	}
	for i, s := range a.VersionValues {
		a.VersionValues[i] = intern(s)
	}
	return a
}

// sharedCapacity returns the capacity map shared by the devices whose
// capacities are c's (the same names, quantities and request policies, as
// their protobuf encoding says: the one kube-apiserver sent), with interned
// names.
func sharedCapacity(c map[resourceapi.QualifiedName]resourceapi.DeviceCapacity) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	// The generated Marshal sorts map keys: equal maps encode alike.
	key, err := (&resourceapi.Device{Capacity: c}).Marshal()
	if err != nil {
		return c
	}
	return capacities.get(string(key), func() map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
		out := make(map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, len(c))
		for k, v := range c {
			out[resourceapi.QualifiedName(intern(string(k)))] = v
		}
		return out
	})
}

// sharedResources returns the ResourceList shared by every pod and node
// whose list holds the same quantities (the same canonical value and
// format) under the same names; nil for nil.
func sharedResources(rl corev1.ResourceList) corev1.ResourceList {
	if rl == nil {
		return nil
	}
	var key []byte
	for _, name := range slices.Sorted(maps.Keys(rl)) {
		q := rl[name]
		key = append(append(key, name...), 0)
		key = append(append(key, q.String()...), 0)
		key = append(append(key, q.Format...), 0)
	}
	return resourceLists.get(string(key), func() corev1.ResourceList {
		out := make(corev1.ResourceList, len(rl))
		for k, v := range rl {
			out[corev1.ResourceName(intern(string(k)))] = v
		}
		return out
	})
}

var (
	// bools are the two values every BoolValue points to.
	bools = [2]bool{false, true}
	// stringValues holds the shared pointers of string and version values,
	// intValues those of integer values, capacities and attributeMaps the
	// shared capacity and attribute maps, resourceLists the shared resource
	// lists.
	stringValues  = newShareTable[string, *string](1 << 14)
	intValues     = newShareTable[int64, *int64](1 << 12)
	capacities    = newShareTable[string, map[resourceapi.QualifiedName]resourceapi.DeviceCapacity](1 << 12)
	attributeMaps = newShareTable[string, map[resourceapi.QualifiedName]resourceapi.DeviceAttribute](1 << 12)
	resourceLists = newShareTable[string, corev1.ResourceList](1 << 12)
)

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sharedString is the shared pointer to the string s (interned).
func sharedString(s string) *string {
	return stringValues.get(s, func() *string { return new(intern(s)) })
}

// sharedInt is the shared pointer to the integer i.
func sharedInt(i int64) *int64 {
	return intValues.get(i, func() *int64 { return new(i) })
}

// shareTable maps a value to its shared form. It holds at most 2×max
// entries in two generations: when the current one is full it becomes the
// previous one and the one before is dropped, so values that only one
// device holds (a GPU's uuid) pass through it, and those that many devices
// hold stay shared. What it drops stays correct (a device holds its own
// copy), only shared less.
type shareTable[K comparable, V any] struct {
	mu        sync.Mutex
	max       int
	cur, prev map[K]V
}

func newShareTable[K comparable, V any](max int) *shareTable[K, V] {
	return &shareTable[K, V]{max: max, cur: map[K]V{}}
}

// get returns the shared form of k, made by mk the first time.
func (t *shareTable[K, V]) get(k K, mk func() V) V {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.cur[k]; ok {
		return v
	}
	v, ok := t.prev[k]
	if !ok {
		v = mk()
	}
	if len(t.cur) >= t.max {
		t.prev, t.cur = t.cur, make(map[K]V, t.max)
	}
	t.cur[k] = v
	return v
}
