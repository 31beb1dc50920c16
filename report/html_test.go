package report_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/golden"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// smallReport has one row of each kind the page shows differently; the
// train row has no decisive reason, as in reports of older versions.
func smallReport() *report.Report {
	rows := []report.Row{
		{Row: decisions.Row{Kind: "Deployment", Namespace: "serving", Name: "llm", Outcome: reason.OutcomeTranslate, Verdict: "FitsNow", VerdictCode: "Fits", Node: "l4-0", Alternatives: []string{"server-gpu"}, Devices: []string{"gpu.nvidia.com/l4-0/gpu-0"}, Template: "claimbridge-2d94f1216dd6", Placement: &decisions.Placement{Result: decisions.PlacementEqual, Nodes: 6, Legacy: 4, Translated: 4}, DevicesRequested: map[string]int64{"nvidia.com/gpu": 1}, Replicas: ptr.To[int32](3), Hardware: "NVIDIA-L4", Reasons: []reason.Reason{{Code: decide.ReasonFeasible, Severity: reason.SeverityInfo, Message: "FitsNow on node l4-0"}}}},
		{Row: decisions.Row{Kind: "Pod", Namespace: "notebooks", Name: "alice", Outcome: reason.OutcomeTranslate, Verdict: "FitsWhenFree", VerdictCode: "DevicesInUse", Node: "a100-mig-0", Template: "claimbridge-0e877efde135", DevicesRequested: map[string]int64{"nvidia.com/mig-1g.10gb": 1}, Hardware: "MIG 1g.10gb", Reasons: []reason.Reason{{Code: decide.ReasonFeasible, Severity: reason.SeverityInfo, Message: "FitsWhenFree on node a100-mig-0"}}}},
		{Row: decisions.Row{Kind: "CronJob", Namespace: "research", Name: "eval", Outcome: reason.OutcomeKeepLegacy, Verdict: "NeverFits", VerdictCode: "NoMatchingDevices", Template: "claimbridge-ba93c6a33a3b", DevicesRequested: map[string]int64{"nvidia.com/gpu": 2}, Replicas: ptr.To[int32](1), Hardware: "NVIDIA-A100-SXM4-40GB", Decisive: &reason.Reason{Code: decide.ReasonInfeasible, Severity: reason.SeverityWarning, Message: "NeverFits (NoMatchingDevices): 2 nodes (legacy-0, legacy-1) publish no DRA devices"}, Reasons: []reason.Reason{
			{Code: translate.ReasonNodeLabelTranslated, Severity: reason.SeverityInfo, Message: "spec.nodeSelector[nvidia.com/gpu.product] became a device selector"},
			{Code: decide.ReasonInfeasible, Severity: reason.SeverityWarning, Message: "NeverFits (NoMatchingDevices): 2 nodes (legacy-0, legacy-1) publish no DRA devices"},
		}}},
		{Row: decisions.Row{Kind: "Job", Namespace: "research", Name: "train", Outcome: reason.OutcomeKeepLegacy, Template: "claimbridge-91ab7f7c6a25", DevicesRequested: map[string]int64{"nvidia.com/gpu": 8, "rdma/hca": 1}, Replicas: ptr.To[int32](2), Hardware: "NVIDIA hopper", Placement: &decisions.Placement{Result: decisions.PlacementDiffers, Nodes: 6, Legacy: 2, Translated: 3,
			Gained: []feasibility.NodeGroup{{Nodes: 1, Example: "h200-0", Hardware: "8× NVIDIA H200", Why: `the legacy pod needs label nvidia.com/gpu.memory > 80000 <b>&"quoted"`}}}, Reasons: []reason.Reason{
			{Code: decide.ReasonPlacementDiffers, Severity: reason.SeverityWarning, Message: "the translation would land on 3 DRA nodes, the pod as submitted on 2 of them or others (placement: Exact); kept as submitted"},
			{Code: decide.ReasonPlacementDiffers, Severity: reason.SeverityWarning, Message: "would also land on 1 node like h200-0 (8× NVIDIA H200): <script>alert(1)</script>"},
		}}},
		{Row: decisions.Row{Kind: "Pod", Namespace: "serving", Name: "web", Outcome: reason.OutcomeSkip, Reasons: []reason.Reason{{Code: translate.ReasonNoLegacyResources, Severity: reason.SeverityInfo, Message: "no container asks for an extended resource the policy maps"}}}},
	}
	r := report.New("fleet/small", "profiles:nvidia,rdma", rows)
	r.FleetSummary = &report.FleetSummary{Nodes: 9, DRANodes: 7, DevicePluginNodes: 2, Devices: 40,
		DevicesByClass:        map[string]int{"gpu.nvidia.com": 30, "mig.nvidia.com": 7, "dranet-rdma": 3},
		DevicePluginResources: map[string]int64{"nvidia.com/gpu": 16},
		Groups: []report.FleetGroup{
			{Via: report.ViaDRA, Hardware: "8× NVIDIA H100 80GB HBM3", Nodes: 2, Names: []string{"h100-0", "h100-1"}},
			{Via: report.ViaDevicePlugin, Hardware: "8× nvidia.com/gpu", Kind: "NVIDIA-A100-SXM4-40GB", Nodes: 2, Names: []string{"legacy-0", "legacy-1"}},
		}}
	return r
}

