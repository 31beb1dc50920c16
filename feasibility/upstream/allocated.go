package upstream

import (
	"maps"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// The allocated state as kube-scheduler collects it from the claims, and
// the DeviceClasses as the allocator lists them.

// AllocatedState collects the devices of allocated claims following kube-scheduler's
// foreachAllocatedDevice: results with adminAccess do not count; with consumable capacity a
// result with a ShareID is a shared allocation (its consumed capacity aggregated per device),
// otherwise the device is allocated exclusively. Without consumable capacity every result is
// exclusive.
func AllocatedState(claims []*resourceapi.ResourceClaim, features structured.Features) structured.AllocatedState {
	st := EmptyAllocatedState()
	AddAllocations(&st, claims, features)
	return st
}

// WithAllocations is st with the allocations of claims added, st left as
// it is: its sets are copied (maps.Clone, not rebuilt from the claims st
// stands for), and a device's aggregated capacity is copied before it
// grows. It costs the size of st's sets, not the results of its claims.
func WithAllocations(st structured.AllocatedState, claims []*resourceapi.ResourceClaim, features structured.Features) structured.AllocatedState {
	out := structured.AllocatedState{
		AllocatedDevices:         maps.Clone(st.AllocatedDevices),
		AllocatedSharedDeviceIDs: maps.Clone(st.AllocatedSharedDeviceIDs),
		AggregatedCapacity:       maps.Clone(st.AggregatedCapacity),
	}
	for _, claim := range claims {
		if claim == nil || claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if features.ConsumableCapacity && r.ShareID != nil && r.ConsumedCapacity != nil {
				id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
				if have, ok := out.AggregatedCapacity[id]; ok {
					out.AggregatedCapacity[id] = have.Clone() // st's stays as it was
				}
			}
		}
	}
	AddAllocations(&out, claims, features)
	return out
}

// AddAllocations adds the devices of allocated claims to st.
func AddAllocations(st *structured.AllocatedState, claims []*resourceapi.ResourceClaim, features structured.Features) {
	for _, claim := range claims {
		if claim == nil || claim.Status.Allocation == nil {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if ptr.Deref(r.AdminAccess, false) {
				continue
			}
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if features.ConsumableCapacity && r.ShareID != nil {
				st.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
				if r.ConsumedCapacity != nil {
					st.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
				}
				continue
			}
			st.AllocatedDevices.Insert(id)
		}
	}
}

func EmptyAllocatedState() structured.AllocatedState {
	return structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
}

// ClassLister serves DeviceClasses from a map (structured.DeviceClassLister).
type ClassLister map[string]*resourceapi.DeviceClass

func (l ClassLister) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(l))
	for _, name := range slices.Sorted(maps.Keys(l)) {
		out = append(out, l[name])
	}
	return out, nil
}

func (l ClassLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l[name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

// SharedDevices are the devices the allocated state holds shared.
func SharedDevices(st structured.AllocatedState) sets.Set[structured.DeviceID] {
	shared := sets.New[structured.DeviceID]()
	for id := range st.AllocatedSharedDeviceIDs {
		shared.Insert(id.GetDeviceID())
	}
	for id := range st.AggregatedCapacity {
		shared.Insert(id)
	}
	return shared
}
