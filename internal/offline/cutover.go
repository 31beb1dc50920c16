package offline

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/forecast"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// The cutover forecast: the workloads decided against the fleet as it will
// be after a one-day switch from the device plugin to DRA, each with what
// the switch does to it (report.Cutover).

// CutoverOptions of a cutover forecast.
type CutoverOptions struct {
	// Policy to apply. Required.
	Policy *translate.Policy
	// Forecast of the switch: the fleet before, the options of the
	// forecast (its Policy is this Policy).
	Before   *feasibility.Inventory
	Forecast forecast.Options
	// Quotas by namespace (nil: unknown).
	Quotas map[string][]*corev1.ResourceQuota
	// Check configures the feasibility checks.
	Check feasibility.Options
}

// Cutover forecasts the switch and decides every pod template of docs
// against the fleet after it: the rows (each with its Cutover), the
// forecast, and the fleet after the switch as it was checked. docs are
// rewritten in place as Translate does.
func Cutover(ctx context.Context, docs []manifest.Document, opts CutoverOptions) ([]report.Row, *report.Forecast, *feasibility.Fleet, error) {
	fopts := opts.Forecast
	fopts.Policy = opts.Policy
	fc, err := forecast.Forecast(opts.Before, fopts)
	if err != nil {
		return nil, nil, nil, err
	}
	before, err := feasibility.NewFleet(opts.Before, opts.Check)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("fleet before the switch: %w", err)
	}
	after, err := feasibility.NewFleet(fc.After, opts.Check)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("forecast fleet: %w", err)
	}
	items, _, err := Translate(ctx, docs, Options{Policy: opts.Policy, Classes: fc.After.Classes, Quotas: opts.Quotas,
		Checker: after.Checker, Snapshot: after.Snapshot})
	if err != nil {
		return nil, nil, nil, err
	}
	switched := switchedResources(fc)
	rows := Rows(items)
	// Rows skips items without a decision; walk both the same way.
	i := 0
	for _, it := range items {
		if it.Decision == nil {
			continue
		}
		if _, ok := it.Doc.Object.(metav1.Object); !ok {
			continue
		}
		rows[i].Cutover = cutoverOf(rows[i], it.Pod, before.Snapshot, after.Snapshot, switched, fc.After.Classes, fc.After.Nodes)
		i++
	}
	f, err := forecastSummary(opts.Policy, fc, fopts.GFDLabels, rows)
	if err != nil {
		return nil, nil, nil, err
	}
	return rows, f, after, nil
}

// cutoverOf says what the switch does to one row: pod is the template as
// submitted.
func cutoverOf(row report.Row, pod *corev1.Pod, before, after *feasibility.Snapshot, switched map[corev1.ResourceName]bool, classes []*resourceapi.DeviceClass, afterNodes []*corev1.Node) *report.Cutover {
	c := &report.Cutover{Today: before.LegacyNodes(pod)}
	asks := extendedResources(pod)
	if !slices.ContainsFunc(asks, func(n corev1.ResourceName) bool { return switched[n] }) {
		c.Result, c.After = report.CutoverNotAffected, after.LegacyNodes(pod)
		return c
	}
	switch {
	case row.Outcome == translate.OutcomeTranslate:
		c.Result = report.CutoverMoves
		if row.Placement != nil {
			c.After = row.Placement.Translated
		} else if row.Node != "" {
			c.After = 1
		}
	case after.LegacyNodes(pod) > 0:
		c.Result, c.After = report.CutoverStaysLegacy, after.LegacyNodes(pod)
	case row.Decisive != nil && row.Decisive.Code == translate.ReasonDeferToExtendedResource:
		c.Result = report.CutoverServedByClass
		c.Class = classFor(asks, classes)
	default:
		c.Result = report.CutoverBreaks
		c.Why = whyBreaks(asks, switched, afterNodes)
	}
	return c
}

// whyBreaks says what a pod that breaks lacks after the switch: the
// resources no node offers any more, or the nodes that still offer them
// and do not take it.
func whyBreaks(asks []corev1.ResourceName, switched map[corev1.ResourceName]bool, nodes []*corev1.Node) string {
	var gone, left []string
	offering := map[string]bool{}
	for _, n := range asks {
		if !switched[n] {
			continue
		}
		found := false
		for _, node := range nodes {
			if q, ok := node.Status.Allocatable[n]; ok && !q.IsZero() {
				found = true
				offering[node.Name] = true
			}
		}
		if found {
			left = append(left, string(n))
		} else {
			gone = append(gone, string(n))
		}
	}
	if len(gone) > 0 {
		return "after the switch no node offers " + strings.Join(gone, ", ")
	}
	names := slices.Sorted(maps.Keys(offering))
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("%d more", len(offering)-3))
	}
	verb := "offers"
	if len(offering) > 1 {
		verb = "offer"
	}
	return fmt.Sprintf("after the switch only %s still %s %s, and the pod cannot run there (node selector, affinity, taints or nodeName)",
		strings.Join(names, ", "), verb, strings.Join(left, ", "))
}

