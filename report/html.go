package report

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/reason"
)

// The HTML page is rendered from the Report alone (the JSON form holds
// everything it shows), so `audit -o html` and `report render` of the
// audit's JSON give the same bytes. It is one self-contained file: styles,
// the script that sorts and filters the table, and the charts (SVG drawn
// here) are inline; it needs no network and reads well without script,
// without colour (every category has a pattern and a label) and on paper.

var (
	//go:embed templates/report.html.tmpl
	pageTemplate string
	//go:embed templates/report.css
	pageCSS string
	//go:embed templates/report.js
	pageJS string
	// liveCSS styles what only the webhook's page shows (Migrated, the
	// progress): the offline page's bytes do not change with it.
	//go:embed templates/report-live.css
	liveCSS string

	pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
		"pct":    func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "%" },
		"plural": plural,
		"join":   strings.Join,
		"short":  func(p *decisions.Placement) string { return placementShort(p) },
		"add1":   func(i int) int { return i + 1 },
		"int64":  func(i int) int64 { return int64(i) },
		"servableTable": func(title, key string, rows []servable) servableTable {
			return servableTable{Title: title, Key: key, Rows: rows}
		},
		// The forecast fleet is our own YAML, base64-encoded: a safe URL.
		"yamlURL": func(y string) template.URL {
			return template.URL("data:application/yaml;base64," + base64.StdEncoding.EncodeToString([]byte(y))) //nolint:gosec // our own data, encoded
		},
	}).Parse(pageTemplate))
)

// WriteHTML renders the report as one self-contained HTML page.
func (r *Report) WriteHTML(w io.Writer) error {
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, newPage(r)); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Category is where a row stands on the way to DRA.
type Category struct {
	Key, Label, Help string
}

// Categories of rows, in the order of the charts.
var categories = []Category{
	{Key: "now", Label: "Ready now", Help: "translated, and the fleet's DRA devices can serve it today (FitsNow)"},
	{Key: "free", Label: "Ready when free", Help: "translated; DRA devices that can serve it exist but are in use (FitsWhenFree)"},
	{Key: "waiting", Label: "Waiting", Help: "translated, and the pod is still Pending: its claim is not allocated yet (the row says for how long)"},
	{Key: "blocked", Label: "Blocked", Help: "stays on the device plugin: DRA cannot serve it, or it cannot be translated faithfully"},
	{Key: "skip", Label: "Skipped", Help: "not claimbridge's business: opted out, no mapped device request, already translated"},
}

// liveCategories are the categories of the webhook's page, whose rows
// say where their pods stand (Row.Status): Migrated first.
var liveCategories = []Category{
	{Key: "migrated", Label: "Migrated", Help: "translated, and the pods are bound to a node: DRA serves them (the row names the node)"},
	{Key: "now", Label: "Ready now", Help: "would move: audit mode would translate it, and the fleet's DRA devices can serve it today"},
	{Key: "free", Label: "Ready when free", Help: "would move once DRA devices are free (FitsWhenFree)"},
	categories[2],
	{Key: "kept", Label: "Kept", Help: "kept on the device plugin, which serves it, for a reason that asks nothing of anyone (DRA was busy when it came and the device plugin had room; a DeviceClass serves it as submitted)"},
	{Key: "blocked", Label: "Blocked", Help: "someone must act: kept on the device plugin because DRA cannot serve it or it cannot be translated faithfully, or no node serves it at all (the remedy is below)"},
	{Key: "skip", Label: "Skipped", Help: "not claimbridge's business (opted out, no mapped device), or never sent to the webhook (another scheduler, bound at creation, created before claimbridge): counted with their devices"},
}

