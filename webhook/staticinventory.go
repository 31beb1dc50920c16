package webhook

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/translate"
)

// StaticInventory answers from objects listed once: for tests and
// benchmarks (this package's tests and e2e/bench). It stays in the package
// rather than in internal/testing/ because this package's own tests use it
// and a test-support package would import webhook back.
type StaticInventory struct {
	Fleet      *feasibility.Inventory
	Namespaces map[string]*corev1.Namespace
	QuotaList  []*corev1.ResourceQuota
	Existing   []*resourceapi.ResourceClaimTemplate
	Features   feasibility.Features
	// Reservations, when set, count in every snapshot, which is then
	// rebuilt whenever they change (as the live Inventory's).
	Reservations *Reservations

	once sync.Once
	snap *feasibility.Snapshot
	err  error

	mu      sync.Mutex
	resSnap *feasibility.Snapshot
	resVer  uint64
	resGen  uint64
}

// NamespaceMode implements InventoryReader.
func (s *StaticInventory) NamespaceMode(name string) (Mode, bool) {
	ns, ok := s.Namespaces[name]
	if !ok {
		return ModeOff, false
	}
	return modeOf(ns), true
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
			s.err = ErrNotSynced
			return
		}
		s.snap, s.err = feasibility.NewSnapshot(s.Fleet, 1, s.Features)
	})
	return s.snap, s.err
}

// Allocations are those of the fleet's claims.
func (s *StaticInventory) Allocations() Allocations {
	if s.Fleet == nil {
		return nil
	}
	return newClaimAllocations(s.Fleet.Claims)
}

// WhenDRABusy implements InventoryReader.
func (s *StaticInventory) WhenDRABusy(name string) translate.WhenDRABusy {
	if ns, ok := s.Namespaces[name]; ok {
		return whenDRABusyOf(ns)
	}
	return ""
}

// OnUnservable implements InventoryReader.
func (s *StaticInventory) OnUnservable(name string) translate.OnUnservable {
	if ns, ok := s.Namespaces[name]; ok {
		return onUnservableOf(ns)
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
