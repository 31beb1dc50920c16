// Package staticinventory is an inventory of objects listed once, for the
// admission handler's tests and e2e/bench: what the informer-backed
// inventory.Inventory answers from its caches, it answers from lists.
package staticinventory

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/podfacts"
)

// StaticInventory answers from objects listed once.
type StaticInventory struct {
	Fleet      *feasibility.Inventory
	Namespaces map[string]*corev1.Namespace
	QuotaList  []*corev1.ResourceQuota
	Existing   []*resourceapi.ResourceClaimTemplate
	Features   feasibility.Features
	// Reservations, when set, count in every snapshot, which is then
	// rebuilt whenever they change (as the live Inventory's), and TakeOver
	// and Reserve hold devices in them.
	Reservations *inventory.Reservations
	// Pending are the translated pods waiting for their claims that
	// another replica admitted (TakeOver takes them over).
	Pending []*corev1.Pod
	// DevicePluginHolds, when set, count the pods HoldDevicePlugin held
	// (none are ever seen: the list does not change).
	DevicePluginHolds *inventory.DevicePluginHolds

	once sync.Once
	snap *feasibility.Snapshot
	err  error

	mu      sync.Mutex
	resSnap *feasibility.Snapshot
	resVer  uint64
	resGen  uint64
}

// NamespaceMode implements InventoryReader.
func (s *StaticInventory) NamespaceMode(name string) (api.Mode, bool) {
	ns, ok := s.Namespaces[name]
	if !ok {
		return api.ModeOff, false
	}
	return inventory.ModeOf(ns), true
}

// Classes implements InventoryReader.
func (s *StaticInventory) Classes() []*resourceapi.DeviceClass {
	if s.Fleet == nil {
		return nil
	}
	return s.Fleet.Classes
}

// Quotas implements InventoryReader.
func (s *StaticInventory) Quotas(namespace string) []*corev1.ResourceQuota {
	var out []*corev1.ResourceQuota
	for _, q := range s.QuotaList {
		if q.Namespace == namespace {
			out = append(out, q)
		}
	}
	return out
}

// Snapshot implements InventoryReader; it is built once.
func (s *StaticInventory) Snapshot(now time.Time) (*feasibility.Snapshot, error) {
	if s.Reservations != nil && s.Fleet != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		claims := s.Reservations.Claims(now, s.Allocations())
		if v := s.Reservations.Version(); s.resSnap == nil || v != s.resVer {
			fleet := *s.Fleet
			fleet.Claims = append(slices.Clone(fleet.Claims), claims...)
			s.resGen++
			snap, err := feasibility.NewSnapshot(&fleet, s.resGen, s.Features)
			if err != nil {
				return nil, err
			}
			s.resSnap, s.resVer = snap, v
		}
		return s.resSnap, nil
	}
	s.once.Do(func() {
		if s.Fleet == nil {
			s.err = inventory.ErrNotSynced
			return
		}
		s.snap, s.err = feasibility.NewSnapshot(s.Fleet, 1, s.Features)
	})
	return s.snap, s.err
}

// Allocations are those of the fleet's claims.
func (s *StaticInventory) Allocations() inventory.Allocations {
	if s.Fleet == nil {
		return nil
	}
	a := claimAllocations{devices: map[string]bool{}, owners: map[types.UID]bool{}}
	for _, c := range s.Fleet.Claims {
		for _, k := range inventory.AllocatedDevices(c) {
			a.devices[k] = true
		}
		for _, uid := range inventory.AllocatedOwners(c) {
			a.owners[uid] = true
		}
	}
	return a
}

// claimAllocations answers from a list of claims.
type claimAllocations struct {
	devices map[string]bool
	owners  map[types.UID]bool
}

func (a claimAllocations) DeviceAllocated(key string) bool      { return a.devices[key] }
func (a claimAllocations) PodClaimAllocated(uid types.UID) bool { return a.owners[uid] }

// PendingTranslatedWhere lists the Pending pods keep keeps, in creation
// order.
func (s *StaticInventory) PendingTranslatedWhere(keep func(*corev1.Pod) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range s.Pending {
		if keep == nil || keep(p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return out
}

// TakeOver implements the handler's DeviceHolder with the Reservations.
func (s *StaticInventory) TakeOver(ctx context.Context, checker *feasibility.Checker, now time.Time) int {
	return s.Reservations.TakeOver(ctx, s, checker, now)
}

// Reserve implements the handler's DeviceHolder with the Reservations.
func (s *StaticInventory) Reserve(id string, checked *corev1.Pod, claims []*resourceapi.ResourceClaimSpec, v feasibility.Verdict, now time.Time) {
	s.Reservations.Reserve(id, checked, claims, v, now)
}

// HoldDevicePlugin implements the handler's DeviceHolder with the
// DevicePluginHolds.
func (s *StaticInventory) HoldDevicePlugin(id string, pod *corev1.Pod, now time.Time) {
	if s.DevicePluginHolds != nil {
		s.DevicePluginHolds.Hold(id, pod, now)
	}
}

// DevicePluginPods implements the handler's DeviceHolder: the held pods,
// after the fleet's pods that are not bound and ask for an extended
// resource; the bound pods are the snapshot's (podsOn nil).
func (s *StaticInventory) DevicePluginPods(now time.Time) (waiting []*corev1.Pod, podsOn func(string) []*corev1.Pod) {
	var out []*corev1.Pod
	if s.Fleet != nil {
		for _, p := range s.Fleet.Pods {
			if p.Spec.NodeName == "" && !inventory.PodGone(p) && podfacts.NamesExtended(p) {
				out = append(out, p)
			}
		}
	}
	if s.DevicePluginHolds != nil {
		out = append(out, s.DevicePluginHolds.Pods(now)...)
	}
	return out, nil
}

// WhenDRABusy implements InventoryReader.
func (s *StaticInventory) WhenDRABusy(name string) v1alpha1.WhenDRABusy {
	if ns, ok := s.Namespaces[name]; ok {
		return inventory.WhenDRABusyOf(ns)
	}
	return ""
}

// OnUnservable implements InventoryReader.
func (s *StaticInventory) OnUnservable(name string) v1alpha1.OnUnservable {
	if ns, ok := s.Namespaces[name]; ok {
		return inventory.OnUnservableOf(ns)
	}
	return ""
}

// Template implements InventoryReader.
func (s *StaticInventory) Template(namespace, name string) (*resourceapi.ResourceClaimTemplate, bool) {
	for _, t := range s.Existing {
		if t.Namespace == namespace && t.Name == name {
			return t, true
		}
	}
	return nil, false
}
