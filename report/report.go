// Package report is the audit report: one row per pod or workload with the
// decision (decide.Decision): outcome, placement check, verdict and
// reasons. The offline audit and the webhook produce the same rows; the
// JSON and YAML forms are a stable, versioned format
// (claimbridge.io/v1alpha1 AuditReport), and the other formats are
// rendered from it. What may import it: webhook/, cmd/ and internal/; it
// imports decide and the translate packages only.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/claimbridge/claimbridge/reason"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/forecast"
)

// Report is the whole audit.
type Report struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Fleet      string  `json:"fleet,omitempty"`
	Policy     string  `json:"policy"`
	Summary    Summary `json:"summary"`
	// FleetSummary is the inventory the rows were checked against, when
	// known: DRA and device-plugin nodes, devices by class.
	FleetSummary *FleetSummary `json:"fleetSummary,omitempty"`
	Items        []Row         `json:"items"`
	// Forecast is set on a cutover forecast (audit --forecast): the rows
	// were decided against the fleet as it will be after the switch to DRA,
	// and each says what the switch does to it (Row.Cutover).
	Forecast *forecast.Summary `json:"forecast,omitempty"`
	// Progress is how far the migration has come, on the webhook's report
	// only: the devices of running pods that DRA serves and that the device
	// plugin serves, now and sampled over time.
	Progress *Progress `json:"progress,omitempty"`
	// Reasons is the catalog the remedies come from: decide's when nil
	// (every code of a decision); the webhook and the offline runs give
	// theirs, which add their own codes.
	Reasons reason.Catalog `json:"-"`
}

// reasons is the report's catalog.
func (r *Report) reasons() reason.Catalog {
	if r.Reasons != nil {
		return r.Reasons
	}
	return decide.Reasons()
}

// Summary counts rows by outcome and verdict.
type Summary struct {
	Total      int            `json:"total"`
	Translate  int            `json:"translate"`
	KeepLegacy int            `json:"keepLegacy"`
	Skip       int            `json:"skip"`
	Verdicts   map[string]int `json:"verdicts,omitempty"`
	// Placement counts the rows by placement check result.
	Placement map[PlacementResult]int `json:"placement,omitempty"`
	// Cutover counts the rows of a cutover forecast by what the switch
	// does to them.
	Cutover map[forecast.CutoverResult]int `json:"cutover,omitempty"`
}

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
	// Cutover says what the switch to DRA does to the row (audit
	// --forecast only).
	Cutover *forecast.Cutover `json:"cutover,omitempty"`
	// Rehearsed is what a rehearsal on the real scheduler saw of the row's
	// pods (make rehearse), beside what the forecast said.
	Rehearsed *forecast.Rehearsed `json:"rehearsed,omitempty"`
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

// Progress is how many devices of running (bound) pods in opted-in
// namespaces DRA serves (translated pods: the devices of their claims) and
// how many the device plugin serves (pods that ask for extended resources
// the policy maps), with earlier samples, oldest first.
type Progress struct {
	DRA          int64 `json:"dra"`
	DevicePlugin int64 `json:"devicePlugin"`
	// Unservable: devices of bound pods that nothing serves (their node
	// no longer offers what they ask for).
	Unservable int64            `json:"unservable,omitempty"`
	History    []ProgressSample `json:"history,omitempty"`
}

// ProgressSample is the progress at one time.
type ProgressSample struct {
	Time         metav1.Time `json:"time"`
	DRA          int64       `json:"dra"`
	DevicePlugin int64       `json:"devicePlugin"`
	// Unservable: the devices of pods bound to a node that no longer
	// offers what they ask for (after the switch to DRA): served by no one.
	Unservable int64 `json:"unservable,omitempty"`
}

// Share is the percentage of the devices DRA serves, 0 without devices.
func (p ProgressSample) Share() int64 {
	if t := p.DRA + p.DevicePlugin; t > 0 {
		return p.DRA * 100 / t
	}
	return 0
}

// Share is the percentage of the devices DRA serves now.
func (p *Progress) Share() int64 {
	return ProgressSample{DRA: p.DRA, DevicePlugin: p.DevicePlugin}.Share()
}

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

