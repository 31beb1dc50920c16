package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/claimbridge/claimbridge/translate"
)

// The cutover forecast (audit --forecast): every row decided against the
// fleet as it will be after a one-day switch from the device plugin to DRA
// (ResourceSlices forecast from today's nodes, the device plugin's
// resources gone from the nodes that switch), with what the switch does to
// it. The rows are the usual ones, decided against the forecast fleet; Row.Cutover
// says what the switch does, Report.Forecast what was forecast.

// CutoverResult is what the switch to DRA does to a row.
type CutoverResult string

// Cutover results, in the order the page shows them.
const (
	// CutoverMoves: translated, and the forecast fleet's DRA devices serve
	// the translation.
	CutoverMoves CutoverResult = "Moves"
	// CutoverServedByClass: stays as submitted, and a DeviceClass that maps
	// its extended resource (extendedResourceName, KEP-5004) serves it.
	CutoverServedByClass CutoverResult = "ServedByClass"
	// CutoverStaysLegacy: stays on the device plugin, on nodes the switch
	// leaves alone.
	CutoverStaysLegacy CutoverResult = "StaysLegacy"
	// CutoverBreaks: stays as submitted, and after the switch no node offers
	// what it asks for: Pending until someone acts.
	CutoverBreaks CutoverResult = "Breaks"
	// CutoverNotAffected: asks for nothing the switch replaces.
	CutoverNotAffected CutoverResult = "NotAffected"
)

// CutoverResults in page order.
var CutoverResults = []CutoverResult{CutoverBreaks, CutoverMoves, CutoverServedByClass, CutoverStaysLegacy, CutoverNotAffected}

// Cutover is what the switch does to one row.
type Cutover struct {
	Result CutoverResult `json:"result"`
	// Today counts the nodes where the pod as submitted can run before the
	// switch (they advertise what it asks for and pass its selectors and
	// taints); After those where it — its translation, when it moves — can
	// run after.
	Today int `json:"today"`
	After int `json:"after"`
	// Class is the DeviceClass that serves a ServedByClass row.
	Class string `json:"class,omitempty"`
	// Why says, for a row that breaks, what it lacks after the switch; the
	// row's Decisive reason says why claimbridge keeps it as submitted.
	Why string `json:"why,omitempty"`
}

// Forecast is what the cutover forecast assumed and produced.
type Forecast struct {
	// GFDLabels: whether GPU Feature Discovery's labels stay on the nodes
	// that switch ("keep") or go ("drop").
	GFDLabels string `json:"gfdLabels"`
	// Nodes of the fleet; Switched those the switch covers.
	Nodes    int `json:"nodes"`
	Switched int `json:"switched"`
	// Left: nodes with accelerators the switch leaves alone, and why.
	Left []ForecastNode `json:"left,omitempty"`
	// Devices forecast, by driver.
	Devices map[string]int `json:"devices,omitempty"`
	// NotForecast: drivers whose devices are not forecast, and why.
	NotForecast []ForecastNode `json:"notForecast,omitempty"`
	// Unknown: the attributes the labels cannot tell (left out of the
	// forecast devices, never invented).
	Unknown []string `json:"unknown,omitempty"`
	// Notes of the forecast (how a value was derived where a label does not
	// say it exactly).
	Notes []string `json:"notes,omitempty"`
	// Classes: the DeviceClasses the forecast assumes, and Suggested those
	// that would serve rows that break unchanged (extendedResourceName).
	Classes   []string         `json:"classes,omitempty"`
	Suggested []SuggestedClass `json:"suggested,omitempty"`
	// Caveats a platform team must plan for, each with its source.
	Caveats []Caveat `json:"caveats,omitempty"`
	// YAML of the forecast fleet (Nodes after the switch, ResourceSlices,
	// DeviceClasses), to review, edit and feed back with --fleet.
	YAML string `json:"yaml,omitempty"`
}

