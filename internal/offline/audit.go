package offline

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/podtemplates"
	"github.com/claimbridge/claimbridge/report"
)

// Rows are the report rows of the items: one per pod template, and one per
// object that asks for devices outside any template.
func Rows(items []Item) []report.Row {
	var rows []report.Row
	for _, it := range items {
		if it.Decision == nil {
			continue
		}
		obj, ok := it.Doc.Object.(metav1.Object)
		if !ok {
			continue
		}
		row := decisions.NewRow(it.Doc.Object.GetObjectKind().GroupVersionKind().Kind, obj, it.Doc.Where(), it.Decision)
		row.Path = it.Path
		if it.Replicas != nil {
			row.Replicas = it.Replicas
		}
		if it.Rule != podtemplates.RuleBuiltin {
			row.Rule = string(it.Rule)
		}
		rows = append(rows, report.Row{Row: row})
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

// ClassesOf lists the DeviceClasses of the input, in input order (the last
// of one name wins, as applying the files would): they are part of the
// fleet offline, the way the DRA drivers' demos ship their classes in the
// same files as the pods that use them.
func ClassesOf(docs []manifest.Document) []*resourceapi.DeviceClass {
	var out []*resourceapi.DeviceClass
	for _, d := range docs {
		if c, ok := d.Object.(*resourceapi.DeviceClass); ok {
			out = slices.DeleteFunc(out, func(o *resourceapi.DeviceClass) bool { return o.Name == c.Name })
			out = append(out, c)
		}
	}
	return out
}