// node is the NODE column of the text formats: where the pods run for a
// live row that says, else the allocator's node.
func (row Row) node() string {
	if len(row.BoundTo) > 0 {
		return strings.Join(row.BoundTo, ",")
	}
	return row.Node
}

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

// New builds a report from rows, sorted by namespace, kind and name.
func New(fleet, policy string, rows []Row) *Report {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b Row) int {
		return strings.Compare(a.Namespace+"\x00"+a.Kind+"\x00"+a.Name, b.Namespace+"\x00"+b.Kind+"\x00"+b.Name)
	})
	r := &Report{APIVersion: "claimbridge.io/v1alpha1", Kind: "AuditReport", Fleet: fleet, Policy: policy, Items: rows}
	r.Summary.Total = len(rows)
	for _, row := range rows {
		switch row.Outcome {
		case reason.OutcomeTranslate:
			r.Summary.Translate++
		case reason.OutcomeKeepLegacy:
			r.Summary.KeepLegacy++
		default:
			r.Summary.Skip++
		}
		if row.Placement != nil {
			if r.Summary.Placement == nil {
				r.Summary.Placement = map[PlacementResult]int{}
			}
			r.Summary.Placement[row.Placement.Result]++
		}
		if row.Cutover != nil {
			if r.Summary.Cutover == nil {
				r.Summary.Cutover = map[forecast.CutoverResult]int{}
			}
			r.Summary.Cutover[row.Cutover.Result]++
		}
		if row.Verdict != "" {
			if r.Summary.Verdicts == nil {
				r.Summary.Verdicts = map[string]int{}
			}
			r.Summary.Verdicts[row.Verdict]++
		}
	}
	return r
}

// Formats lists the output formats of Write.
var Formats = []string{"table", "json", "yaml", "markdown", "html"}

// Write renders the report.
func (r *Report) Write(w io.Writer, format string) error {
	switch format {
	case "json":
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(data, '\n'))
		return err
	case "yaml":
		data, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case "table":
		return r.table(w)
	case "markdown":
		return r.markdown(w)
	case "html":
		return r.WriteHTML(w)
	}
	return fmt.Errorf("unknown format %q (%s)", format, strings.Join(Formats, ", "))
}

// Headline is the main reason of a row, for one-line displays: the reason
// that decided, else the first warning, else the last reason.
func (row Row) Headline() string {
	if row.Decisive != nil && row.Decisive.Code != "" {
		return string(row.Decisive.Code) + ": " + row.Decisive.Message
	}
	for _, r := range row.Reasons {
		if r.Severity == reason.SeverityWarning {
			return string(r.Code) + ": " + r.Message
		}
	}
	if n := len(row.Reasons); n > 0 {
		return string(row.Reasons[n-1].Code) + ": " + row.Reasons[n-1].Message
	}
	return ""
}

func (row Row) object() string {
	s := row.Kind + "/" + row.Name
	if row.Namespace != "" {
		s = row.Namespace + "/" + s
	}
	if row.Path != "" {
		s += ": " + row.Path
	}
	return s
}

func (r *Report) table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if r.Forecast != nil && r.rehearsed() {
		fmt.Fprintln(tw, "OBJECT\tCUTOVER\tPODS SERVED\tREHEARSED: BOUND\tNODES TODAY→AFTER\tOUTCOME\tREASON")
		for _, row := range r.Items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.object(), cutoverResult(row.Cutover), cutoverPods(row.Cutover), rehearsedPods(row.Rehearsed), cutoverNodes(row.Cutover), row.Outcome, truncate(cutoverHeadline(row.Cutover, row), 100))
		}
	} else if r.Forecast != nil {
		fmt.Fprintln(tw, "OBJECT\tCUTOVER\tPODS SERVED\tNODES TODAY→AFTER\tOUTCOME\tVERDICT\tREASON")
		for _, row := range r.Items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.object(), cutoverResult(row.Cutover), cutoverPods(row.Cutover), cutoverNodes(row.Cutover), row.Outcome, dash(row.Verdict), truncate(cutoverHeadline(row.Cutover, row), 110))
		}
	} else {
		fmt.Fprintln(tw, "OBJECT\tOUTCOME\tPLACEMENT\tVERDICT\tNODE\tALTERNATIVES\tREASON")
		for _, row := range r.Items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.object(), row.outcome(), dash(row.Placement.short()), dash(row.Verdict), dash(row.node()),
				dash(strings.Join(row.Alternatives, ",")), truncate(row.Headline(), 110))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", r.summaryLine())
	return err
}

