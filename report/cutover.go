package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// The cutover forecast (audit --forecast): every row decided against the
// fleet as it will be after a one-day switch from the device plugin to DRA
// (ResourceSlices forecast from today's nodes, the device plugin's
// resources gone from the nodes that switch), with what the switch does to
// it. The rows are the usual ones, decided against the forecast fleet; Row.Cutover
// says what the switch does, Report.Forecast what was forecast.

// cutoverRemedies replace the remedies that count on the device plugin
// staying, for the rows that break at the switch.
var cutoverRemedies = map[reason.Code]string{
	translate.ReasonNodeNamePreset: "after the switch the node no longer offers the device plugin's resource: let a scheduler place the pod " +
		"(a node selector on kubernetes.io/hostname instead of spec.nodeName) so that it is translated, or pin it to a node the switch leaves alone",
}

// cutoverPage is the page's cutover view.
type cutoverPage struct {
	F        *cutover.Summary
	ByResult []cutoverCount
	Breaks   []blocker
	// Short are the workloads served in part, or depending on the order,
	// and those the forecast cannot judge.
	Short []shortRow
	// Namespaces and Hardware: devices asked for today and servable after.
	Namespaces []servable
	Hardware   []servable
	Total      servable
	// Rehearsal: what a rehearsal on the real scheduler saw, when it ran.
	Rehearsal *rehearsal
}

type cutoverCount struct {
	Result cutover.Result
	count
}

// servable is what a group of rows is served today and what the whole
// cluster placed after the switch still gets: Today counts the devices of
// the rows some node serves today (not those NotServedToday), After those
// of the pods the placement serves, Breaks the devices served today and
// not after, Unjudged those of the rows the forecast cannot place.
type servable struct {
	Key            string
	Today, After   int64
	Breaks         int64
	BreaksWorkload int64
	Unjudged       int64
	// Ordered: the devices of After whose pods kube-scheduler may place
	// otherwise (OrderDependent rows); Least and Most bound After over
	// the orders (each row's Least and Most pods served).
	Ordered     int64
	Least, Most int64
}

func newCutoverPage(r *Report) *cutoverPage {
	if r.Forecast == nil {
		return nil
	}
	c := &cutoverPage{F: r.Forecast}
	counts := map[cutover.Result]count{}
	ns, hw := map[string]*servable{}, map[string]*servable{}
	for _, row := range r.Items {
		if row.Cutover == nil {
			continue
		}
		cc := counts[row.Cutover.Result]
		cc.add(row)
		counts[row.Cutover.Result] = cc
		if row.Demand() == 0 {
			continue
		}
		for _, g := range []struct {
			m   map[string]*servable
			key string
		}{{ns, cmp.Or(row.Namespace, "(cluster)")}, {hw, cmp.Or(row.Hardware, "(none)")}} {
			s, ok := g.m[g.key]
			if !ok {
				s = &servable{Key: g.key}
				g.m[g.key] = s
			}
			s.add(row)
		}
		c.Total.add(row)
	}
	for _, res := range cutover.Results {
		if cc, ok := counts[res]; ok {
			c.ByResult = append(c.ByResult, cutoverCount{Result: res, count: cc})
		}
	}
	c.Breaks = blockersOf(r, func(row Row) bool { return row.Cutover != nil && row.Cutover.Result == cutover.Breaks })
	for i := range c.Breaks {
		if rem, ok := cutoverRemedies[c.Breaks[i].Code]; ok {
			c.Breaks[i].Remedy = rem
		}
	}
	for _, row := range r.Items {
		switch cutoverOf(row) {
		case cutover.Partial, cutover.OrderDependent, cutover.Unjudged, cutover.NotCreatable:
			sr := shortRow{Object: objectOf(row), Cutover: row.Cutover}
			if row.Cutover.AutoscalingLost != nil {
				sr.Code = decide.ReasonAutoscalerIgnoresClaims
				sr.Remedy = r.reasons().Remedy(sr.Code)
			}
			c.Short = append(c.Short, sr)
		}
	}
	c.Namespaces, c.Hardware = sortedServable(ns), sortedServable(hw)
	c.Rehearsal = newRehearsal(r)
	return c
}

// shortRow is a workload not served in full, or not judged; Code and
// Remedy say what it loses besides (autoscaling), when it does.
type shortRow struct {
	Object  string
	Cutover *cutover.Effect
	Code    reason.Code
	Remedy  string
}

// cutoverOf is the row's cutover result, "" without one.
func cutoverOf(row Row) cutover.Result {
	if row.Cutover == nil {
		return ""
	}
	return row.Cutover.Result
}

