package livereport

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/claimbridge/claimbridge/internal/testing/browser"
	"github.com/claimbridge/claimbridge/internal/testing/informertest"
	"github.com/claimbridge/claimbridge/internal/testing/reportpage"
	"github.com/claimbridge/claimbridge/report"
)

// The webhook's page as a browser shows it, served by /report with its
// Content-Security-Policy: one row per workload and status, Migrated apart
// from Ready now, the pods the webhook never saw counted with their
// devices, and the progress over time.
func TestLivePageInBrowserShowsWorkloadsStatusesAndUnseenPods(t *testing.T) {
	chromium := browser.ForTest(t)
	inv, client := informertest.Start(t, liveObjects()...)
	s := newLiveStore(inv, true)
	s.Sample(liveNow)
	// A Deployment is translated and runs: DRA serves 2 more devices.
	serve := withClaim(replicaSetPod(translated("prod", "claimbridge-abc"), "serve", "77aa1", "zzzzz", at(40)), "claimbridge-abc")
	serve.Spec.NodeName = "dgx-h100-2"
	if _, err := client.CoreV1().Pods("prod").Create(t.Context(), serve, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return slices.ContainsFunc(inv.Pods("prod"), func(p *corev1.Pod) bool { return p.Name == serve.Name }), nil
	}); err != nil {
		t.Fatal("the new pod never reached the cache")
	}
	s.Sample(liveNow.Add(time.Minute))

	srv := httptest.NewServer(s.Handler(func() string { return "default" }))
	defer srv.Close()
	get := func(query string) string {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + "/report?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	rep, err := report.Read(strings.NewReader(get("format=json")))
	if err != nil {
		t.Fatal(err)
	}
	out, err := filepath.Abs(filepath.Join("..", "_output"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	url := srv.URL + "/report?format=html"
	reportpage.CheckInBrowser(t, chromium, url, rep, filepath.Join(out, "live-report"))

	dom, err := chromium.DumpDOM(t.Context(), url, 1280, 900)
	if err != nil {
		t.Fatal(err)
	}
	p, err := reportpage.Parse(dom)
	if err != nil {
		t.Fatal(err)
	}
	text := func(key, value string) string {
		t.Helper()
		ns := p.All(reportpage.WithAttr(key, value))
		if len(ns) != 1 {
			t.Fatalf("%d elements with %s=%q, want 1", len(ns), key, value)
		}
		return strings.TrimSpace(reportpage.Text(ns[0]))
	}
	// Rows per workload: six workloads of ten pods in seven rows; the trainer's three
	// replicas are two rows, Migrated (2) and Waiting (1).
	objects, _ := p.Rows()
	if n := len(slices.DeleteFunc(slices.Clone(objects), func(o string) bool { return o != "prod/Deployment/trainer" })); n != 2 {
		t.Errorf("the trainer has %d rows, want 2 (Migrated, Waiting): %q", n, objects)
	}
	if got := text("data-kpi", "workloads"); got != "6" {
		t.Errorf("workloads: %s, want 6", got)
	}
	kpis := p.All(reportpage.WithAttr("data-kpi", "workloads"))
	if sub := reportpage.Text(kpis[0].Parent); !strings.Contains(sub, "10 pods · 7 rows") {
		t.Errorf("the workloads figure says %q, want 10 pods in 7 rows", sub)
	}
	// Migrated apart from Ready now.
	for key, want := range map[string]string{"migrated": "2", "migrated-devices": "6", "now": "1", "now-devices": "2", "waiting": "1", "blocked": "1"} {
		if got := text("data-kpi", key); got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
	// The pods kept away by the matchConditions are counted: three pods,
	// five devices, all of the skipped.
	for key, want := range map[string]string{"unseen-pods": "3", "unseen-devices": "5", "skip-devices": "5", "devices": "16"} {
		if got := text("data-kpi", key); got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
	for _, code := range []string{"NodeNamePreset", "SchedulerNotListed"} {
		if len(p.All(reportpage.WithAttr("data-unseen", code))) != 1 {
			t.Errorf("the page does not list the unseen pods of %s", code)
		}
	}
	// Where a pod runs is said as a fact, where it could run as advice.
	if got := text("data-bound", "dgx-h100-0,dgx-h100-1"); got != "runs on dgx-h100-0, dgx-h100-1" {
		t.Errorf("the Migrated trainer: %q", got)
	}
	var advice []string
	for _, n := range p.All(reportpage.WithAttr("data-advisory", "")) {
		advice = append(advice, strings.TrimSpace(reportpage.Text(n)))
	}
	// The Ready-now embed (the placement check counted 6 nodes) and the
	// Waiting trainer (the verdict knows its first node only).
	if want := []string{"could run on 6 nodes, e.g. a100-mig-0", "could run on dgx-h100-0 (first node found)"}; !slices.Equal(slices.Sorted(slices.Values(advice)), want) {
		t.Errorf("the advice on the page: %q, want %q", advice, want)
	}
	// Progress: 6 of 14 devices of running pods on DRA now, after 4 of 12.
	if got := text("data-progress", "share"); got != "42%" {
		t.Errorf("progress share %s, want 42%%", got)
	}
	if got := text("data-progress", "dra") + "/" + text("data-progress", "device-plugin"); got != "6/8" {
		t.Errorf("progress dra/device plugin %s, want 6/8", got)
	}
	lines := p.All(reportpage.Element("polyline", "spark-line"))
	if len(lines) != 1 {
		t.Fatalf("%d sparklines, want 1", len(lines))
	}
	if pts, _ := reportpage.Attr(lines[0], "points"); len(strings.Fields(pts)) != 2 {
		t.Errorf("the sparkline has points %q, want the 2 samples", pts)
	}
}
