// Package decisions is what a decision leaves behind: the row of one pod or
// workload — who it is, the outcome, the placement check, the verdict, the
// reasons and what it asks for — as admission, the offline audit, the
// live report, the PolicyReports and every explanation read it. It holds
// no forecast: what the switch to DRA does to a row is the forecast's own
// result, which the report renders beside it. It builds rows from
// decide's decisions and reads nothing from the cluster.
package decisions

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/reason"
)

// Row is one pod or workload.
type Row struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	// Name of the object; for one the API server names on creation, its
	// generateName with a star ("train-*").
	Name   string `json:"name"`
	Source string `json:"source,omitempty"`
	// Path of the pod template in the object, for objects that hold several
	// or hold them where a CRD does: "spec.workerGroupSpecs[0].template".
	// Empty for Pods and built-in workloads.
	Path string `json:"path,omitempty"`
	// Rule that found the template in a custom resource: Table (a known
	// location of a popular CRD) or Shape (found by its shape in a kind
	// nobody listed). Empty for Pods and built-in workloads.
	Rule string `json:"rule,omitempty"`
	// Outcome after feasibility: Translate, KeepLegacy or Skip.
	Outcome reason.Outcome `json:"outcome"`
	// Verdict of the allocator pass (FitsNow, FitsWhenFree, NeverFits,
	// Unknown), empty when translation did not get that far.
	Verdict string `json:"verdict,omitempty"`
	// Node the allocator chose (FitsNow) or could choose once free.
	Node string `json:"node,omitempty"`
	// Alternatives chosen, "<request>/<subrequest>" for firstAvailable.
	Alternatives []string `json:"alternatives,omitempty"`
	// Devices chosen as "<driver>/<pool>/<device>".
	Devices  []string `json:"devices,omitempty"`
	Template string   `json:"template,omitempty"`
	// Placement is the placement check's answer, absent when it did not run.
	Placement *Placement `json:"placement,omitempty"`
	// Decisive is the reason that decided the outcome (one of Reasons).
	Decisive *reason.Reason `json:"decisive,omitempty"`
	// Admission is the id of the admission that translated the pod (its
	// claimbridge.io/admission annotation); live reports only.
	Admission string `json:"admission,omitempty"`
	// WaitingSince is set on a live row whose translated pod is still
	// Pending with its claim not allocated: since its admission. Waiting
	// says for how long, when the report was made.
	WaitingSince *metav1.Time `json:"waitingSince,omitempty"`
	Waiting      string       `json:"waiting,omitempty"`
	// Reasons of translation, then of the placement check and the verdict.
	Reasons []reason.Reason `json:"reasons"`
	// VerdictCode classifies the verdict (feasibility.ReasonCode:
	// NoMatchingDevices, DevicesInUse, …), empty when there is none.
	VerdictCode string `json:"verdictCode,omitempty"`
	// DevicesRequested counts the devices one pod asks for as submitted,
	// per legacy extended resource the policy maps (whatever the outcome).
	DevicesRequested map[string]int64 `json:"devicesRequested,omitempty"`
	// Replicas is how many pods the pod template stands for at once:
	// spec.replicas, a Job's parallelism; for a custom resource as its
	// operator counts them (a JobSet's replicas × parallelism, a
	// LeaderWorkerSet's groups × size, a Ray worker group's replicas within
	// its bounds × numOfHosts). Absent for a Pod and for a DaemonSet (one per
	// node, not known here), which count as one; 0 for a template that stands
	// for no pod now (a Ray worker group scaled to zero, an MPIJob without
	// workers).
	Replicas *int32 `json:"replicas,omitempty"`
	// Charge is what the translation's claim would be charged against
	// ResourceQuota, per quota resource name
	// ("gpu.nvidia.com.deviceclass.resource.k8s.io/devices": 2; a
	// firstAvailable request counts its largest alternative per class),
	// whatever the outcome; absent when translation did not get that far.
	Charge map[string]int64 `json:"charge,omitempty"`
	// Hardware names the kind of hardware the pod asks for (see
	// HardwareKind): "NVIDIA-L4", "MIG 1g.10gb", "TPU tpu-v5-lite-podslice
	// 2x4", "nvidia.com/gpu, any model"; empty without devices.
	Hardware string `json:"hardware,omitempty"`
	// Status is where the row's pods stand now, on the webhook's report
	// only (its rows are workloads grouped from the pods the cluster has,
	// one row per workload and status): Migrated, ReadyNow, ReadyWhenFree,
	// Waiting, Kept, Blocked or Skipped. Empty in the offline audit.
	Status Status `json:"status,omitempty"`
	// BoundTo names the nodes the row's pods are bound to, in name order,
	// on the webhook's report: for Migrated rows, where DRA serves them;
	// for Kept rows, where the device plugin does.
	// Node, by contrast, is the allocator's advice at admission.
	BoundTo []string `json:"boundTo,omitempty"`
	// Unseen is set on the webhook's rows of pods that ask for devices the
	// policy maps but never reached the webhook (the chart's
	// matchConditions kept them away, or they predate it); Decisive says
	// why. They are Skipped, and counted with their devices.
	Unseen bool `json:"unseen,omitempty"`
}

// Status is where a live row's pods stand on the way to DRA.
type Status string

