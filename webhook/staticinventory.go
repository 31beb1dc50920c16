package webhook

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/feasibility"
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

	once sync.Once
	snap *feasibility.Snapshot
	err  error
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
func (s *StaticInventory) Snapshot(time.Time) (*feasibility.Snapshot, error) {
	s.once.Do(func() {
		if s.Fleet == nil {
			s.err = ErrNotSynced
			return
		}
		s.snap, s.err = feasibility.NewSnapshot(s.Fleet, 1, s.Features)
	})
	return s.snap, s.err
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
