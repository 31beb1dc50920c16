// Package report is the audit report: one row per pod or workload with the
// translation outcome, the feasibility verdict and the reasons. The offline
// audit and the webhook produce the same rows; the JSON and YAML forms are a
// stable, versioned format (claimbridge.io/v1alpha1 AuditReport).
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/translate"
	"github.com/claimbridge/claimbridge/translate/feasibility"
)

// Report is the whole audit.
type Report struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Fleet      string  `json:"fleet,omitempty"`
	Policy     string  `json:"policy"`
	Summary    Summary `json:"summary"`
	Items      []Row   `json:"items"`
}

// Summary counts rows by outcome and verdict.
type Summary struct {
	Total      int            `json:"total"`
	Translate  int            `json:"translate"`
	KeepLegacy int            `json:"keepLegacy"`
	Skip       int            `json:"skip"`
	Verdicts   map[string]int `json:"verdicts,omitempty"`
}

// Row is one pod or workload.
type Row struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Source    string `json:"source,omitempty"`
	// Outcome after feasibility: Translate, KeepLegacy or Skip.
	Outcome translate.Outcome `json:"outcome"`
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
	// Reasons of translation, then of feasibility (code Feasibility*).
	Reasons []translate.Reason `json:"reasons"`
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
		case translate.OutcomeTranslate:
			r.Summary.Translate++
		case translate.OutcomeKeepLegacy:
			r.Summary.KeepLegacy++
		default:
			r.Summary.Skip++
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
var Formats = []string{"table", "json", "yaml", "markdown"}

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
	}
	return fmt.Errorf("unknown format %q (%s)", format, strings.Join(Formats, ", "))
}

// Headline is the main reason of a row, for one-line displays: the first
// warning, else the last reason (the decision).
func (row Row) Headline() string {
	for _, r := range row.Reasons {
		if r.Severity == translate.SeverityWarning {
			return string(r.Code) + ": " + r.Message
		}
	}
	if n := len(row.Reasons); n > 0 {
		return string(row.Reasons[n-1].Code) + ": " + row.Reasons[n-1].Message
	}
	return ""
}

func (row Row) object() string {
	if row.Namespace == "" {
		return row.Kind + "/" + row.Name
	}
	return row.Namespace + "/" + row.Kind + "/" + row.Name
}

func (r *Report) table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OBJECT\tOUTCOME\tVERDICT\tNODE\tALTERNATIVES\tREASON")
	for _, row := range r.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row.object(), row.Outcome, dash(row.Verdict), dash(row.Node),
			dash(strings.Join(row.Alternatives, ",")), truncate(row.Headline(), 110))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d objects: %d translate, %d keep legacy, %d skip\n", r.Summary.Total, r.Summary.Translate, r.Summary.KeepLegacy, r.Summary.Skip)
	return err
}

func (r *Report) markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| Object | Outcome | Verdict | Node | Alternatives | Reason |\n|---|---|---|---|---|---|\n")
	for _, row := range r.Items {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", row.object(), row.Outcome, dash(row.Verdict), dash(row.Node),
			dash(strings.Join(row.Alternatives, ", ")), strings.ReplaceAll(row.Headline(), "|", `\|`))
	}
	fmt.Fprintf(&b, "\n%d objects: %d translate, %d keep legacy, %d skip\n", r.Summary.Total, r.Summary.Translate, r.Summary.KeepLegacy, r.Summary.Skip)
	_, err := io.WriteString(w, b.String())
	return err
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

// Reason codes the audit adds to translation's.
const (
	ReasonFeasible   translate.ReasonCode = "Feasible"
	ReasonInfeasible translate.ReasonCode = "Infeasible"
)

// Decide combines a translation result with the feasibility verdict into
// the outcome claimbridge acts on: a translated pod is only kept translated
// when the fleet can serve it now or once devices are free.
func Decide(res *translate.Result, v *feasibility.Verdict) (translate.Outcome, []translate.Reason) {
	reasons := slices.Clone(res.Reasons)
	if res.Outcome != translate.OutcomeTranslate || v == nil {
		return res.Outcome, reasons
	}
	switch v.Kind {
	case feasibility.FitsNow, feasibility.FitsWhenFree:
		msg := fmt.Sprintf("%s on node %s", v.Kind, v.Node)
		reasons = append(reasons, translate.Reason{Code: ReasonFeasible, Severity: translate.SeverityInfo, Message: msg})
		return translate.OutcomeTranslate, reasons
	}
	for _, r := range verdictReasons(v) {
		reasons = append(reasons, translate.Reason{Code: ReasonInfeasible, Severity: translate.SeverityWarning, Message: r})
	}
	return translate.OutcomeKeepLegacy, reasons
}

func verdictReasons(v *feasibility.Verdict) []string {
	if len(v.Reasons) == 0 {
		return []string{fmt.Sprintf("%s (%s)", v.Kind, v.Code)}
	}
	out := make([]string, 0, len(v.Reasons))
	for _, r := range v.Reasons {
		out = append(out, fmt.Sprintf("%s (%s): %s", v.Kind, v.Code, r))
	}
	return out
}

// Row builds the report row of one object.
func NewRow(kind string, obj metav1.Object, source string, res *translate.Result, v *feasibility.Verdict) Row {
	outcome, reasons := Decide(res, v)
	row := Row{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Source: source, Outcome: outcome, Reasons: reasons}
	if res.Template != nil {
		row.Template = res.Template.Name
	}
	if v != nil {
		row.Verdict, row.Node = string(v.Kind), v.Node
		for _, r := range v.Results {
			row.Alternatives = append(row.Alternatives, r.Request)
			row.Devices = append(row.Devices, r.Driver+"/"+r.Pool+"/"+r.Device)
		}
		row.Alternatives = slices.Compact(row.Alternatives)
	}
	return row
}