func render(t *testing.T, r *report.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.Write(&b, "html"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestHTMLGolden(t *testing.T) {
	got := render(t, smallReport())
	golden.Check(t, filepath.Join("testdata", "small.html"), []byte(got))
	if again := render(t, smallReport()); again != got {
		t.Errorf("rendering the same report twice gives different pages")
	}
}

func TestHTMLIsRenderedFromTheJSONAlone(t *testing.T) {
	r := smallReport()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := report.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if render(t, back) != render(t, r) {
		t.Errorf("the page of the report read back from JSON differs")
	}
}

func TestHTMLEscapesEverything(t *testing.T) {
	page := render(t, smallReport())
	for _, raw := range []string{"<script>alert(1)</script>", "<b>&", `"quoted"`} {
		if strings.Contains(page, raw) {
			t.Errorf("the page contains %q unescaped", raw)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the reason's text is not on the page, escaped")
	}
	if n := strings.Count(page, "<script>"); n != 1 {
		t.Errorf("%d script elements, want the page's own only", n)
	}
}

func TestHTMLShowsTheReport(t *testing.T) {
	page := render(t, smallReport())
	for _, want := range []string{
		// headline: 5 rows; devices 1×3 + 1 + 2 + 9×2 = 24; 3 now of 24 is 12%.
		`data-kpi="workloads">5<`, `data-kpi="devices">24<`, `data-kpi="ready-share">12%<`,
		`data-kpi="now">1<`, `data-kpi="now-devices">3<`, `data-kpi="free">1<`, `data-kpi="blocked">2<`, `data-kpi="blocked-devices">20<`,
		`data-kpi="never">1<`, `data-kpi="skip">1<`,
		// charts
		`data-chart="chart-overall"`, `data-chart="chart-namespaces"`, `data-chart="chart-hardware"`,
		`<g class="bar" data-label="research" data-devices="20" data-rows="2">`,
		// blockers, largest first, with the remedy naming the device-plugin nodes
		`data-code="PlacementDiffers" data-devices="18"`,
		"no DRA node publishes NVIDIA-A100-SXM4-40GB — move the device-plugin nodes that have it (legacy-0, legacy-1) to the DRA driver first",
		// placement differences
		"h200-0", `data-placement="Differs">1<`,
		// fleet
		`data-fleet="dra-nodes">7<`, `data-class="mig.nvidia.com">7<`, `data-resource="nvidia.com/gpu">16<`,
		// print and narrow windows
		"@media print", "size: A4", "@media (max-width: 720px)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if i, j := strings.Index(page, `data-code="PlacementDiffers"`), strings.Index(page, `data-code="Infeasible (NoMatchingDevices)"`); i < 0 || j < 0 || i > j {
		t.Errorf("blocking reasons are not ranked by the devices they hold back")
	}
	for _, bad := range []string{"http://", "https://", "<link", "<img", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page refers to something outside itself: %s", bad)
		}
	}
}
