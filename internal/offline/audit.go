package offline

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
	"github.com/claimbridge/claimbridge/translate/feasibility"
)

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
		rows = append(rows, report.NewRow(it.Doc.Object.GetObjectKind().GroupVersionKind().Kind, obj, it.Doc.Where(), it.Result, v))
	}
	return rows
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
