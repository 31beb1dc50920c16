package suite

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/internal/testing/browser"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/reportpage"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
)

// get reads a URL of the metrics server.
func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestWebhookReportPageShowsTheDecisionsOfTheNamespace(t *testing.T) {
	chromium := browser.ForTest(t)
	ns, _ := setup(t, "enforce", "mixed")
	pods := []*corev1.Pod{
		// translated: L4 and MIG slices are on DRA nodes
		builders.MakePod("infer", ns).Container("server").Limit("nvidia.com/gpu", "1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj(),
		builders.MakePod("notebook", ns).Container("jupyter").Limit("nvidia.com/mig-1g.10gb", "1").Obj(),
		// kept: only device-plugin nodes have A100 40GB
		builders.MakePod("eval", ns).Container("eval").Limit("nvidia.com/gpu", "2").NodeSelector("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB").Obj(),
	}
	for _, p := range pods {
		create(t, p)
	}
	reportURL := metricsURL + "/report?namespace=" + ns
	eventually(t, "every pod in the report", func(context.Context) (bool, error) {
		return liveReport(t, ns).Summary.Total == len(pods), nil
	})
	// The translated pods are Waiting until they are bound: let them be, so
	// that the page reads the same at every fetch below.
	for _, name := range []string{"infer", "notebook"} {
		bound(t, ns, name)
	}
	eventually(t, "no pod waiting in the report", func(context.Context) (bool, error) {
		for _, r := range liveReport(t, ns).Items {
			if r.WaitingSince != nil {
				return false, nil
			}
		}
		return true, nil
	})

	resp, page := get(t, reportURL+"&format=html")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("format=html: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	_, js := get(t, reportURL+"&format=json")
	rep, err := report.Read(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON strings.Builder
	if err := rep.WriteHTML(&fromJSON); err != nil {
		t.Fatal(err)
	}
	if page != fromJSON.String() {
		t.Errorf("the served page is not the page rendered from the served JSON")
	}
	outcomes := map[string]reason.Outcome{}
	for _, row := range rep.Items {
		outcomes[row.Name] = row.Outcome
	}
	want := map[string]reason.Outcome{"infer": reason.OutcomeTranslate, "notebook": reason.OutcomeTranslate, "eval": reason.OutcomeKeepLegacy}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("outcomes in the report (-want,+got):\n%s", diff)
	}
	if f := rep.FleetSummary; f == nil || f.DRANodes < 10 || f.DevicePluginNodes < 2 {
		t.Errorf("the webhook's fleet summary does not show the mixed fleet: %+v", f)
	}

	dir, err := filepath.Abs(filepath.Join("..", "..", "_output"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report-webhook.html"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	// The browser loads the page from the webhook itself, under its Content-Security-Policy.
	reportpage.CheckInBrowser(t, chromium, reportURL+"&format=html", rep, filepath.Join(dir, "report-webhook"))
}
