package webhook

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/report"
)

// ReportStore keeps the latest admission decisions per namespace, for the
// /report endpoint: the same rows as the offline audit.
type ReportStore struct {
	// PerNamespace is how many rows each namespace keeps. Default 200.
	PerNamespace int
	// MaxNamespaces bounds memory; the namespace seen least recently goes
	// first. Default 1000.
	MaxNamespaces int
	// Fleet, when set, gives the inventory snapshot whose summary the
	// report carries (report.FleetSummary); nil leaves it out.
	Fleet SnapshotSource

	mu   sync.Mutex
	rows map[string]*ring
	seen map[string]time.Time

	fleetMu   sync.Mutex
	fleetSnap *feasibility.Snapshot
	fleetSum  *report.FleetSummary
}

// SnapshotSource gives the current inventory snapshot: the Inventory.
type SnapshotSource interface {
	Snapshot(now time.Time) (*feasibility.Snapshot, error)
}

// ring keeps the last rows of a namespace without copying on every add.
type ring struct {
	rows []report.Row
	next int // where the next row goes once rows is full
}

func (r *ring) add(row report.Row, size int) {
	if len(r.rows) < size {
		r.rows = append(r.rows, row)
		return
	}
	r.rows[r.next] = row
	r.next = (r.next + 1) % size
}

// ordered returns the rows oldest first.
func (r *ring) ordered() []report.Row {
	return append(slices.Clone(r.rows[r.next:]), r.rows[:r.next]...)
}

// Add records a decision.
func (s *ReportStore) Add(namespace string, row report.Row, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows == nil {
		s.rows, s.seen = map[string]*ring{}, map[string]time.Time{}
	}
	per := s.PerNamespace
	if per <= 0 {
		per = 200
	}
	maxNS := s.MaxNamespaces
	if maxNS <= 0 {
		maxNS = 1000
	}
	r, ok := s.rows[namespace]
	if !ok {
		if len(s.rows) >= maxNS {
			var oldest string
			for ns, t := range s.seen {
				if oldest == "" || t.Before(s.seen[oldest]) {
					oldest = ns
				}
			}
			delete(s.rows, oldest)
			delete(s.seen, oldest)
		}
		r = &ring{}
		s.rows[namespace] = r
	}
	r.add(row, per)
	s.seen[namespace] = now
}

// Report returns the rows of a namespace, or of all namespaces for "".
func (s *ReportStore) Report(namespace, policy string) *report.Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []report.Row
	for ns, r := range s.rows {
		if namespace == "" || ns == namespace {
			rows = append(rows, r.ordered()...)
		}
	}
	rep := report.New("live", policy, rows)
	rep.FleetSummary = s.fleetSummary()
	return rep
}

// fleetSummary summarises the current snapshot, once per snapshot.
func (s *ReportStore) fleetSummary() *report.FleetSummary {
	if s.Fleet == nil {
		return nil
	}
	snap, err := s.Fleet.Snapshot(time.Now())
	if err != nil || snap == nil {
		return nil
	}
	s.fleetMu.Lock()
	defer s.fleetMu.Unlock()
	if snap != s.fleetSnap {
		s.fleetSnap, s.fleetSum = snap, report.NewFleetSummary(snap.Summary())
	}
	return s.fleetSum
}

// Handler serves the report (?namespace=NS&format=json|yaml|table|markdown|html),
// JSON by default; html is the self-contained page of `claimbridge audit -o html`.
func (s *ReportStore) Handler(policy func() string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		format := r.URL.Query().Get("format")
		if format == "" {
			format = "json"
		}
		if !slices.Contains(report.Formats, format) {
			http.Error(w, "format must be one of "+strings.Join(report.Formats, ", "), http.StatusBadRequest)
			return
		}
		rep := s.Report(r.URL.Query().Get("namespace"), policy())
		switch format {
		case "json":
			w.Header().Set("Content-Type", "application/json")
		case "html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			// The page is self-contained: no script, style or image from elsewhere.
			w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:")
		default:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		if err := rep.Write(w, format); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
}

// RecentTemplates remembers the specs of templates admission asked for, by
// name. Names are content hashes, so a spec found under a name in any
// namespace is the spec of that name everywhere.
type RecentTemplates struct {
	// Max entries. Default 4096.
	Max int

	mu    sync.Mutex
	specs map[string]resourceapi.ResourceClaimTemplateSpec
	order []string
}

// Remember records a template's spec.
func (r *RecentTemplates) Remember(t *resourceapi.ResourceClaimTemplate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.specs == nil {
		r.specs = map[string]resourceapi.ResourceClaimTemplateSpec{}
	}
	if _, ok := r.specs[t.Name]; ok {
		return
	}
	maxN := r.Max
	if maxN <= 0 {
		maxN = 4096
	}
	if len(r.order) >= maxN {
		delete(r.specs, r.order[0])
		r.order = r.order[1:]
	}
	r.specs[t.Name] = *t.Spec.DeepCopy()
	r.order = append(r.order, t.Name)
}

// Spec returns a remembered spec.
func (r *RecentTemplates) Spec(name string) (resourceapi.ResourceClaimTemplateSpec, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.specs[name]
	return *s.DeepCopy(), ok
}

// APITemplates is the TemplateClient on the API.
type APITemplates struct{ Client kubernetes.Interface }

// Create creates a template.
func (a APITemplates) Create(ctx context.Context, t *resourceapi.ResourceClaimTemplate) error {
	_, err := a.Client.ResourceV1().ResourceClaimTemplates(t.Namespace).Create(ctx, t, metav1.CreateOptions{})
	return err
}

// Get reads a template.
func (a APITemplates) Get(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaimTemplate, error) {
	return a.Client.ResourceV1().ResourceClaimTemplates(namespace).Get(ctx, name, metav1.GetOptions{})
}

// StaticInventory answers from objects listed once: for one-shot audits of a
// live cluster and for tests.
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