// Statuses of live rows (Row.Status).
const (
	// StatusMigrated: translated, and the pods are bound to a node.
	StatusMigrated Status = "Migrated"
	// StatusReadyNow: would be translated (audit mode), and DRA can serve
	// it now, or no verdict is known (the webhook restarted since).
	StatusReadyNow Status = "ReadyNow"
	// StatusReadyWhenFree: would be translated; DRA can serve it once
	// devices are free.
	StatusReadyWhenFree Status = "ReadyWhenFree"
	// StatusWaiting: translated, and the pods are still Pending (their
	// claims not allocated yet).
	StatusWaiting Status = "Waiting"
	// StatusKept: kept on the device plugin (KeptLegacy), which serves
	// it, for a reason that asks nothing of anyone (DRA was busy when it
	// came and the device plugin had room: DRABusyLegacyFree; a DeviceClass
	// serves it through extendedResourceName).
	StatusKept Status = "Kept"
	// StatusBlocked: kept on the device plugin (KeptLegacy), for a reason
	// someone must act on, or no node serves it.
	StatusBlocked Status = "Blocked"
	// StatusSkipped: not claimbridge's business (opted out, no mapped
	// device), or never seen by the webhook (Row.Unseen).
	StatusSkipped Status = "Skipped"
)

// Placement compares, over the nodes that publish DRA devices, where the
// translation lands with where the pod as submitted could.
type Placement struct {
	// Result: Equal, Differs or Unknown.
	Result PlacementResult `json:"result"`
	// Nodes publishing DRA devices; Legacy and Translated how many of them
	// each pod can land on.
	Nodes      int `json:"nodes"`
	Legacy     int `json:"legacy"`
	Translated int `json:"translated"`
	// Gained: node groups only the translation lands on; Lost: those only
	// the pod as submitted could.
	Gained []feasibility.NodeGroup `json:"gained,omitempty"`
	Lost   []feasibility.NodeGroup `json:"lost,omitempty"`
	// Unknown says why the comparison did not finish.
	Unknown string `json:"unknown,omitempty"`
}

// PlacementResult is the outcome of the placement check.
type PlacementResult string

// Placement results.
const (
	PlacementEqual   PlacementResult = "Equal"
	PlacementDiffers PlacementResult = "Differs"
	PlacementUnknown PlacementResult = "Unknown"
)

// Advisory says where the allocator found room for the row's translation,
// as advice rather than a decision (the scheduler picks the node):
// "could run on 6 nodes, e.g. a100-mig-0" when the placement check counted
// the nodes the translation can land on, else "could run on a100-mig-0
// (first node found)": the verdict knows only the first node, in name
// order, that fits. Empty without a node.
func (row Row) Advisory() string {
	if row.Node == "" {
		return ""
	}
	when := ""
	if row.Verdict == string(feasibility.FitsWhenFree) {
		when = " once devices are free"
	}
	if p := row.Placement; p != nil && p.Unknown == "" && p.Translated > 1 {
		return fmt.Sprintf("could run on %d nodes%s, e.g. %s", p.Translated, when, row.Node)
	}
	return fmt.Sprintf("could run on %s%s (first node found)", row.Node, when)
}

// Deciding is the reason that decided a row: its decisive reason, else
// the first warning, else the last reason; nil when it has none.
func (row Row) Deciding() *reason.Reason {
	if row.Decisive != nil && row.Decisive.Code != "" {
		return row.Decisive
	}
	for i := range row.Reasons {
		if row.Reasons[i].Severity == reason.SeverityWarning {
			return &row.Reasons[i]
		}
	}
	if n := len(row.Reasons); n > 0 {
		return &row.Reasons[n-1]
	}
	return nil
}

// Headline is the main reason of a row (Deciding), for one-line displays.
func (row Row) Headline() string {
	if r := row.Deciding(); r != nil {
		return string(r.Code) + ": " + r.Message
	}
	return ""
}

// objectName is the object's name, or for an object named by the API
// server on creation its generateName with a star ("train-*"), as the
// webhook names such pods.
func objectName(obj metav1.Object) string {
	if obj.GetName() == "" && obj.GetGenerateName() != "" {
		return obj.GetGenerateName() + "*"
	}
	return obj.GetName()
}

// NewRow builds the report row of one object from its decision.
func NewRow(kind string, obj metav1.Object, source string, d *decide.Decision) Row {
	row := Row{Kind: kind, Namespace: obj.GetNamespace(), Name: objectName(obj), Source: source, Outcome: d.Outcome, Reasons: slices.Clone(d.Reasons)}
	if d.Decisive.Code != "" {
		r := d.Decisive
		row.Decisive = &r
	}
	// Only a translated object names its template: a kept one's would
	// never exist.
	if t := d.Translation; t != nil && t.Template != nil && d.Outcome == reason.OutcomeTranslate {
		row.Template = t.Template.Name
	}
	if t := d.Translation; t != nil && len(t.Charge) > 0 {
		row.Charge = map[string]int64{}
		for k, v := range t.Charge {
			row.Charge[string(k)] = v
		}
	}
	if pl := d.Placement; pl != nil {
		row.Placement = &Placement{Nodes: pl.Nodes, Legacy: pl.Legacy, Translated: pl.Translated, Gained: pl.Gained, Lost: pl.Lost, Unknown: pl.Unknown}
		switch {
		case pl.Unknown != "":
			row.Placement.Result = PlacementUnknown
		case pl.Equal():
			row.Placement.Result = PlacementEqual
		default:
			row.Placement.Result = PlacementDiffers
		}
	}
	row.describeRequest(obj, d)
	if v := d.Verdict; v != nil {
		row.Verdict, row.Node, row.VerdictCode = string(v.Kind), v.Node, string(v.Code)
		for _, r := range v.Results {
			row.Alternatives = append(row.Alternatives, r.Request)
			row.Devices = append(row.Devices, r.Driver+"/"+r.Pool+"/"+r.Device)
		}
		row.Alternatives = slices.Compact(row.Alternatives)
	}
	return row
}
