package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claimbridge/claimbridge/metrics"
)

const dashboardPath = "../../charts/claimbridge/files/dashboard.json"

// names records the metric names of the collectors registered with it.
type names map[string]bool

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (n names) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			n[m[1]] = true
		}
	}
	return nil
}

func (n names) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = n.Register(c)
	}
}

func (n names) Unregister(prometheus.Collector) bool { return true }

// controllerRuntimeNames are the names of controller-runtime's webhook
// metrics, read from the source of the module version claimbridge builds
// with (pkg/webhook/internal/metrics registers them with the same registry
// as claimbridge's own).
func controllerRuntimeNames(t *testing.T) names {
	t.Helper()
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/controller-runtime").Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/controller-runtime: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "pkg", "webhook", "internal", "metrics", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := names{}
	for _, m := range regexp.MustCompile(`Name:\s+"([a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
		out[m[1]] = true
	}
	if !out["controller_runtime_webhook_latency_seconds"] {
		t.Fatalf("controller-runtime's webhook metrics not found in its source: %v", out)
	}
	return out
}

var metricName = regexp.MustCompile(`\b(claimbridge_[a-z0-9_]+|controller_runtime_[a-z0-9_]+)\b`)

func TestEveryDashboardMetricIsExported(t *testing.T) {
	d, err := Load(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	exported := names{}
	if err := metrics.NewMetrics().RegisterWith(exported); err != nil {
		t.Fatal(err)
	}
	for n := range controllerRuntimeNames(t) {
		exported[n] = true
	}
	used := 0
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			for _, name := range metricName.FindAllString(q.Expr, -1) {
				used++
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(name, suffix); ok && exported[b] {
						base = b
					}
				}
				if !exported[base] {
					t.Errorf("panel %q queries %s, which claimbridge does not export", p.Title, name)
				}
			}
		}
	}
	if used == 0 {
		t.Fatal("no metric found in the dashboard's queries")
	}
}

func TestDashboardShowsWhatAnOperatorAsks(t *testing.T) {
	d, err := Load(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			all = append(all, q.Expr)
		}
	}
	exprs := strings.Join(all, "\n")
	for what, needle := range map[string]string{
		"decisions by outcome":         "sum by (mode, outcome) (rate(claimbridge_admissions_total",
		"decisions by reason":          "sum by (reason) (rate(claimbridge_admissions_total",
		"stranded pods":                "claimbridge_stranded_pods",
		"unservable pods":              "claimbridge_unservable_pods",
		"undecided pods":               "claimbridge_undecided_pods",
		"admission latency p50":        "histogram_quantile(0.5, sum by (le) (rate(controller_runtime_webhook_latency_seconds_bucket",
		"admission latency p99":        "histogram_quantile(0.99, sum by (le) (rate(controller_runtime_webhook_latency_seconds_bucket",
		"migration progress":           `claimbridge_migration_devices{served_by="dra"}`,
		"devices on the device plugin": `claimbridge_migration_devices{served_by="device-plugin"}`,
		"slow admissions":              "claimbridge_slow_admissions_total",
		"admission time by stage":      "claimbridge_admission_stage_seconds_sum",
		"decision p99.9 by mode":       "histogram_quantile(0.999, sum by (le, mode) (rate(claimbridge_admission_duration_seconds_bucket",
	} {
		if !strings.Contains(exprs, needle) {
			t.Errorf("no panel shows %s (%s)", what, needle)
		}
	}
	// Panels do not overlap on the 24-column grid.
	type cell struct{ x, y int }
	taken := map[cell]string{}
	for _, p := range d.Panels {
		g := p.GridPos
		if g.X < 0 || g.W <= 0 || g.X+g.W > 24 || g.H <= 0 {
			t.Errorf("panel %q: gridPos %+v outside the grid", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := taken[cell{x, y}]; ok {
					t.Fatalf("panels %q and %q overlap at %d,%d", other, p.Title, x, y)
				}
				taken[cell{x, y}] = p.Title
			}
		}
	}
	page, err := HTML(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		if !strings.Contains(string(page), p.Title) {
			t.Errorf("the page lacks panel %q", p.Title)
		}
	}
}