// extendedResources the pod asks for, sorted.
func extendedResources(pod *corev1.Pod) []corev1.ResourceName {
	seen := map[corev1.ResourceName]bool{}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, ct := range list {
			for _, rl := range []corev1.ResourceList{ct.Resources.Limits, ct.Resources.Requests} {
				for n, q := range rl {
					if strings.Contains(string(n), "/") && !strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix) && !q.IsZero() {
						seen[n] = true
					}
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// switchedResources are the extended resources the switch takes from at
// least one node.
func switchedResources(fc *forecast.Result) map[corev1.ResourceName]bool {
	out := map[corev1.ResourceName]bool{}
	for _, n := range fc.Nodes {
		if !n.Switched {
			continue
		}
		for _, d := range n.Drivers {
			for _, r := range d.Resources {
				out[r] = true
			}
		}
	}
	return out
}

// classFor names the DeviceClass that maps one of the resources.
func classFor(resources []corev1.ResourceName, classes []*resourceapi.DeviceClass) string {
	for _, c := range classes {
		if c.Spec.ExtendedResourceName != nil && slices.Contains(resources, corev1.ResourceName(*c.Spec.ExtendedResourceName)) {
			return c.Name
		}
	}
	return ""
}

// forecastSummary is what the report says of the forecast.
func forecastSummary(p *translate.Policy, fc *forecast.Result, gfd forecast.GFDLabels, rows []report.Row) (*report.Forecast, error) {
	f := &report.Forecast{GFDLabels: string(cmp.Or(gfd, forecast.GFDLabelsDrop)), Nodes: len(fc.Nodes), Devices: map[string]int{}, Caveats: Caveats}
	unknown, notes := map[string]bool{}, map[string]bool{}
	for _, n := range fc.Nodes {
		if n.Switched {
			f.Switched++
		} else if len(n.Drivers) > 0 || n.Why != "" && !strings.HasPrefix(n.Why, "no accelerator") {
			f.Left = append(f.Left, report.ForecastNode{Name: n.Name, Why: n.Why})
		}
		for _, d := range n.Drivers {
			if d.NotForecast != "" {
				f.NotForecast = append(f.NotForecast, report.ForecastNode{Name: n.Name + " " + d.Driver, Why: d.NotForecast})
				continue
			}
			if n.Switched {
				f.Devices[d.Driver] += d.Devices
			}
			for _, u := range d.Unknown {
				unknown[u] = true
			}
			for _, x := range d.Notes {
				notes[x] = true
			}
		}
	}
	f.Unknown, f.Notes = slices.Sorted(maps.Keys(unknown)), slices.Sorted(maps.Keys(notes))
	for _, c := range fc.After.Classes {
		f.Classes = append(f.Classes, c.Name)
	}
	var b bytes.Buffer
	if err := fc.WriteYAML(&b); err != nil {
		return nil, fmt.Errorf("forecast fleet: %w", err)
	}
	f.YAML = b.String()
	s, err := suggest(p, fc, rows)
	if err != nil {
		return nil, err
	}
	f.Suggested = s
	return f, nil
}

// suggest names, per extended resource of the rows that break, the
// DeviceClass with extendedResourceName that would let the scheduler serve
// them as submitted (KEP-5004), when no class of the forecast maps it yet.
func suggest(p *translate.Policy, fc *forecast.Result, rows []report.Row) ([]report.SuggestedClass, error) {
	mapped := map[string]bool{}
	for _, c := range fc.After.Classes {
		if c.Spec.ExtendedResourceName != nil {
			mapped[*c.Spec.ExtendedResourceName] = true
		}
	}
	byResource := map[string]*report.SuggestedClass{}
	for _, row := range rows {
		if row.Cutover == nil || row.Cutover.Result != report.CutoverBreaks {
			continue
		}
		for res, n := range row.DevicesRequested {
			if mapped[res] {
				continue
			}
			s, ok := byResource[res]
			if !ok {
				s = &report.SuggestedClass{Resource: res}
				byResource[res] = s
			}
			s.Rows++
			s.Devices += n * row.Pods()
		}
	}
	var out []report.SuggestedClass
	for _, res := range slices.Sorted(maps.Keys(byResource)) {
		class, ok := classServing(p, fc.After.Classes, res)
		if !ok {
			continue
		}
		s := byResource[res]
		y, err := yaml.Marshal(class)
		if err != nil {
			return nil, err
		}
		s.YAML = string(y)
		out = append(out, *s)
	}
	return out, nil
}

// classServing is the DeviceClass that would serve the extended resource
// as submitted: a copy of the class the policy maps the resource to (with
// the rule's selectors), with extendedResourceName set.
func classServing(p *translate.Policy, classes []*resourceapi.DeviceClass, resource string) (*resourceapi.DeviceClass, bool) {
	rule, ok := p.LegacyResource(corev1.ResourceName(resource), nil)
	if !ok || rule.Shared {
		return nil, false
	}
	for _, c := range classes {
		if c.Name != rule.DeviceClassName {
			continue
		}
		out := &resourceapi.DeviceClass{TypeMeta: metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "DeviceClass"},
			ObjectMeta: metav1.ObjectMeta{Name: c.Name + "-extended"}, Spec: *c.Spec.DeepCopy()}
		for _, sel := range rule.Selectors {
			out.Spec.Selectors = append(out.Spec.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: sel}})
		}
		r := resource
		out.Spec.ExtendedResourceName = &r
		return out, true
	}
	return nil, false
}
