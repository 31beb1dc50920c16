package offline

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate/feasibility"
)

// Audit decides for every item with a pod template against a fleet
// snapshot: the same decision path as the webhook (decide.Pod).
func Audit(ctx context.Context, items []Item, opts Options, c *feasibility.Checker, snap *feasibility.Snapshot) ([]report.Row, error) {
	var rows []report.Row
	for _, it := range items {
		if it.Result == nil {
			continue
		}
		obj, ok := it.Doc.Object.(metav1.Object)
		if !ok {
			continue
		}
		pt, ok := manifest.PodOf(it.Doc.Object.DeepCopyObject())
		if !ok {
			continue
		}
		d, err := decide.Pod(ctx, decide.Input{Pod: pt.Pod, Policy: opts.Policy, Classes: opts.Classes, Quotas: opts.Quotas[pt.Pod.Namespace],
			Checker: c, Snapshot: snap})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", it.Doc.Where(), err)
		}
		rows = append(rows, report.NewRow(it.Doc.Object.GetObjectKind().GroupVersionKind().Kind, obj, it.Doc.Where(), d))
	}
	return rows, nil
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
