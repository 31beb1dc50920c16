// Package reportpage reads a rendered HTML report back, as a browser left
// it after its scripts ran, and compares what the page shows with the JSON
// report it was rendered from. The expected numbers are computed here from
// the report's rows, not by the renderer's code, so that a test that uses
// it checks the renderer against the data.
package reportpage

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/html"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
)

// Page is a parsed DOM.
type Page struct{ root *html.Node }

// Parse parses a serialised DOM.
func Parse(dom string) (*Page, error) {
	n, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		return nil, err
	}
	return &Page{root: n}, nil
}

// All returns the elements for which match is true, in document order.
func (p *Page) All(match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for n := range p.root.Descendants() {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
	}
	return out
}

// Attr returns an attribute's value and whether it is there.
func Attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// Text is the text content of a node.
func Text(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

// HasClass reports whether an element has a class.
func HasClass(n *html.Node, class string) bool {
	v, _ := Attr(n, "class")
	return slices.Contains(strings.Fields(v), class)
}

// WithAttr matches elements that have the attribute with that value ("" matches any value).
func WithAttr(key, value string) func(*html.Node) bool {
	return func(n *html.Node) bool {
		v, ok := Attr(n, key)
		return ok && (value == "" || v == value)
	}
}

// Element matches elements by tag and, if given, class.
func Element(tag, class string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == tag && (class == "" || HasClass(n, class)) }
}

// Rows are the rows of the workload table, in the order shown, with
// whether each is shown (not hidden by the filter).
func (p *Page) Rows() (objects []string, shown []bool) {
	for _, tr := range p.All(func(n *html.Node) bool { return n.Data == "tr" && HasClass(n, "row") }) {
		var obj string
		for _, c := range p.within(tr, Element("code", "obj")) {
			obj = Text(c)
		}
		_, hidden := Attr(tr, "hidden")
		objects, shown = append(objects, obj), append(shown, !hidden)
	}
	return objects, shown
}

func (p *Page) within(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && match(d) {
			out = append(out, d)
		}
	}
	return out
}

// expected are the numbers a page must show for a report.
type expected struct {
	workloads, devices int64
	rows, devs         map[string]int64 // by readiness category
	never              int64
	// chart cells: chart → bar label → category → devices
	charts map[string]map[string]map[string]int64
}

// statusKeys are the categories of the webhook's rows, by status.
var statusKeys = map[decisions.Status]string{
	decisions.StatusMigrated: "migrated", decisions.StatusReadyNow: "now", decisions.StatusReadyWhenFree: "free",
	decisions.StatusWaiting: "waiting", decisions.StatusKept: "kept", decisions.StatusBlocked: "blocked", decisions.StatusSkipped: "skip",
}

// cutoverKeys are the categories of a cutover forecast's rows: what the
// cutover section says of each.
var cutoverKeys = map[cutover.Result]string{
	cutover.Moves: "now", cutover.ServedByClass: "now", cutover.StaysLegacy: "free",
	cutover.Partial: "waiting", cutover.OrderDependent: "waiting",
	cutover.Breaks: "blocked", cutover.Unjudged: "blocked", cutover.NotCreatable: "blocked",
	cutover.NotServedToday: "skip", cutover.NotAffected: "skip",
}

func readiness(row report.Row) string {
	if k, ok := statusKeys[row.Status]; ok {
		return k
	}
	if row.Cutover != nil {
		return cutoverKeys[row.Cutover.Result]
	}
	switch {
	case row.Outcome == reason.OutcomeTranslate && row.WaitingSince != nil:
		return "waiting"
	case row.Outcome == reason.OutcomeTranslate && row.Verdict == "FitsWhenFree":
		return "free"
	case row.Outcome == reason.OutcomeTranslate:
		return "now"
	case row.Outcome == reason.OutcomeKeepLegacy:
		return "blocked"
	}
	return "skip"
}

