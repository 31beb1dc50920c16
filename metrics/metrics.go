// Package metrics holds claimbridge's Prometheus metrics: admission, the
// inventory, templates, reservations, stranded and unservable pods, the
// migration's progress and the pods never decided. They are registered with
// controller-runtime's registry and served with its own.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics are claimbridge's Prometheus metrics, registered with
// controller-runtime's registry (served with its own webhook metrics).
type Metrics struct {
	Admissions          *prometheus.CounterVec
	TranslateDuration   prometheus.Histogram
	FeasibilityDuration *prometheus.HistogramVec
	PlacementDuration   *prometheus.HistogramVec
	InventoryNodes      prometheus.Gauge
	TemplatesCreated    prometheus.Counter
	TemplatesDeleted    prometheus.Counter
	TemplatesRecreated  prometheus.Counter
	PolicyReloads       *prometheus.CounterVec
	// ReservationsTakenOver counts the pending translated pods of other
	// admissions (another replica, or before a restart) whose devices this
	// replica came to hold.
	ReservationsTakenOver prometheus.Counter
	// AdmissionsForwarded counts the admissions that would hold devices,
	// decided on a replica that does not lead, by where they were decided
	// in the end: "leader" (forwarded and answered there) or "here" (no
	// leader known or reachable: decided on this replica).
	AdmissionsForwarded *prometheus.CounterVec
	// StrandedPods: translated pods waiting for their claims while the
	// device plugin has room for them; StrandedRecreated: those deleted
	// for their controllers to create again (claimbridge.io/repair).
	StrandedPods      prometheus.Gauge
	StrandedRecreated prometheus.Counter
	// Unservable counts the pods admission found unservable (admitted
	// without translation, asking for an extended resource no node offers
	// as much of as they need), by namespace mode and resource, denied or
	// not, dry runs aside; UnservablePending is the pods Pending now that
	// no node can serve (the leader counts them).
	Unservable        *prometheus.CounterVec
	UnservablePending prometheus.Gauge
	// MigrationDevices is the devices of running (bound) pods in opted-in
	// namespaces, by what serves them: served_by="dra" (translated pods),
	// "device-plugin" (pods asking for extended resources the policy
	// maps) or "none" (bound to a node that no longer offers them); the
	// live report samples it.
	MigrationDevices *prometheus.GaugeVec
	// UndecidedPods and UndecidedDevices count the pods of opted-in
	// namespaces that ask for devices the policy maps and carry no
	// decision, by the reason (Unseen) and, for devices, the resource (the
	// leader counts them).
	UndecidedPods    *prometheus.GaugeVec
	UndecidedDevices *prometheus.GaugeVec
	// AdmissionStages is where admissions spend their time, by stage;
	// SlowAdmissions counts those over the slow-admission threshold by the
	// stage that took longest (each is logged with all its stages).
	AdmissionStages *prometheus.HistogramVec
	SlowAdmissions  *prometheus.CounterVec
	// AdmissionDuration is how long whole admissions took inside the
	// handler, by namespace mode, in buckets fine enough (×1.5) for a
	// p99.9 of the tail.
	AdmissionDuration *prometheus.HistogramVec
	// SnapshotUpdates is how long the parts of bringing the inventory's
	// snapshot up to date took.
	SnapshotUpdates *prometheus.HistogramVec
}