// forecastCategories are the categories of a cutover forecast's page: the
// rows are decided against the fleet after the switch, and placed as one
// cluster; what the cutover section says of a row, the page says too (the
// keys are the readiness ones, for their patterns).
var forecastCategories = []Category{
	{Key: "now", Label: "Moves to DRA", Help: "served after the switch by DRA devices: translated (Moves), or as submitted through an extendedResourceName class (ServedByClass)"},
	{Key: "free", Label: "Keeps the device plugin", Help: "served after the switch as submitted, on nodes the switch leaves alone (StaysLegacy)"},
	{Key: "waiting", Label: "Served in part", Help: "some pods served after the switch, not all: the fleet is too small (Partial), or the workloads placed before take what it needs (OrderDependent)"},
	{Key: "blocked", Label: "Breaks", Help: "runs today and no pod of it is served after the switch (Breaks), the forecast cannot judge it (Unjudged: no pod template, or attributes the labels do not tell), or kube-apiserver refuses its pods (NotCreatable)"},
	{Key: "skip", Label: "Not affected", Help: "asks for nothing the switch replaces, or no node serves it today either (NotServedToday)"},
}

// forecastKeys are the category keys of the cutover results.
var forecastKeys = map[cutover.Result]string{
	cutover.Moves: "now", cutover.ServedByClass: "now", cutover.StaysLegacy: "free",
	cutover.Partial: "waiting", cutover.OrderDependent: "waiting",
	cutover.Breaks: "blocked", cutover.Unjudged: "blocked", cutover.NotCreatable: "blocked",
	cutover.NotServedToday: "skip", cutover.NotAffected: "skip",
}

// statusKeys are the category keys of the live statuses.
var statusKeys = map[decisions.Status]string{
	decisions.StatusMigrated: "migrated", decisions.StatusReadyNow: "now", decisions.StatusReadyWhenFree: "free",
	decisions.StatusWaiting: "waiting", decisions.StatusKept: "kept", decisions.StatusBlocked: "blocked", decisions.StatusSkipped: "skip",
}

// categoryKey is the key of the row's category: its live status when it
// has one, else its outcome and verdict.
func categoryKey(row Row) string {
	if k, ok := statusKeys[row.Status]; ok {
		return k
	}
	if row.Cutover != nil {
		return forecastKeys[row.Cutover.Result]
	}
	return categoryOf(row).Key
}

func categoryOf(row Row) Category {
	switch {
	case row.Outcome == reason.OutcomeTranslate && row.WaitingSince != nil:
		return categories[2]
	case row.Outcome == reason.OutcomeTranslate && row.Verdict == string(feasibility.FitsWhenFree):
		return categories[1]
	case row.Outcome == reason.OutcomeTranslate:
		return categories[0]
	case row.Outcome == reason.OutcomeKeepLegacy:
		return categories[3]
	}
	return categories[4]
}

// count is a number of rows, pods and devices.
type count struct {
	Rows, Pods, Devices int64
}

func (c *count) add(row Row) {
	c.Rows++
	c.Pods += row.Pods()
	c.Devices += row.Demand()
}

type page struct {
	R *Report
	// Live: the webhook's page, whose rows have statuses and which shows
	// the migration's progress.
	Live       bool
	Title      string
	Categories []Category
	Total      count
	ByCategory map[string]count
	// Never: blocked rows whose verdict is NeverFits.
	Never count
	// ReadyShare: the share of the devices asked for that DRA can serve now.
	ReadyShare int64
	Overall    chart
	Namespaces chart
	Hardware   chart
	Blockers   []blocker
	Placements []placementRow
	Rows       []tableRow
	Namespace  []string
	Fleet      *FleetSummary
	Cutover    *cutoverPage
	Classes    []keyCount
	Resources  []keyCount
	// Workloads: distinct workloads (live pages, whose rows are one per
	// workload and status).
	Workloads int
	// MigratedShare: the share of the devices asked for that DRA serves
	// (live pages).
	MigratedShare int64
	// CutoverShare: the share of the devices served today that the whole
	// cluster placed after the switch still gets (cutover forecasts).
	CutoverShare int64
	// Unseen: the rows of pods the webhook never saw; UnseenBy by reason.
	Unseen   count
	UnseenBy []blocker
	Progress *progressView
	CSS      template.CSS
	JS       template.JS
}

