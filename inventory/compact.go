package inventory

import (
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// The devices of the ResourceSlices as the informer keeps them: what a fleet
// repeats from device to device and node to node is held once.
//
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
// The attribute map itself stays one per device: a device's attributes
// differ from every other's in its identity (uuid, PCI address, MAC), and
// the allocator, the device index and the CEL environment read
// resourceapi.Device as the API defines it.
//
// Informer objects are read-only (client-go's rule for what its caches
// hold), and here the rule also protects the other devices: writing through
// a shared value or into a shared map would change every device that holds
// it. A reader that needs to change a slice changes a DeepCopy of it, which
// owns all of its values (as feasibility does before it adds a
// DeviceTaintRule's taint to a device, upstream.ApplyTaintRules).

// compactDevices makes the devices of one slice share their values and
// capacity maps with the devices of every slice compacted before. The
// devices must be the caller's own (a newly decoded object): their maps are
// replaced, not changed.
func compactDevices(devices []resourceapi.Device) {
	for i := range devices {
		d := &devices[i]
		d.Name = intern(d.Name)
		if len(d.Attributes) > 0 {
			attrs := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(d.Attributes))
			for k, a := range d.Attributes {
				attrs[resourceapi.QualifiedName(intern(string(k)))] = sharedAttribute(a)
			}
			d.Attributes = attrs
		}
		if len(d.Capacity) > 0 {
			d.Capacity = sharedCapacity(d.Capacity)
		}
	}
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
	// intValues those of integer values, capacities the shared capacity
	// maps, resourceLists the shared resource lists.
	stringValues  = newShareTable[string, *string](1 << 14)
	intValues     = newShareTable[int64, *int64](1 << 12)
	capacities    = newShareTable[string, map[resourceapi.QualifiedName]resourceapi.DeviceCapacity](1 << 12)
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