// NewMetrics creates the metrics; Register adds them to a registry.
func NewMetrics() *Metrics {
	return &Metrics{
		Admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimbridge_admissions_total",
			Help: "Pod admissions by namespace mode, outcome (Translate, KeepLegacy, Skip, Error) and reason code.",
		}, []string{"mode", "outcome", "reason"}),
		TranslateDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "claimbridge_translate_duration_seconds",
			Help:    "Time to translate one pod.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 14),
		}),
		FeasibilityDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "claimbridge_feasibility_duration_seconds",
			Help:    "Time of one feasibility check, by verdict.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18),
		}, []string{"verdict"}),
		PlacementDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "claimbridge_placement_duration_seconds",
			Help:    "Time of one placement check (where the translation lands against where the pod as submitted could), by result.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18),
		}, []string{"result"}),
		InventoryNodes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "claimbridge_inventory_nodes",
			Help: "Nodes in the inventory cache.",
		}),
		TemplatesCreated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "claimbridge_templates_created_total",
			Help: "ResourceClaimTemplates created by admission.",
		}),
		TemplatesDeleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "claimbridge_templates_deleted_total",
			Help: "Unused ResourceClaimTemplates deleted after the grace period.",
		}),
		TemplatesRecreated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "claimbridge_templates_recreated_total",
			Help: "Missing ResourceClaimTemplates recreated for pending pods.",
		}),
		PolicyReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimbridge_policy_reloads_total",
			Help: "Policy file reloads by result (applied, rejected).",
		}, []string{"result"}),
		ReservationsTakenOver: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "claimbridge_reservations_taken_over_total",
			Help: "Translated pods admitted by another replica or before a restart, waiting for their claims, whose devices this replica holds.",
		}),
		AdmissionsForwarded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimbridge_admissions_forwarded_total",
			Help: "Admissions that hold devices, seen by a replica that does not lead, by where they were decided (leader, here).",
		}, []string{"decided"}),
		StrandedPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "claimbridge_stranded_pods",
			Help: "Translated pods waiting for their claims longer than --stranded-after while a device-plugin node has room for them as submitted.",
		}),
		StrandedRecreated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "claimbridge_stranded_pods_recreated_total",
			Help: "Stranded pods deleted so that their controller creates them again (namespace label claimbridge.io/repair=Recreate).",
		}),
		Unservable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimbridge_unservable_pods_total",
			Help: "Pods admitted without translation (or denied) that ask for an extended resource no node offers as much of as they need, by namespace mode and resource; a pod counts once per such resource.",
		}, []string{"mode", "resource"}),
		UnservablePending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "claimbridge_unservable_pods",
			Help: "Pending, unbound pods in opted-in namespaces that ask for an extended resource no node offers as much of as they need.",
		}),
		MigrationDevices: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "claimbridge_migration_devices",
			Help: "Devices of running (bound) pods in opted-in namespaces, by what serves them: dra (translated pods), device-plugin (pods asking for extended resources the policy maps) or none (pods bound to a node that no longer offers what they ask for, after the switch to DRA). Every replica reports the same cluster.",
		}, []string{"served_by"}),
		UndecidedPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "claimbridge_undecided_pods",
			Help: "Pods in opted-in namespaces that ask for devices the policy maps and carry no decision of the webhook, by reason: kept away by its matchConditions (OptedOut, SchedulerNotListed, SchedulerSkipped, NodeNamePreset) or NotSeenByWebhook. The leader counts them.",
		}, []string{"reason"}),
		UndecidedDevices: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "claimbridge_undecided_devices",
			Help: "Devices those pods ask for, by reason and extended resource. The leader counts them.",
		}, []string{"reason", "resource"}),
		AdmissionStages: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "claimbridge_admission_stage_seconds",
			Help:    "Time one admission spent in a stage (lookup, decode, wait, takeover, snapshot, translate, placement, verdict, decide, template, respond).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18),
		}, []string{"stage"}),
		SnapshotUpdates: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "claimbridge_snapshot_update_seconds",
			Help:    "Time to bring the inventory's snapshot up to date, by part: fleet (built anew), claims (allocations replaced), pods (usage of the nodes whose bound pods changed), reservations (the devices held added).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 18),
		}, []string{"part"}),
		AdmissionDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "claimbridge_admission_duration_seconds",
			Help:    "Time one admission took in claimbridge's handler, from the request decoded by the webhook server to the response, by namespace mode (audit, enforce).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 1.5, 30),
		}, []string{"mode"}),
		SlowAdmissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimbridge_slow_admissions_total",
			Help: "Admissions over the slow-admission threshold (--slow-admission), by the stage that took longest; each is logged with its stages.",
		}, []string{"stage"}),
	}
}

// Register adds the metrics to controller-runtime's registry, once.
func (m *Metrics) Register() error {
	return m.RegisterWith(crmetrics.Registry)
}

// RegisterWith adds the metrics to a registry.
func (m *Metrics) RegisterWith(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.Admissions, m.TranslateDuration, m.FeasibilityDuration, m.PlacementDuration, m.InventoryNodes,
		m.TemplatesCreated, m.TemplatesDeleted, m.TemplatesRecreated, m.PolicyReloads, m.ReservationsTakenOver, m.AdmissionsForwarded,
		m.StrandedPods, m.StrandedRecreated, m.Unservable, m.UnservablePending, m.MigrationDevices, m.UndecidedPods, m.UndecidedDevices,
		m.AdmissionStages, m.SlowAdmissions, m.SnapshotUpdates, m.AdmissionDuration} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}