type keyCount struct {
	Key   string
	Count int64
}

// live reports whether the report is the webhook's: its rows have
// statuses, or it has the progress.
func (r *Report) live() bool {
	return r.Progress != nil || slices.ContainsFunc(r.Items, func(row Row) bool { return row.Status != "" })
}

func newPage(r *Report) *page {
	p := &page{R: r, Title: "Migration readiness", Categories: categories, ByCategory: map[string]count{}, Fleet: r.FleetSummary,
		CSS: template.CSS(pageCSS), JS: template.JS(pageJS)} // our own embedded files, not input
	if r.live() {
		p.Live, p.Categories, p.CSS = true, liveCategories, template.CSS(pageCSS+liveCSS) // our own embedded files
	}
	if r.Forecast != nil {
		p.Categories = forecastCategories
	}
	if r.Fleet != "" {
		p.Title += " — " + r.Fleet
	}
	byKey := map[string]Category{}
	for _, c := range p.Categories {
		byKey[c.Key] = c
	}
	namespaces := map[string]bool{}
	for _, row := range r.Items {
		c := byKey[categoryKey(row)]
		p.Total.add(row)
		cc := p.ByCategory[c.Key]
		cc.add(row)
		p.ByCategory[c.Key] = cc
		if c.Key == "blocked" && row.Verdict == string(feasibility.NeverFits) {
			p.Never.add(row)
		}
		namespaces[row.Namespace] = true
		p.Rows = append(p.Rows, newTableRow(row, c))
		if pl := row.Placement; pl != nil && pl.Result != decisions.PlacementEqual {
			p.Placements = append(p.Placements, placementRow{Object: objectOf(row), Placement: pl})
		}
	}
	if p.Total.Devices > 0 {
		p.ReadyShare = p.ByCategory["now"].Devices * 100 / p.Total.Devices
		p.MigratedShare = p.ByCategory["migrated"].Devices * 100 / p.Total.Devices
	}
	if p.Live {
		p.Workloads = r.workloads()
		for _, row := range r.Items {
			if row.Unseen {
				p.Unseen.add(row)
			}
		}
		p.UnseenBy = blockersOf(r, func(row Row) bool { return row.Unseen })
		p.Progress = newProgressView(r.Progress)
	}
	p.Namespace = slices.Sorted(maps.Keys(namespaces))
	p.Overall = overallChart(p.Categories, p.ByCategory, p.Total)
	p.Namespaces = groupChart(p.Categories, "chart-namespaces", "Devices asked for, by namespace and readiness", r.Items, func(row Row) string {
		return cmp.Or(row.Namespace, "(cluster)")
	}, true)
	p.Hardware = groupChart(p.Categories, "chart-hardware", "Devices asked for, by hardware kind and readiness", r.Items, func(row Row) string { return row.Hardware }, false)
	p.Blockers = blockers(r)
	p.Cutover = newCutoverPage(r)
	if p.Cutover != nil && p.Cutover.Total.Today > 0 {
		p.CutoverShare = p.Cutover.Total.After * 100 / p.Cutover.Total.Today
	}
	if f := r.FleetSummary; f != nil {
		for _, k := range slices.Sorted(maps.Keys(f.DevicesByClass)) {
			p.Classes = append(p.Classes, keyCount{k, int64(f.DevicesByClass[k])})
		}
		for _, k := range slices.Sorted(maps.Keys(f.DevicePluginResources)) {
			p.Resources = append(p.Resources, keyCount{k, f.DevicePluginResources[k]})
		}
	}
	return p
}

type placementRow struct {
	Object    string
	Placement *decisions.Placement
}

