package report_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// cutoverReport is a forecast: a row of each result, two rows that break
// for two reasons.
func cutoverReport() *report.Report {
	shared := translate.Reason{Code: translate.ReasonSharedDeviceNotMapped, Severity: translate.SeverityWarning, Message: "a time-sliced GPU <shared>"}
	rows := []report.Row{
		{Kind: "Deployment", Namespace: "research", Name: "trainer", Outcome: translate.OutcomeTranslate, Verdict: "FitsNow",
			DevicesRequested: map[string]int64{"nvidia.com/gpu": 2}, Replicas: ptr.To[int32](3), Hardware: "nvidia.com/gpu, any model",
			Placement: &report.Placement{Result: report.PlacementEqual, Nodes: 5, Legacy: 5, Translated: 5},
			Cutover:   &report.Cutover{Result: report.CutoverMoves, Today: 5, After: 5}},
		{Kind: "Deployment", Namespace: "inference", Name: "embeddings", Outcome: translate.OutcomeKeepLegacy, Decisive: &shared,
			Reasons: []translate.Reason{shared}, DevicesRequested: map[string]int64{"nvidia.com/gpu": 1}, Replicas: ptr.To[int32](4), Hardware: "Tesla-T4-SHARED",
			Cutover: &report.Cutover{Result: report.CutoverBreaks, Today: 1, Why: "after the switch no node offers nvidia.com/gpu"}},
		{Kind: "Pod", Namespace: "lab", Name: "debug", Outcome: translate.OutcomeKeepLegacy,
			Decisive:         &translate.Reason{Code: translate.ReasonNodeNamePreset, Severity: translate.SeverityWarning, Message: "spec.nodeName is set"},
			DevicesRequested: map[string]int64{"nvidia.com/gpu": 1}, Hardware: "nvidia.com/gpu, any model",
			Cutover: &report.Cutover{Result: report.CutoverBreaks, Today: 1, Why: "after the switch no node offers nvidia.com/gpu"}},
		{Kind: "StatefulSet", Namespace: "inference", Name: "legacy-serving", Outcome: translate.OutcomeKeepLegacy,
			Decisive:         &translate.Reason{Code: decide.ReasonInfeasible, Severity: translate.SeverityWarning, Message: "NeverFits"},
			DevicesRequested: map[string]int64{"nvidia.com/gpu": 8}, Replicas: ptr.To[int32](1), Hardware: "nvidia.com/gpu, any model",
			Cutover: &report.Cutover{Result: report.CutoverStaysLegacy, Today: 1, After: 1}},
		{Kind: "Deployment", Namespace: "inference", Name: "api", Outcome: translate.OutcomeSkip, Replicas: ptr.To[int32](2),
			Cutover: &report.Cutover{Result: report.CutoverNotAffected}},
	}
	r := report.New("cluster (forecast after the switch to DRA)", "profiles:nvidia", rows)
	r.Forecast = &report.Forecast{GFDLabels: "drop", Nodes: 7, Switched: 5, Devices: map[string]int{"gpu.nvidia.com": 45},
		Left:    []report.ForecastNode{{Name: "optout-0", Why: "opted out (nvidia.com/gpu.deploy.operands=false)"}},
		Unknown: []string{"numaNode", "pcieRoot", "uuid"}, Classes: []string{"gpu.nvidia.com", "mig.nvidia.com"},
		Suggested: []report.SuggestedClass{{Resource: "nvidia.com/gpu", Rows: 2, Devices: 5, YAML: "kind: DeviceClass\nspec:\n  extendedResourceName: nvidia.com/gpu\n"}},
		Caveats:   []report.Caveat{{Text: "GFD labels go", Source: "NVIDIA GPU Operator v26.7.0"}},
		YAML:      "apiVersion: v1\nkind: Node\nmetadata:\n  name: a100-0\n"}
	return r
}

func TestCutoverTableSaysWhatTheSwitchDoes(t *testing.T) {
	var b bytes.Buffer
	if err := cutoverReport().Write(&b, "table"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"CUTOVER",
		"SharedDeviceNotMapped: after the switch no node offers nvidia.com/gpu; kept as submitted: a time-sliced GPU",
		"after the switch (5 of 7 nodes switch, GFD labels drop): 2 break, 1 move, 1 stay on the device plugin, 1 not affected",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "inference/Deployment/embeddings ") && !strings.Contains(line, " Breaks ") || strings.HasPrefix(line, "research/Deployment/trainer ") && !strings.Contains(line, " Moves ") || strings.HasPrefix(line, "research/Deployment/trainer ") && !strings.Contains(line, " 5→5 ") {
			t.Errorf("wrong row: %s", line)
		}
	}
}

func TestCutoverPageCountsWhatBreaksAndOffersTheForecast(t *testing.T) {
	var b bytes.Buffer
	if err := cutoverReport().WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<section id="cutover"`, `<a href="#cutover">Cutover</a>`,
		`data-cutover-result="Breaks">2<`, `data-cutover-result="Moves">1<`, `data-cutover-result="NotAffected">1<`,
		// 6 + 4 + 1 + 8 devices today; 4 + 1 of them break.
		`data-cutover="today">19<`, `data-cutover="servable">14<`, `data-cutover="breaks-devices">5<`,
		`data-code="SharedDeviceNotMapped" data-devices="4"`, `data-code="NodeNamePreset" data-devices="1"`,
		`data-servable="inference"`, `data-suggested="nvidia.com/gpu"`, `data-forecast="switched">5<`,
		`data-forecast-driver="gpu.nvidia.com">45<`, "opted out (nvidia.com/gpu.deploy.operands=false)",
		"Source: NVIDIA GPU Operator v26.7.0", "a time-sliced GPU &lt;shared&gt;",
		`href="data:application/yaml;base64,` + base64.StdEncoding.EncodeToString([]byte("apiVersion: v1\nkind: Node\nmetadata:\n  name: a100-0\n")) + `"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// A report without a forecast has no cutover view.
	b.Reset()
	if err := smallReport().WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `id="cutover"`) {
		t.Error("a report without a forecast shows a cutover view")
	}
}
