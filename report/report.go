// Package report is the audit report: one row per pod or workload with the
// decision (decide.Decision): outcome, placement check, verdict and
// reasons. The offline audit and the webhook produce the same rows; the
// JSON and YAML forms are a stable, versioned format
// (claimbridge.io/v1alpha1 AuditReport), and the other formats are
// rendered from it. What may import it: webhook/, cmd/ and internal/; it
// imports decide and the translate packages only.
package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/reason"
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
	Forecast *cutover.Summary `json:"forecast,omitempty"`
	// Rehearsal is set on a rehearsal (claimbridge rehearse): the Kubernetes release its
	// control plane ran; each row's Rehearsed says what it saw.
	Rehearsal *cutover.Rehearsal `json:"rehearsal,omitempty"`
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
	Placement map[decisions.PlacementResult]int `json:"placement,omitempty"`
	// Cutover counts the rows of a cutover forecast by what the switch
	// does to them.
	Cutover map[cutover.Result]int `json:"cutover,omitempty"`
}

// Row is one row of the report: the record of a decision and, on a
// cutover forecast, what the switch does to it.
type Row struct {
	decisions.Row `json:",inline"`
	// Cutover says what the switch to DRA does to the row (audit
	// --forecast only).
	Cutover *cutover.Effect `json:"cutover,omitempty"`
	// Rehearsed is what a rehearsal on the real scheduler saw of the row's
	// pods (claimbridge rehearse), beside what the forecast said.
	Rehearsed *cutover.Rehearsed `json:"rehearsed,omitempty"`
}

// Rows wraps records as the rows of a report.
func Rows(records []decisions.Row) []Row {
	out := make([]Row, len(records))
	for i, r := range records {
		out[i] = Row{Row: r}
	}
	return out
}

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

// node is the NODE column of the text formats: where the pods run for a
// live row that says, else the allocator's node.
func nodeOf(row Row) string {
	if len(row.BoundTo) > 0 {
		return strings.Join(row.BoundTo, ",")
	}
	return row.Node
}

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
				r.Summary.Placement = map[decisions.PlacementResult]int{}
			}
			r.Summary.Placement[row.Placement.Result]++
		}
		if row.Cutover != nil {
			if r.Summary.Cutover == nil {
				r.Summary.Cutover = map[cutover.Result]int{}
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

func objectOf(row Row) string {
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", objectOf(row), cutoverResult(row.Cutover), cutoverPods(row.Cutover), rehearsedPods(row.Rehearsed), cutoverNodes(row.Cutover), row.Outcome, truncate(cutoverHeadline(row.Cutover, row), 100))
		}
	} else if r.Forecast != nil {
		fmt.Fprintln(tw, "OBJECT\tCUTOVER\tPODS SERVED\tNODES TODAY→AFTER\tOUTCOME\tVERDICT\tREASON")
		for _, row := range r.Items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", objectOf(row), cutoverResult(row.Cutover), cutoverPods(row.Cutover), cutoverNodes(row.Cutover), row.Outcome, dash(row.Verdict), truncate(cutoverHeadline(row.Cutover, row), 110))
		}
	} else {
		fmt.Fprintln(tw, "OBJECT\tOUTCOME\tPLACEMENT\tVERDICT\tNODE\tALTERNATIVES\tREASON")
		for _, row := range r.Items {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", objectOf(row), outcomeOf(row), dash(placementShort(row.Placement)), dash(row.Verdict), dash(nodeOf(row)),
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
		for _, res := range cutover.Results {
			if n := r.Summary.Cutover[res]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, cutoverLabel(res)))
			}
		}
		on := ""
		if r.Forecast.Platform != "" {
			on = "platform " + r.Forecast.Platform + "; "
		}
		line += fmt.Sprintf("\nafter the switch (%s%d of %d nodes switch, GFD labels %s): %s", on, r.Forecast.Switched, r.Forecast.Nodes, r.Forecast.GFDLabels, strings.Join(parts, ", "))
		for _, p := range r.Forecast.Pools {
			line += fmt.Sprintf("\npool %s (%d nodes): autoscaler %s; adds a first node for claims: %s", p.Pool, p.Nodes, p.Autoscaler, p.FromZero)
			if p.Remedy != "" {
				line += " (" + p.Remedy + ")"
			}
		}
	}
	if x := r.Rehearsal; x != nil {
		line += fmt.Sprintf("\nrehearsed on Kubernetes %s (control plane: %s): %d of %d workloads bound as forecast", cmp.Or(x.Kubernetes, "of unknown release"), cmp.Or(x.Binaries, "-"), x.Workloads-x.Disagree, x.Workloads)
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
func outcomeOf(row Row) string {
	if row.Status != "" {
		return string(row.Outcome) + "/" + string(row.Status)
	}
	return string(row.Outcome)
}

func (r *Report) markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| Object | Outcome | Placement | Verdict | Node | Alternatives | Reason |\n|---|---|---|---|---|---|---|\n")
	for _, row := range r.Items {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", objectOf(row), outcomeOf(row), dash(placementShort(row.Placement)), dash(row.Verdict), dash(nodeOf(row)),
			dash(strings.Join(row.Alternatives, ", ")), strings.ReplaceAll(row.Headline(), "|", `\|`))
	}
	fmt.Fprintf(&b, "\n%s\n", r.summaryLine())
	_, err := io.WriteString(w, b.String())
	return err
}

// placementShort renders the placement answer in a few characters: "same 8" (the
// translation lands on the same 8 nodes), "+2 -1" (gains 2 nodes, loses 1),
// "unknown".
func placementShort(p *decisions.Placement) string {
	if p == nil {
		return ""
	}
	switch p.Result {
	case decisions.PlacementEqual:
		return fmt.Sprintf("same %d", p.Translated)
	case decisions.PlacementUnknown:
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
