// Command dashboard renders the panels of claimbridge's Grafana dashboard
// (charts/claimbridge/files/dashboard.json) into an HTML page — each
// panel's title, type, description and queries, laid out by its gridPos on
// Grafana's 24-column grid — and screenshots it with headless Chromium
// (hack/chromium.sh installs it) into docs/dashboard.png. No Grafana runs:
// the picture shows the dashboard's layout and queries, not data.
//
//	go run ./hack/dashboard [-dashboard charts/claimbridge/files/dashboard.json] [-html _output/dashboard.html] [-png docs/dashboard.png]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"time"

	"github.com/claimbridge/claimbridge/internal/testing/browser"
)

// Dashboard is the part of Grafana's dashboard JSON the page shows.
type Dashboard struct {
	Title       string  `json:"title"`
	Description string  `json:"description"`
	Panels      []Panel `json:"panels"`
}

// Panel is one panel of the dashboard.
type Panel struct {
	Title       string `json:"title"`
	Type        string `json:"type"`
	Description string `json:"description"`
	GridPos     struct {
		X int `json:"x"`
		Y int `json:"y"`
		W int `json:"w"`
		H int `json:"h"`
	} `json:"gridPos"`
	Targets []Target `json:"targets"`
	Field   struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

// Target is one query of a panel.
type Target struct {
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat"`
}

// Load reads a dashboard.
func Load(path string) (*Dashboard, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}

// rowHeight is the height of one grid unit in pixels (Grafana's is 30 plus
// a margin).
const rowHeight = 36

var page = template.Must(template.New("page").Funcs(template.FuncMap{"add": func(a, b int) int { return a + b }}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{.D.Title}}</title>
<style>
body { margin: 0; background: #111217; color: #ccccdc; font: 13px/1.35 "DejaVu Sans", Arial, sans-serif; }
header { padding: 14px 18px 6px; }
header h1 { margin: 0; font-size: 20px; color: #fff; font-weight: 500; }
header p { margin: 4px 0 0; color: #8e8e9e; }
.grid { display: grid; grid-template-columns: repeat(24, 1fr); grid-auto-rows: {{.Row}}px; gap: 8px; padding: 10px 18px 18px; }
.panel { background: #181b1f; border: 1px solid #2c3235; border-radius: 3px; padding: 8px 10px; overflow: hidden; display: flex; flex-direction: column; }
.panel h2 { margin: 0 0 2px; font-size: 13px; font-weight: 600; color: #fff; display: flex; justify-content: space-between; gap: 6px; }
.type { font-weight: 400; font-size: 11px; color: #6e9fff; border: 1px solid #2f4b7c; border-radius: 2px; padding: 0 4px; white-space: nowrap; }
.desc { color: #8e8e9e; font-size: 11.5px; margin-bottom: 4px; }
.q { font: 11px/1.3 "DejaVu Sans Mono", monospace; color: #b9c3d6; background: #0f1114; border-left: 3px solid #73bf69; padding: 3px 6px; margin-top: 4px; word-break: break-all; }
.q b { color: #f2cc0c; font-weight: 400; }
.stat .q { border-left-color: #5794f2; }
.unit { color: #6e6e7e; font-size: 11px; margin-top: auto; }
</style></head><body>
<header><h1>{{.D.Title}}</h1><p>Rendered from the panels of charts/claimbridge/files/dashboard.json (title, type, layout and queries) — not Grafana, no data.</p></header>
<div class="grid">
{{range .D.Panels}}<div class="panel {{.Type}}" style="grid-column: {{add .GridPos.X 1}} / span {{.GridPos.W}}; grid-row: {{add .GridPos.Y 1}} / span {{.GridPos.H}};">
<h2><span>{{.Title}}</span><span class="type">{{.Type}}</span></h2>
{{with .Description}}<div class="desc">{{.}}</div>{{end}}
{{range .Targets}}<div class="q">{{with .LegendFormat}}<b>{{.}}</b> ← {{end}}{{.Expr}}</div>{{end}}
{{with .Field.Defaults.Unit}}<div class="unit">unit: {{.}}</div>{{end}}
</div>
{{end}}</div></body></html>
`))

// HTML renders the page of a dashboard.
func HTML(d *Dashboard) ([]byte, error) {
	var b bytes.Buffer
	if err := page.Execute(&b, struct {
		D   *Dashboard
		Row int
	}{d, rowHeight}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// height is the page height the panels need.
func height(d *Dashboard) int {
	rows := 0
	for _, p := range d.Panels {
		rows = max(rows, p.GridPos.Y+p.GridPos.H)
	}
	return 90 + rows*(rowHeight+8) + 40
}

func main() {
	dash := flag.String("dashboard", "charts/claimbridge/files/dashboard.json", "Grafana dashboard JSON")
	htmlOut := flag.String("html", "_output/dashboard.html", "where the page goes")
	pngOut := flag.String("png", "docs/dashboard.png", "where the screenshot goes")
	width := flag.Int("width", 1600, "window width in pixels")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	err := run(ctx, *dash, *htmlOut, *pngOut, *width)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dash, htmlOut, pngOut string, width int) error {
	d, err := Load(dash)
	if err != nil {
		return err
	}
	b, err := HTML(d)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(htmlOut), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(htmlOut, b, 0o644); err != nil {
		return err
	}
	c, err := browser.Find()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(htmlOut)
	if err != nil {
		return err
	}
	if err := c.Screenshot(ctx, "file://"+abs, pngOut, width, height(d)); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dashboard: %d panels, %s and %s\n", len(d.Panels), htmlOut, pngOut)
	return nil
}