// summaryLine counts the rows: one per object, or per pod template of an
// object that holds several (a JobSet's jobs, a RayCluster's groups). An
// object is its kind, namespace and name in one document of the input
// (its Source): objects of the same name in different files, or in two
// documents of one, are different objects. A row without a source (a pod
// the webhook admitted) is an object of its own.
func (r *Report) summaryLine() string {
	objects := map[string]bool{}
	for i, row := range r.Items {
		key := row.Kind + "/" + row.Namespace + "/" + row.Name + "\x00" + row.Source
		if row.Source == "" {
			key = fmt.Sprintf("\x00%d", i)
		}
		objects[key] = true
	}
	what := fmt.Sprintf("%d objects", r.Summary.Total)
	if len(objects) != r.Summary.Total {
		what = fmt.Sprintf("%d pod templates in %d objects", r.Summary.Total, len(objects))
	}
	if r.live() {
		var pods int64
		for _, row := range r.Items {
			pods += row.Pods()
		}
		what = fmt.Sprintf("%d workloads · %d pods (%d rows, one per workload and status)", r.workloads(), pods, r.Summary.Total)
	}
	line := fmt.Sprintf("%s: %d translate, %d keep legacy, %d skip", what, r.Summary.Translate, r.Summary.KeepLegacy, r.Summary.Skip)
	if r.Forecast != nil {
		var parts []string
		for _, res := range forecast.CutoverResults {
			if n := r.Summary.Cutover[res]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, cutoverLabel(res)))
			}
		}
		line += fmt.Sprintf("\nafter the switch (%d of %d nodes switch, GFD labels %s): %s", r.Forecast.Switched, r.Forecast.Nodes, r.Forecast.GFDLabels, strings.Join(parts, ", "))
	}
	return line
}

// workloads counts the distinct workloads of the rows (kind, namespace
// and name): a live workload whose pods stand differently has a row per
// status.
func (r *Report) workloads() int {
	seen := map[string]bool{}
	for _, row := range r.Items {
		seen[row.Kind+"/"+row.Namespace+"/"+row.Name] = true
	}
	return len(seen)
}

// outcome is the OUTCOME column of the text formats: a live row's status
// with its outcome.
func (row Row) outcome() string {
	if row.Status != "" {
		return string(row.Outcome) + "/" + string(row.Status)
	}
	return string(row.Outcome)
}

func (r *Report) markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| Object | Outcome | Placement | Verdict | Node | Alternatives | Reason |\n|---|---|---|---|---|---|---|\n")
	for _, row := range r.Items {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", row.object(), row.outcome(), dash(row.Placement.short()), dash(row.Verdict), dash(row.node()),
			dash(strings.Join(row.Alternatives, ", ")), strings.ReplaceAll(row.Headline(), "|", `\|`))
	}
	fmt.Fprintf(&b, "\n%s\n", r.summaryLine())
	_, err := io.WriteString(w, b.String())
	return err
}

// short renders the placement answer in a few characters: "same 8" (the
// translation lands on the same 8 nodes), "+2 -1" (gains 2 nodes, loses 1),
// "unknown".
func (p *Placement) short() string {
	if p == nil {
		return ""
	}
	switch p.Result {
	case PlacementEqual:
		return fmt.Sprintf("same %d", p.Translated)
	case PlacementUnknown:
		return "unknown"
	}
	count := func(gs []feasibility.NodeGroup) int {
		n := 0
		for _, g := range gs {
			n += g.Nodes
		}
		return n
	}
	return fmt.Sprintf("+%d -%d", count(p.Gained), count(p.Lost))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func truncate(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
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