// ForecastNode names a node (or a driver on it) and why.
type ForecastNode struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// SuggestedClass is a DeviceClass that would serve rows that break as they
// are: the scheduler then makes their claims (KEP-5004).
type SuggestedClass struct {
	Resource string `json:"resource"`
	// Rows and Devices it would serve of those that break.
	Rows    int64  `json:"rows"`
	Devices int64  `json:"devices"`
	YAML    string `json:"yaml"`
}

// Caveat is something the switch changes that no row shows.
type Caveat struct {
	Text   string `json:"text"`
	Source string `json:"source"`
}

// cutoverRemedies replace the remedies that count on the device plugin
// staying, for the rows that break at the switch.
var cutoverRemedies = map[translate.ReasonCode]string{
	translate.ReasonNodeNamePreset: "after the switch the node no longer offers the device plugin's resource: let a scheduler place the pod " +
		"(a node selector on kubernetes.io/hostname instead of spec.nodeName) so that it is translated, or pin it to a node the switch leaves alone",
}

// cutoverPage is the page's cutover view.
type cutoverPage struct {
	F        *Forecast
	ByResult []cutoverCount
	Breaks   []blocker
	// Namespaces and Hardware: devices asked for today and servable after.
	Namespaces []servable
	Hardware   []servable
	Total      servable
}

type cutoverCount struct {
	Result CutoverResult
	count
}

// servable is what a group of rows asks for today and what the fleet still
// serves after the switch.
type servable struct {
	Key            string
	Today, After   int64
	Breaks         int64
	BreaksWorkload int64
}

func newCutoverPage(r *Report) *cutoverPage {
	if r.Forecast == nil {
		return nil
	}
	c := &cutoverPage{F: r.Forecast}
	counts := map[CutoverResult]count{}
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
	for _, res := range CutoverResults {
		if cc, ok := counts[res]; ok {
			c.ByResult = append(c.ByResult, cutoverCount{Result: res, count: cc})
		}
	}
	c.Breaks = blockersOf(r, func(row Row) bool { return row.Cutover != nil && row.Cutover.Result == CutoverBreaks })
	for i := range c.Breaks {
		if rem, ok := cutoverRemedies[c.Breaks[i].Code]; ok {
			c.Breaks[i].Remedy = rem
		}
	}
	c.Namespaces, c.Hardware = sortedServable(ns), sortedServable(hw)
	return c
}

func (s *servable) add(row Row) {
	d := row.Demand()
	s.Today += d
	if row.Cutover.Result == CutoverBreaks {
		s.Breaks += d
		s.BreaksWorkload++
	} else {
		s.After += d
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

// label is the result as the summary line says it.
func (r CutoverResult) label() string {
	switch r {
	case CutoverMoves:
		return "move"
	case CutoverServedByClass:
		return "served by an extendedResourceName class"
	case CutoverStaysLegacy:
		return "stay on the device plugin"
	case CutoverBreaks:
		return "break"
	}
	return "not affected"
}

func (c *Cutover) result() string {
	if c == nil {
		return "-"
	}
	return string(c.Result)
}

func (c *Cutover) nodes() string {
	if c == nil || c.Result == CutoverNotAffected {
		return "-"
	}
	return fmt.Sprintf("%d→%d", c.Today, c.After)
}

// headline is the row's one-line reason in a cutover forecast: why it
// breaks, or the row's own headline.
func (c *Cutover) headline(row Row) string {
	if c != nil && c.Result == CutoverBreaks && c.Why != "" {
		// The code first: the table cuts long lines.
		if d := row.Decisive; d != nil && d.Code != "" {
			return string(d.Code) + ": " + c.Why + "; kept as submitted: " + d.Message
		}
		if h := row.Headline(); h != "" {
			return c.Why + "; kept as submitted: " + h
		}
		return c.Why
	}
	if c != nil && c.Result == CutoverServedByClass {
		return "DeviceClass " + c.Class + " serves it as submitted (extendedResourceName)"
	}
	return row.Headline()
}

// servableTable is one table of the cutover view.
type servableTable struct {
	Title, Key string
	Rows       []servable
}
