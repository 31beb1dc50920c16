package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"github.com/claimbridge/claimbridge/internal/testing/browser"
	"github.com/claimbridge/claimbridge/internal/testing/reportpage"
	"github.com/claimbridge/claimbridge/report"
)

// outputDir is the repository's _output/ (gitignored): what the browser
// tests leave for review.
func outputDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "_output")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func TestReportRenderGivesTheAuditsPage(t *testing.T) {
	args := []string{"audit", "-f", "../../../examples/workloads", "--fleet", "../../../examples/fleets/mixed"}
	page, err := run(t, "", append(args, "-o", "html")...)
	if err != nil {
		t.Fatal(err)
	}
	js, err := run(t, "", append(args, "-o", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	yml, err := run(t, "", append(args, "-o", "yaml")...)
	if err != nil {
		t.Fatal(err)
	}
	for name, saved := range map[string]string{"json": js, "yaml": yml} {
		rendered, err := run(t, saved, "report", "render", "-f", "-")
		if err != nil {
			t.Fatal(err)
		}
		if rendered != page {
			t.Errorf("report render of the %s report differs from audit -o html", name)
		}
	}
	rep, err := report.Read(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	type asks struct {
		Hardware string
		Devices  int64
	}
	got := map[string]asks{}
	for _, row := range rep.Items {
		got[row.Namespace+"/"+row.Kind+"/"+row.Name] = asks{row.Hardware, row.Demand()}
	}
	want := map[string]asks{
		"embeddings/Deployment/embeddings": {"nvidia.com/gpu.shared, any model", 3}, // 1 share × 3 replicas
		"notebooks/Pod/notebook-alice":     {"MIG 1g.10gb", 1},
		"research/CronJob/nightly-eval":    {"NVIDIA-A100-SXM4-40GB", 2},
		"research/Deployment/embeddings":   {"nvidia.com/gpu, any model", 2},
		"research/Job/pretrain":            {"NVIDIA hopper", 10}, // (4 GPUs + 1 NIC) × parallelism 2
		"research/Pod/pinned":              {"nvidia.com/gpu, any model", 1},
		"serving/Deployment/llm-inference": {"NVIDIA-L4", 2}, // 1 GPU × 2 replicas
		"serving/Pod/web":                  {"", 0},
		"serving/StatefulSet/jax-serve":    {"TPU tpu-v5-lite-podslice 2x4", 8},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hardware and devices of the examples (-want,+got):\n%s", diff)
	}
	if f := rep.FleetSummary; f == nil || f.Nodes != 12 || f.DRANodes != 10 || f.DevicePluginNodes != 2 || f.DevicePluginResources["nvidia.com/gpu"] != 16 {
		t.Errorf("fleet summary of the mixed fleet: %+v", f)
	}
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Errorf("the page is not a self-contained HTML document (it names a network address or lacks the doctype)")
	}
	if _, err := run(t, `{"apiVersion":"v1","kind":"ConfigMap"}`, "report", "render", "-f", "-"); exitCode(err) != exitInvalid {
		t.Errorf("rendering something that is not a report: exit %d (%v), want %d", exitCode(err), err, exitInvalid)
	}
	if _, err := run(t, "", "report", "render"); exitCode(err) != exitUsage {
		t.Errorf("render without -f: exit %d, want %d", exitCode(err), exitUsage)
	}
}

// TestAuditPageInChromium opens `audit -o html` of the examples against
// the mixed fleet in a real headless Chromium and checks what it shows
// against `audit -o json`; the screenshots and the PDF stay in _output/.
func TestAuditPageInChromium(t *testing.T) {
	chromium := browser.ForTest(t)
	url, _ := pageInBrowser(t, chromium, "report-examples", "audit", "-f", "../../../examples/workloads", "--fleet", "../../../examples/fleets/mixed")

	// The examples: three of nine stay legacy: no DRA node has an A100 40GB (the remedy
	// names the device-plugin nodes that have it), the training Job's NIC is shared, and
	// the embeddings' GPU shares find no GPU published as shares.
	dom, err := chromium.DumpDOM(t.Context(), url, 1280, 900)
	if err != nil {
		t.Fatal(err)
	}
	p, err := reportpage.Parse(dom)
	if err != nil {
		t.Fatal(err)
	}
	remedies := p.All(reportpage.Element("span", "remedy"))
	has := func(parts ...string) bool {
		return slices.ContainsFunc(remedies, func(r *html.Node) bool {
			return !slices.ContainsFunc(parts, func(s string) bool { return !strings.Contains(reportpage.Text(r), s) })
		})
	}
	if len(remedies) != 3 || !has("legacy-gfd-0, legacy-gfd-1", "NVIDIA-A100-SXM4-40GB") || !has("resources[].sharing") || !has("--consumable-shares=N") {
		t.Errorf("the blocking reasons' remedies: want one naming NVIDIA-A100-SXM4-40GB and legacy-gfd-0, legacy-gfd-1, one for the shared NIC and one for GPU shares, got %d", len(remedies))
		for _, r := range remedies {
			t.Logf("remedy: %s", reportpage.Text(r))
		}
	}
}

// pageInBrowser runs the command with -o html and -o json, writes both
// under _output/<name>.{html,json}, checks the page in Chromium against the
// JSON report (reportpage.CheckInBrowser) and returns the page's URL and
// the report.
func pageInBrowser(t *testing.T, chromium *browser.Chromium, name string, args ...string) (string, *report.Report) {
	t.Helper()
	page, err := run(t, "", append(args, "-o", "html")...)
	if err != nil {
		t.Fatal(err)
	}
	js, err := run(t, "", append(args, "-o", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.Read(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	out := outputDir(t)
	file := filepath.Join(out, name+".html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, name+".json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + file
	reportpage.CheckInBrowser(t, chromium, url, rep, filepath.Join(out, name))
	return url, rep
}
