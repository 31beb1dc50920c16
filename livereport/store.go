package livereport

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// ReportStore keeps the latest admission decisions per namespace, for the
// /report endpoint: the same format as the offline audit. With Live, its
// rows are the workloads of the pods the cluster has (livereport.go), the
// admission rows adding what only the decision knew; without, they are
// the admissions themselves.
type ReportStore struct {
	// PerNamespace is how many rows each namespace keeps. Default 200.
	PerNamespace int
	// MaxNamespaces bounds memory; the namespace seen least recently goes
	// first. Default 1000.
	MaxNamespaces int
	// Fleet, when set, gives the inventory snapshot whose summary the
	// report carries (report.FleetSummary); nil leaves it out.
	Fleet SnapshotSource
	// Pending, when set, lists the translated pods still waiting for their
	// claims: their rows are "Waiting", with how long.
	Pending PendingSource
	// Now is the clock of the Waiting durations. Default time.Now.
	Now func() time.Time
	// Live, when set with Policy, makes the rows the workloads of the pods
	// in opted-in namespaces, read from the pod informer (the Inventory).
	Live LiveSource
	// Policy maps the extended resources (devices asked for, Unseen).
	// Required with Live.
	Policy func() *translate.Policy
	// Started is when the webhook began watching (Unseen tells a pod bound
	// at creation by it). Default: when the process started.
	Started time.Time
	// OwnNamespace is claimbridge's namespace: its pods are never decided
	// and never listed.
	OwnNamespace string
	// ProgressInterval is how often Start samples the progress. Default
	// DefaultProgressInterval; ProgressSamples how many samples are kept
	// (the oldest go first). Default DefaultProgressSamples.
	// A namespace keeps ProgressSamplesPerNamespace (default
	// DefaultProgressSamplesPerNamespace) while it has bound pods.
	ProgressInterval            time.Duration
	ProgressSamples             int
	ProgressSamplesPerNamespace int
	// MigrationDevices, when set, is set at every sample:
	// claimbridge_migration_devices{served_by="dra"|"device-plugin"}.
	MigrationDevices *prometheus.GaugeVec

	progMu    sync.Mutex
	history   []report.ProgressSample
	nsHistory map[string][]report.ProgressSample

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

// PendingSource gives, by admission id, the creation time of the
// translated pods that wait for their claims: the Inventory.
type PendingSource interface {
	PendingSince() map[string]time.Time
}

// ring keeps the last rows of a namespace without copying on every add.
type ring struct {
	rows []admitted
	next int // where the next row goes once rows is full
}

// admitted is a row admission recorded, and when.
type admitted struct {
	row decisions.Row
	at  time.Time
}

func (r *ring) add(a admitted, size int) {
	if len(r.rows) < size {
		r.rows = append(r.rows, a)
		return
	}
	r.rows[r.next] = a
	r.next = (r.next + 1) % size
}

// ordered returns the rows oldest first.
func (r *ring) ordered() []admitted {
	return append(slices.Clone(r.rows[r.next:]), r.rows[:r.next]...)
}

// Add records a decision.
func (s *ReportStore) Add(namespace string, row decisions.Row, now time.Time) {
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
	r.add(admitted{row: row, at: now}, per)
	s.seen[namespace] = now
}

// admittedRows copies the admission rows of a namespace, or of all for "",
// oldest first within a namespace; s.mu is held.
func (s *ReportStore) admittedRows(namespace string) []admitted {
	var rows []admitted
	for _, ns := range slices.Sorted(maps.Keys(s.rows)) {
		if namespace == "" || ns == namespace {
			rows = append(rows, s.rows[ns].ordered()...)
		}
	}
	return rows
}

// Report returns the rows of a namespace, or of all namespaces for "".
// With Live, they are one per workload and status, and the report has the
// migration's progress with its history.
func (s *ReportStore) Report(ctx context.Context, namespace, policy string) *report.Report {
	s.mu.Lock()
	adm := s.admittedRows(namespace)
	s.mu.Unlock()
	var rows []decisions.Row
	var progress *report.Progress
	if s.Live != nil && s.Policy != nil {
		pods, ix := s.livePods(namespace, adm)
		rows = append(s.liveRows(pods, s.now()), s.notCached(adm, ix)...)
		now := s.progress(pods)
		progress = &report.Progress{DRA: now.DRA, DevicePlugin: now.DevicePlugin, Unservable: now.Unservable, History: s.progressHistory(namespace)}
	} else {
		for _, a := range adm {
			rows = append(rows, a.row)
		}
		s.markWaiting(rows)
	}
	rep := report.New("live", policy, report.Rows(rows))
	rep.Progress = progress
	rep.Reasons = explain.Reasons()
	rep.FleetSummary = s.fleetSummary(ctx)
	return rep
}

// markWaiting marks the rows of translated pods that are still Pending
// with their claims not allocated (rows is a copy; the store is unchanged).
func (s *ReportStore) markWaiting(rows []decisions.Row) {
	if s.Pending == nil {
		return
	}
	pending := s.Pending.PendingSince()
	if len(pending) == 0 {
		return
	}
	now := s.now()
	for i := range rows {
		since, ok := pending[rows[i].Admission]
		if !ok || rows[i].Admission == "" {
			continue
		}
		t := metav1.NewTime(since)
		rows[i].WaitingSince = &t
		rows[i].Waiting = now.Sub(since).Round(time.Second).String()
	}
}

func (s *ReportStore) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// fleetSummary summarises the current snapshot, once per snapshot: it is
// kept for the next requests, so a request that goes away does not cut it
// short.
func (s *ReportStore) fleetSummary(ctx context.Context) *report.FleetSummary {
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
		s.fleetSnap, s.fleetSum = snap, report.NewFleetSummary(snap.Summary(context.WithoutCancel(ctx)))
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
		rep := s.Report(r.Context(), r.URL.Query().Get("namespace"), policy())
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