type tableRow struct {
	Row
	// Advisory: where the allocator found room, said as advice.
	Advisory string
	Object   string
	Category Category
	PerPod   []string
	Demand   int64
	Pods     int64
	Headline string
	Warnings int
}

func newTableRow(row Row, c Category) tableRow {
	t := tableRow{Row: row, Advisory: row.Advisory(), Object: objectOf(row), Category: c, Demand: row.Demand(), Pods: row.Pods(), Headline: row.Headline()}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(row.DevicesRequested)) {
		parts = append(parts, fmt.Sprintf("%d× %s", row.DevicesRequested[n], n))
	}
	t.PerPod = parts
	for _, r := range row.Reasons {
		if r.Severity == reason.SeverityWarning {
			t.Warnings++
		}
	}
	return t
}

// blocker is one reason that keeps rows of one hardware kind legacy.
type blocker struct {
	Code        reason.Code
	VerdictCode string
	Hardware    string
	count
	Objects []string
	Message string
	Remedy  string
}

// Label is the reason as shown: "Infeasible (NoMatchingDevices)".
func (b blocker) Label() string {
	if b.VerdictCode != "" {
		return string(b.Code) + " (" + b.VerdictCode + ")"
	}
	return string(b.Code)
}

// blockers ranks the reasons that keep rows legacy by the devices they hold
// back, per hardware kind. A row counts under the reason that decided it
// (Row.Decisive); a report without it (older versions) counts a row under
// each distinct warning, or its last reason when it has none. Rows Kept
// (the webhook's: the device plugin serves them, nothing to do) hold
// nothing back.
func blockers(r *Report) []blocker {
	return blockersOf(r, func(row Row) bool {
		return row.Outcome == reason.OutcomeKeepLegacy && row.Status != decisions.StatusKept
	})
}

// blockersOf ranks, like blockers, the deciding reasons of the rows keep
// selects.
func blockersOf(r *Report, keep func(Row) bool) []blocker {
	type key struct {
		code            reason.Code
		verdict, hwKind string
	}
	byKey := map[key]*blocker{}
	var order []key
	for _, row := range r.Items {
		if !keep(row) {
			continue
		}
		reasons := decidingReasons(r.reasons(), row)
		seen := map[key]bool{}
		for _, rs := range reasons {
			k := key{code: rs.Code, hwKind: row.Hardware}
			if rs.Code == decide.ReasonInfeasible {
				k.verdict = row.VerdictCode
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			b, ok := byKey[k]
			if !ok {
				b = &blocker{Code: k.code, VerdictCode: k.verdict, Hardware: k.hwKind, Message: rs.Message,
					Remedy: remedy(r.reasons(), k.code, k.verdict, k.hwKind, r.FleetSummary)}
				byKey[k] = b
				order = append(order, k)
			}
			b.add(row)
			b.Objects = append(b.Objects, objectOf(row))
		}
	}
	out := make([]blocker, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	slices.SortStableFunc(out, func(a, b blocker) int {
		return cmp.Or(cmp.Compare(b.Devices, a.Devices), cmp.Compare(b.Rows, a.Rows), strings.Compare(a.Label(), b.Label()), strings.Compare(a.Hardware, b.Hardware))
	})
	return out
}

// decidingReasons are the reasons that keep a row legacy: the decisive one,
// else (a report of an older version) its warnings that lead to an outcome
// of their own (the catalog's), or its last reason.
func decidingReasons(reasons reason.Catalog, row Row) []reason.Reason {
	if row.Decisive != nil && row.Decisive.Code != "" {
		return []reason.Reason{*row.Decisive}
	}
	var out []reason.Reason
	for _, rs := range row.Reasons {
		if e, known := reasons.Lookup(rs.Code); rs.Severity == reason.SeverityWarning && (!known || e.Outcome != "") {
			out = append(out, rs)
		}
	}
	if len(out) == 0 && len(row.Reasons) > 0 {
		out = row.Reasons[len(row.Reasons)-1:]
	}
	return out
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}
