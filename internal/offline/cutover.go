package offline

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/forecast"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// The cutover forecast over manifests (audit --forecast): package forecast
// forecasts the fleet after the switch, places the whole cluster and
// judges every workload; this file gives it the workloads, each pod
// template decided as Translate decides it, with its replicas, priority
// and creation time, and turns the judgment into the report's rows.

// CutoverOptions of a cutover forecast.
type CutoverOptions struct {
	// Policy to apply. Required.
	Policy *translate.Policy
	// Before is the fleet today; Forecast the options of the switch (its
	// Policy is this Policy).
	Before   *feasibility.Inventory
	Forecast forecast.Options
	// Quotas by namespace (nil: unknown).
	Quotas map[string][]*corev1.ResourceQuota
	// PriorityClasses of the cluster (the input's own are added): the
	// placement's order.
	PriorityClasses []*schedulingv1.PriorityClass
	// Check configures the feasibility checks.
	Check feasibility.Options
}

// Cutover forecasts the switch and judges every pod template of docs:
// the rows (each with its Cutover), the forecast summary, and the fleet
// after the switch as it was checked. docs are left as they are.
func Cutover(ctx context.Context, docs []manifest.Document, opts CutoverOptions) ([]report.Row, *cutover.Summary, *feasibility.Fleet, error) {
	items, j, err := forecastDocs(ctx, docs, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	rows := Rows(items)
	// Rows keeps the items with a decision on an object, as workloadsOf.
	i := 0
	for _, it := range items {
		if !rowed(it) {
			continue
		}
		c := j.Cutovers[i]
		rows[i].Cutover = &c
		i++
	}
	return rows, j.Summary, j.After, nil
}

// forecastDocs forecasts the switch for the pod templates of docs: the
// items as the first run decided them, and the forecast, its workloads in
// the items' order (those rowed).
func forecastDocs(ctx context.Context, docs []manifest.Document, opts CutoverOptions) ([]Item, *forecast.CutoverForecast, error) {
	fopts := opts.Forecast
	fopts.Policy = opts.Policy
	priorities := priorityValues(append(PriorityClassesOf(docs), opts.PriorityClasses...))
	var items []Item
	decideAll := func(ctx context.Context, after *feasibility.Fleet) ([]forecast.Workload, error) {
		// Each forecast decides the manifests as they are: a copy of them
		// (Translate rewrites the documents it translates).
		got, _, err := Translate(ctx, manifest.Clone(docs), Options{Policy: opts.Policy, Classes: after.Inventory.Classes, Quotas: opts.Quotas,
			Checker: after.Checker, Snapshot: after.Snapshot, Platform: fopts.Platform})
		if err != nil {
			return nil, err
		}
		if items == nil {
			items = got
		}
		return workloadsOf(got, priorities), nil
	}
	j, err := forecast.ForecastCutover(ctx, forecast.CutoverInput{Before: opts.Before, Options: fopts, Check: opts.Check, Decide: decideAll})
	if err != nil {
		return nil, nil, err
	}
	return items, j, nil
}

// rowed: the item is a row of the report (Rows) and a workload of the
// forecast.
func rowed(it Item) bool {
	if it.Decision == nil {
		return false
	}
	_, ok := it.Doc.Object.(metav1.Object)
	return ok
}

// workloadsOf are the items as the forecast places them, in Rows' order.
func workloadsOf(items []Item, priorities map[string]int32) []forecast.Workload {
	var out []forecast.Workload
	for _, it := range items {
		if !rowed(it) {
			continue
		}
		obj := it.Doc.Object.(metav1.Object)
		row := decisions.NewRow(it.Doc.Object.GetObjectKind().GroupVersionKind().Kind, obj, it.Doc.Where(), it.Decision)
		if it.Replicas != nil {
			row.Replicas = it.Replicas
		}
		w := forecast.Workload{Key: rowKey(row, it), Source: row.Source, Pod: it.Pod, Pods: row.Pods(), Created: obj.GetCreationTimestamp().Time, Decision: it.Decision}
		if it.Pod != nil {
			w.Priority = priorityOf(it.Pod, priorities)
		}
		out = append(out, w)
	}
	return out
}

// rowKey is "namespace/Kind/name", with ": path" for a template inside an
// object, as the report names a row.
func rowKey(row decisions.Row, it Item) string {
	k := row.Namespace + "/" + row.Kind + "/" + row.Name
	if it.Path != "" {
		k += ": " + it.Path
	}
	return k
}

// PriorityClassesOf are the PriorityClasses among the documents.
func PriorityClassesOf(docs []manifest.Document) []*schedulingv1.PriorityClass {
	var out []*schedulingv1.PriorityClass
	for _, d := range docs {
		if pc, ok := d.Object.(*schedulingv1.PriorityClass); ok {
			out = append(out, pc)
		}
	}
	return out
}

// priorityValues are the classes' values by name; "" is the value of the
// class marked globalDefault (0 without one).
func priorityValues(classes []*schedulingv1.PriorityClass) map[string]int32 {
	out := map[string]int32{}
	for _, pc := range classes {
		out[pc.Name] = pc.Value
		if pc.GlobalDefault {
			out[""] = pc.Value
		}
	}
	return out
}

// priorityOf is the priority kube-scheduler's queue sorts the pod by: its
// spec.priority when set, else its class's value (the admission plugin's).
func priorityOf(pod *corev1.Pod, values map[string]int32) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return values[pod.Spec.PriorityClassName]
}
