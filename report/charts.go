package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Charts are horizontal bars drawn as inline SVG on the server: one bar per
// group (namespace, hardware kind), as long as the devices the group asks
// for (the longest bar is the full width), split into the readiness
// categories. Positions are percentages of the chart's width, so a chart
// fits any window without scaling its text; each category has a fill
// pattern as well as a colour (report.css, the defs in the page), each
// segment a tooltip, and each chart a data table for screen readers and
// for reading without the picture.

// Layout of a chart, in CSS pixels.
const (
	chartRowHeight = 46 // label line and bar
	chartBarOffset = 21 // from the top of the row to the bar
	chartBarHeight = 20
	chartLabelBase = 15 // baseline of the label line
	// maxBars: further groups are drawn as one "other" bar.
	maxBars = 12
	// minTextWidth is the narrowest segment (percent of the width) that
	// shows its number.
	minTextWidth = 5.0
)

type chart struct {
	ID, Title string
	// Categories are the page's, in the order of the segments and cells.
	Categories []Category
	// Desc says in a sentence what the chart shows, for screen readers.
	Desc   string
	Bars   []bar
	Height int
	// Unit is what the bars measure.
	Unit string
}

type bar struct {
	Label        string
	Total        count
	LabelY, BarY int
	Segments     []segment
	Cells        []count // per category, for the data table
	Other        bool    // stands for several groups
	TextY        int
}

type segment struct {
	Category Category
	count
	X, W, TextX float64
	ShowText    bool
	Title       string
}

// groupChart draws the rows grouped by key ("" keys are left out unless
// keepEmpty).
func groupChart(cats []Category, id, title string, rows []Row, key func(Row) string, keepEmpty bool) chart {
	cells := map[string]map[string]count{}
	totals := map[string]count{}
	for _, row := range rows {
		k := key(row)
		if k == "" && !keepEmpty {
			continue
		}
		if cells[k] == nil {
			cells[k] = map[string]count{}
		}
		c := cells[k][categoryKey(row)]
		c.add(row)
		cells[k][categoryKey(row)] = c
		t := totals[k]
		t.add(row)
		totals[k] = t
	}
	keys := slices.Sorted(maps.Keys(cells))
	slices.SortStableFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(totals[b].Devices, totals[a].Devices), cmp.Compare(totals[b].Rows, totals[a].Rows))
	})
	type group struct {
		label string
		cells map[string]count
		other bool
	}
	var groups []group
	for i, k := range keys {
		if i == maxBars-1 && len(keys) > maxBars {
			rest := map[string]count{}
			for _, k := range keys[i:] {
				for cat, c := range cells[k] {
					r := rest[cat]
					r.Rows, r.Pods, r.Devices = r.Rows+c.Rows, r.Pods+c.Pods, r.Devices+c.Devices
					rest[cat] = r
				}
			}
			groups = append(groups, group{label: fmt.Sprintf("%d others", len(keys)-i), cells: rest, other: true})
			break
		}
		groups = append(groups, group{label: k, cells: cells[k]})
	}
	ch := chart{ID: id, Title: title, Unit: "devices", Categories: cats}
	var scale int64
	for _, g := range groups {
		var t int64
		for _, c := range g.cells {
			t += c.Devices
		}
		scale = max(scale, t)
	}
	for i, g := range groups {
		ch.Bars = append(ch.Bars, newBar(cats, g.label, g.cells, scale, i, g.other))
	}
	ch.Height = max(1, len(ch.Bars)) * chartRowHeight
	ch.Desc = describe(ch)
	return ch
}

// overallChart is one bar of all devices asked for, by category.
func overallChart(cats []Category, by map[string]count, total count) chart {
	ch := chart{ID: "chart-overall", Title: "Devices asked for, by readiness", Unit: "devices", Categories: cats}
	ch.Bars = []bar{newBar(cats, "All workloads", by, total.Devices, 0, false)}
	ch.Height = chartRowHeight
	ch.Desc = describe(ch)
	return ch
}

func newBar(cats []Category, label string, cells map[string]count, scale int64, i int, other bool) bar {
	b := bar{Label: label, Other: other, LabelY: i*chartRowHeight + chartLabelBase, BarY: i*chartRowHeight + chartBarOffset}
	b.TextY = b.BarY + chartBarHeight/2 + 5
	x := 0.0
	for _, cat := range cats {
		c := cells[cat.Key]
		b.Cells = append(b.Cells, c)
		b.Total.Rows, b.Total.Pods, b.Total.Devices = b.Total.Rows+c.Rows, b.Total.Pods+c.Pods, b.Total.Devices+c.Devices
		if c.Devices == 0 || scale == 0 {
			continue
		}
		w := float64(c.Devices) * 100 / float64(scale)
		b.Segments = append(b.Segments, segment{Category: cat, count: c, X: x, W: w, TextX: x + w/2, ShowText: w >= minTextWidth,
			Title: fmt.Sprintf("%s: %s %s (%s)", label, plural(c.Devices, "device", "devices"), strings.ToLower(cat.Label), plural(c.Rows, "workload", "workloads"))})
		x += w
	}
	return b
}

// describe sums a chart up in a sentence.
func describe(ch chart) string {
	var parts []string
	for _, b := range ch.Bars {
		var cats []string
		for i, c := range b.Cells {
			if c.Devices > 0 {
				cats = append(cats, fmt.Sprintf("%d %s", c.Devices, strings.ToLower(ch.Categories[i].Label)))
			}
		}
		s := fmt.Sprintf("%s: %s", b.Label, plural(b.Total.Devices, "device", "devices"))
		if len(cats) > 0 {
			s += " (" + strings.Join(cats, ", ") + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "No devices asked for."
	}
	return strings.Join(parts, "; ") + "."
}
