package reportpage_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/internal/testing/reportpage"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
)

func page(t *testing.T, rep *report.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Without a browser the script does not run; that is all Check finds wrong
// with the page as rendered, and it finds a number changed on the page.
func TestCheckFindsWhatThePageGetsWrong(t *testing.T) {
	rep := report.New("f", "p", []report.Row{
		{Row: decisions.Row{Kind: "Pod", Namespace: "a", Name: "x", Outcome: reason.OutcomeTranslate, Verdict: "FitsNow", DevicesRequested: map[string]int64{"nvidia.com/gpu": 2}, Hardware: "NVIDIA-L4"}},
		{Row: decisions.Row{Kind: "Pod", Namespace: "b", Name: "y", Outcome: reason.OutcomeKeepLegacy, Verdict: "NeverFits", DevicesRequested: map[string]int64{"nvidia.com/gpu": 1}, Hardware: "NVIDIA-A10G"}},
	})
	rep.FleetSummary = &report.FleetSummary{Nodes: 3, DRANodes: 1, DevicePluginNodes: 2, Devices: 8, DevicesByClass: map[string]int{"gpu.nvidia.com": 8}}
	html := page(t, rep)
	check := func(html string) string {
		p, err := reportpage.Parse(html)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Check(rep); err != nil {
			return err.Error()
		}
		return ""
	}
	if got := check(html); got != "the filter controls are hidden: the page's script did not run" {
		t.Errorf("Check of the page as rendered: %q", got)
	}
	for name, tc := range map[string]struct{ from, to, want string }{
		"a headline number":  {`data-kpi="devices">3<`, `data-kpi="devices">4<`, "headline devices = 4, the report says 3"},
		"a chart segment":    {`data-category="blocked" data-devices="1"`, `data-category="blocked" data-devices="2"`, `chart-overall bar "All workloads": 2 devices blocked, the report says 1`},
		"a row of the table": {`<code class="obj">a/Pod/x</code>`, `<code class="obj">a/Pod/z</code>`, "the table lists"},
		"the fleet":          {`data-fleet="dra-nodes">1<`, `data-fleet="dra-nodes">2<`, "fleet dra-nodes: the page does not show 1"},
	} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(html, tc.from) {
				t.Fatalf("the page has no %s", tc.from)
			}
			if got := check(strings.Replace(html, tc.from, tc.to, 1)); !strings.Contains(got, tc.want) {
				t.Errorf("Check of the changed page: %q, want it to say %q", got, tc.want)
			}
		})
	}
}