func (s *servable) add(row Row) {
	d, c := row.Demand(), row.Cutover
	switch c.Result {
	case cutover.NotAffected:
		s.Today += d
		s.After += d
		s.Least += d
		s.Most += d
		return
	case cutover.Unjudged:
		s.Unjudged += d
		return
	case cutover.NotServedToday, cutover.NotCreatable:
		return
	}
	after := d / row.Pods() * c.Served
	if c.Pods == 0 { // a report judged without the whole-cluster placement
		after = d
		if c.Result == cutover.Breaks {
			after = 0
		}
	}
	if c.Today == 0 {
		return // not served today: it loses nothing at the switch
	}
	s.Today += d
	s.After += after
	least, most := after, after
	if c.Pods > 0 {
		l, m := c.Range()
		least, most = d/row.Pods()*l, d/row.Pods()*m
	}
	s.Least += least
	s.Most += most
	if c.Result == cutover.OrderDependent {
		s.Ordered += after
	}
	if after < d {
		s.Breaks += d - after
		s.BreaksWorkload++
	}
}

// sortedServable puts the groups that lose the most first.
func sortedServable(m map[string]*servable) []servable {
	out := make([]servable, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, *m[k])
	}
	slices.SortStableFunc(out, func(a, b servable) int { return cmp.Compare(b.Breaks, a.Breaks) })
	return out
}

// cutoverLabel is the result as the summary line says it.
func cutoverLabel(r cutover.Result) string {
	switch r {
	case cutover.Moves:
		return "move"
	case cutover.ServedByClass:
		return "served by an extendedResourceName class"
	case cutover.StaysLegacy:
		return "stay on the device plugin"
	case cutover.Breaks:
		return "break"
	case cutover.Partial:
		return "served in part"
	case cutover.OrderDependent:
		return "depend on the order"
	case cutover.NotServedToday:
		return "not served today either"
	case cutover.Unjudged:
		return "cannot be judged"
	case cutover.NotCreatable:
		return "cannot be created"
	}
	return "not affected"
}

func cutoverResult(c *cutover.Effect) string {
	if c == nil {
		return "-"
	}
	return string(c.Result)
}

// cutoverPods is "served/pods" for a row the placement judged, or
// "least–most/pods" where the order kube-scheduler places the cluster in
// decides.
func cutoverPods(c *cutover.Effect) string {
	if c == nil || c.Pods == 0 {
		return "-"
	}
	if least, most := c.Range(); least < most {
		return fmt.Sprintf("%d–%d/%d", least, most, c.Pods)
	}
	return fmt.Sprintf("%d/%d", c.Served, c.Pods)
}

func cutoverNodes(c *cutover.Effect) string {
	if c == nil || c.Result == cutover.NotAffected || c.Result == cutover.Unjudged || c.Result == cutover.NotCreatable {
		return "-"
	}
	return fmt.Sprintf("%d→%d", c.Today, c.After)
}

// cutoverHeadline is the row's one-line reason in a cutover forecast: why
// it is not served (in full), or the row's own headline.
func cutoverHeadline(c *cutover.Effect, row Row) string {
	if c == nil {
		return row.Headline()
	}
	if c.AutoscalingLost != nil {
		// Why starts with it; the code first, as the table cuts long lines.
		return string(decide.ReasonAutoscalerIgnoresClaims) + ": " + c.Why
	}
	switch c.Result {
	case cutover.Breaks, cutover.NotServedToday:
		if c.Why == "" {
			break
		}
		// The code first: the table cuts long lines.
		if d := row.Decisive; d != nil && d.Code != "" {
			return string(d.Code) + ": " + c.Why + "; kept as submitted: " + d.Message
		}
		if h := row.Headline(); h != "" {
			return c.Why + "; kept as submitted: " + h
		}
		return c.Why
	case cutover.Partial, cutover.OrderDependent, cutover.Unjudged, cutover.NotCreatable:
		return c.Why
	case cutover.ServedByClass:
		return "DeviceClass " + c.Class + " serves it as submitted (extendedResourceName)"
	}
	return row.Headline()
}

// servableTable is one table of the cutover view.
type servableTable struct {
	Title, Key string
	Rows       []servable
}

// rehearsed: some row says what a rehearsal on the real scheduler saw.
func (r *Report) rehearsed() bool {
	return slices.ContainsFunc(r.Items, func(row Row) bool { return row.Rehearsed != nil })
}

// rehearsedPods is "bound/pods", marked when it disagrees with the
// forecast.
func rehearsedPods(x *cutover.Rehearsed) string {
	if x == nil {
		return "-"
	}
	s := fmt.Sprintf("%d/%d", x.Bound, x.Pods)
	if !x.Agrees {
		s += " (not as forecast)"
	}
	return s
}

// rehearsal counts the rows a rehearsal saw, and those that agree with the
// forecast.
type rehearsal struct {
	Rows, Agree int
	Disagree    []string
	// Kubernetes is the release the rehearsal's control plane ran, and Binaries where
	// they came from (Report.Rehearsal).
	Kubernetes, Binaries string
}

func newRehearsal(r *Report) *rehearsal {
	var x rehearsal
	for _, row := range r.Items {
		if row.Rehearsed == nil {
			continue
		}
		x.Rows++
		if row.Rehearsed.Agrees {
			x.Agree++
		} else {
			x.Disagree = append(x.Disagree, objectOf(row))
		}
	}
	if x.Rows == 0 {
		return nil
	}
	if r.Rehearsal != nil {
		x.Kubernetes, x.Binaries = r.Rehearsal.Kubernetes, r.Rehearsal.Binaries
	}
	return &x
}
