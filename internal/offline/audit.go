package offline

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/report"
	"github.com/claimbridge/claimbridge/translate"
	"github.com/claimbridge/claimbridge/translate/feasibility"
)

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
func Row(kind string, obj metav1.Object, source string, res *translate.Result, v *feasibility.Verdict) report.Row {
	outcome, reasons := Decide(res, v)
	row := report.Row{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Source: source, Outcome: outcome, Reasons: reasons}
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

// Check runs the feasibility check of a translation result (nil when the
// pod was not translated).
func Check(ctx context.Context, c *feasibility.Checker, snap *feasibility.Snapshot, res *translate.Result) *feasibility.Verdict {
	if res.Outcome != translate.OutcomeTranslate || res.Template == nil {
		return nil
	}
	v := c.Check(ctx, snap, res.Pod, []*resourceapi.ResourceClaimSpec{&res.Template.Spec.Spec})
	return &v
}

// Audit translates and checks every item against a fleet snapshot.
func Audit(ctx context.Context, items []Item, c *feasibility.Checker, snap *feasibility.Snapshot) []report.Row {
	var rows []report.Row
	for _, it := range items {
		if it.Result == nil {
			continue
		}
		obj, ok := it.Doc.Object.(metav1.Object)
		if !ok {
			continue
		}
		v := Check(ctx, c, snap, it.Result)
		rows = append(rows, Row(it.Doc.Object.GetObjectKind().GroupVersionKind().Kind, obj, it.Doc.Where(), it.Result, v))
	}
	return rows
}

// Classes returns the DeviceClasses of an inventory, for KEP-5004 deference.
func Classes(inv *feasibility.Inventory) []*resourceapi.DeviceClass {
	if inv == nil {
		return nil
	}
	return inv.Classes
}

// QuotasOf groups the ResourceQuota objects of the input by namespace, so
// that offline runs apply the same quota rule as the webhook.
func QuotasOf(docs []manifest.Document) map[string][]*corev1.ResourceQuota {
	out := map[string][]*corev1.ResourceQuota{}
	for _, d := range docs {
		if q, ok := d.Object.(*corev1.ResourceQuota); ok {
			out[q.Namespace] = append(out[q.Namespace], q)
		}
	}
	return out
}