func demand(row report.Row) int64 {
	var n int64
	for _, v := range row.DevicesRequested {
		n += v
	}
	pods := int64(1) // a row that does not say stands for one pod
	if row.Replicas != nil {
		pods = int64(*row.Replicas)
	}
	return n * pods
}

func expect(rep *report.Report) expected {
	e := expected{rows: map[string]int64{}, devs: map[string]int64{}, charts: map[string]map[string]map[string]int64{
		"chart-namespaces": {}, "chart-hardware": {}, "chart-overall": {},
	}}
	cell := func(chart, label, cat string, v int64) {
		m := e.charts[chart]
		if m[label] == nil {
			m[label] = map[string]int64{}
		}
		m[label][cat] += v
	}
	for _, row := range rep.Items {
		c, d := readiness(row), demand(row)
		e.workloads++
		e.devices += d
		e.rows[c]++
		e.devs[c] += d
		if c == "blocked" && row.Verdict == "NeverFits" {
			e.never++
		}
		ns := row.Namespace
		if ns == "" {
			ns = "(cluster)"
		}
		cell("chart-namespaces", ns, c, d)
		cell("chart-overall", "All workloads", c, d)
		if row.Hardware != "" {
			cell("chart-hardware", row.Hardware, c, d)
		}
	}
	return e
}

// Check compares the page with the report it was rendered from: the
// headline numbers, the bars and segments of the charts, the rows of the
// table, the placement counts and the fleet summary. It also checks that
// the page's script ran (the filter controls are shown). Charts that merge
// small groups into an "others" bar are compared group by group only up
// to that bar.
func (p *Page) Check(rep *report.Report) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	e := expect(rep)
	if e.workloads != int64(rep.Summary.Total) {
		fail("the report's summary says %d rows, its items are %d", rep.Summary.Total, e.workloads)
	}
	kpi := func(key string) (int64, bool) {
		ns := p.All(WithAttr("data-kpi", key))
		if len(ns) != 1 {
			fail("%d elements with data-kpi=%s on the page, want 1", len(ns), key)
			return 0, false
		}
		v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(Text(ns[0])), "%"), 10, 64)
		if err != nil {
			fail("data-kpi=%s: %q is not a number", key, Text(ns[0]))
			return 0, false
		}
		return v, true
	}
	want := map[string]int64{"workloads": e.workloads, "devices": e.devices, "never": e.never}
	if rep.Forecast != nil {
		delete(want, "never") // a forecast's blocked rows are those that break
	}
	if live(rep) {
		// One row per workload and status: the workloads are the distinct ones.
		distinct := map[string]bool{}
		for _, row := range rep.Items {
			distinct[row.Kind+"/"+row.Namespace+"/"+row.Name] = true
		}
		want["workloads"] = int64(len(distinct))
	}
	cats := []string{"now", "free", "waiting", "blocked", "skip"}
	if live(rep) {
		cats = append(cats, "migrated", "kept")
		if e.devices > 0 {
			want["migrated-share"] = e.devs["migrated"] * 100 / e.devices
		}
	}
	for _, c := range cats {
		want[c], want[c+"-devices"] = e.rows[c], e.devs[c]
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got, ok := kpi(k); ok && got != want[k] {
			fail("headline %s = %d, the report says %d", k, got, want[k])
		}
	}
	if got, ok := kpi("now"); ok && !live(rep) && rep.Forecast == nil && got != int64(summaryNow(rep)) {
		fail("headline now = %d, the report's summary has %d translations that fit now", got, summaryNow(rep))
	}
	if e.devices > 0 {
		if got, ok := kpi("ready-share"); ok && got != e.devs["now"]*100/e.devices {
			fail("ready share = %d%%, want %d%%", got, e.devs["now"]*100/e.devices)
		}
	}

	for _, id := range []string{"chart-overall", "chart-namespaces", "chart-hardware"} {
		wantBars := e.charts[id]
		svgs := p.All(func(n *html.Node) bool { v, _ := Attr(n, "data-chart"); return n.Data == "svg" && v == id })
		if len(wantBars) == 0 {
			continue
		}
		if len(svgs) != 1 {
			fail("%s: %d charts on the page, want 1", id, len(svgs))
			continue
		}
		bars := p.within(svgs[0], Element("g", "bar"))
		seen := 0
		var sum int64
		for _, g := range bars {
			label, _ := Attr(g, "data-label")
			total, _ := Attr(g, "data-devices")
			segs := map[string]int64{}
			var segSum int64
			for _, r := range p.within(g, Element("rect", "seg")) {
				cat, _ := Attr(r, "data-category")
				v, _ := Attr(r, "data-devices")
				n, _ := strconv.ParseInt(v, 10, 64)
				segs[cat] += n
				segSum += n
			}
			tn, _ := strconv.ParseInt(total, 10, 64)
			sum += tn
			if segSum != tn {
				fail("%s bar %q: segments add up to %d devices, the bar says %d", id, label, segSum, tn)
			}
			wb, ok := wantBars[label]
			if !ok {
				if strings.HasSuffix(label, " others") {
					continue
				}
				fail("%s: bar %q is not a group of the report", id, label)
				continue
			}
			seen++
			for cat, v := range wb {
				if v != segs[cat] {
					fail("%s bar %q: %d devices %s, the report says %d", id, label, segs[cat], cat, v)
				}
			}
		}
		var wantSum int64
		for _, b := range wantBars {
			for _, v := range b {
				wantSum += v
			}
		}
		if sum != wantSum {
			fail("%s: bars add up to %d devices, the report to %d", id, sum, wantSum)
		}
		if seen == 0 {
			fail("%s: no bar of the report's groups", id)
		}
	}

	objects, _ := p.Rows()
	var wantObjects []string
	for _, row := range rep.Items {
		o := row.Kind + "/" + row.Name
		if row.Namespace != "" {
			o = row.Namespace + "/" + o
		}
		wantObjects = append(wantObjects, o)
	}
	if !slices.Equal(slices.Sorted(slices.Values(objects)), slices.Sorted(slices.Values(wantObjects))) {
		fail("the table lists %q, the report %q", objects, wantObjects)
	}

	for k, v := range rep.Summary.Placement {
		got := p.All(WithAttr("data-placement", string(k)))
		if len(got) != 1 || strings.TrimSpace(Text(got[0])) != strconv.Itoa(v) {
			fail("placement %s: the page does not show %d", k, v)
		}
	}

	if f := rep.FleetSummary; f != nil {
		for key, v := range map[string]int{"nodes": f.Nodes, "dra-nodes": f.DRANodes, "device-plugin-nodes": f.DevicePluginNodes, "devices": f.Devices} {
			got := p.All(WithAttr("data-fleet", key))
			if len(got) != 1 || strings.TrimSpace(Text(got[0])) != strconv.Itoa(v) {
				fail("fleet %s: the page does not show %d", key, v)
			}
		}
		for class, v := range f.DevicesByClass {
			got := p.All(WithAttr("data-class", class))
			if len(got) != 1 || strings.TrimSpace(Text(got[0])) != strconv.Itoa(v) {
				fail("fleet class %s: the page does not show %d", class, v)
			}
		}
	}

	forms := p.All(Element("form", "controls"))
	if len(forms) != 1 {
		fail("%d filter forms, want 1", len(forms))
	} else if _, hidden := Attr(forms[0], "hidden"); hidden {
		fail("the filter controls are hidden: the page's script did not run")
	}
	return errors.Join(errs...)
}

// live: the webhook's report, whose rows say where their pods stand.
func live(rep *report.Report) bool {
	return rep.Progress != nil || slices.ContainsFunc(rep.Items, func(row report.Row) bool { return row.Status != "" })
}

func summaryNow(rep *report.Report) int {
	return rep.Summary.Translate - rep.Summary.Verdicts["FitsWhenFree"]
}
