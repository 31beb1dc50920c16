package report_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// cutoverReport is a forecast: a row of each result, two rows that break
// for two reasons.
func cutoverReport() *report.Report {
	shared := reason.Reason{Code: translate.ReasonSharedDeviceNotMapped, Severity: reason.SeverityWarning, Message: "a time-sliced GPU <shared>"}
	rows := []report.Row{
		{Row: decisions.Row{Kind: "Deployment", Namespace: "research", Name: "trainer", Outcome: reason.OutcomeTranslate, Verdict: "FitsNow", DevicesRequested: map[string]int64{"nvidia.com/gpu": 2}, Replicas: ptr.To[int32](3), Hardware: "nvidia.com/gpu, any model", Placement: &decisions.Placement{Result: decisions.PlacementEqual, Nodes: 5, Legacy: 5, Translated: 5}}, Cutover: &cutover.Effect{Result: cutover.Moves, Today: 5, After: 5, Pods: 3, Served: 3}},
		{Row: decisions.Row{Kind: "Job", Namespace: "research", Name: "finetune", Outcome: reason.OutcomeTranslate, Verdict: "FitsNow", DevicesRequested: map[string]int64{"nvidia.com/gpu": 4}, Replicas: ptr.To[int32](2), Hardware: "NVIDIA-H100-80GB-HBM3"}, Cutover: &cutover.Effect{Result: cutover.OrderDependent, Today: 1, After: 1, Pods: 2, Served: 1, Alone: 2, Least: 1, Most: 2,
			Competes: []string{"research/Deployment/trainer"}, Why: "placed alone it gets 2 of 2 pods served, after the workloads that can take the same devices only 1"}},
		{Row: decisions.Row{Kind: "Deployment", Namespace: "lab", Name: "old-product", Outcome: reason.OutcomeKeepLegacy, Decisive: &reason.Reason{Code: decide.ReasonInfeasible, Severity: reason.SeverityWarning, Message: "NeverFits"}, DevicesRequested: map[string]int64{"nvidia.com/gpu": 1}, Replicas: ptr.To[int32](2), Hardware: "Tesla-K80"}, Cutover: &cutover.Effect{Result: cutover.NotServedToday, Pods: 2, Why: "after the switch no node offers nvidia.com/gpu"}},
		{Row: decisions.Row{Kind: "Deployment", Namespace: "inference", Name: "embeddings", Outcome: reason.OutcomeKeepLegacy, Decisive: &shared, Reasons: []reason.Reason{shared}, DevicesRequested: map[string]int64{"nvidia.com/gpu": 1}, Replicas: ptr.To[int32](4), Hardware: "Tesla-T4-SHARED"}, Cutover: &cutover.Effect{Result: cutover.Breaks, Today: 1, Pods: 4, Why: "after the switch no node offers nvidia.com/gpu"}},
		{Row: decisions.Row{Kind: "Pod", Namespace: "lab", Name: "debug", Outcome: reason.OutcomeKeepLegacy, Decisive: &reason.Reason{Code: translate.ReasonNodeNamePreset, Severity: reason.SeverityWarning, Message: "spec.nodeName is set"}, DevicesRequested: map[string]int64{"nvidia.com/gpu": 1}, Hardware: "nvidia.com/gpu, any model"}, Cutover: &cutover.Effect{Result: cutover.Breaks, Today: 1, Pods: 1, Why: "after the switch no node offers nvidia.com/gpu"}},
		{Row: decisions.Row{Kind: "StatefulSet", Namespace: "inference", Name: "legacy-serving", Outcome: reason.OutcomeKeepLegacy, Decisive: &reason.Reason{Code: decide.ReasonInfeasible, Severity: reason.SeverityWarning, Message: "NeverFits"}, DevicesRequested: map[string]int64{"nvidia.com/gpu": 8}, Replicas: ptr.To[int32](1), Hardware: "nvidia.com/gpu, any model"}, Cutover: &cutover.Effect{Result: cutover.StaysLegacy, Today: 1, After: 1, Pods: 1, Served: 1}},
		{Row: decisions.Row{Kind: "Deployment", Namespace: "inference", Name: "api", Outcome: reason.OutcomeSkip, Replicas: ptr.To[int32](2)}, Cutover: &cutover.Effect{Result: cutover.NotAffected}},
		{Row: decisions.Row{Kind: "Pod", Namespace: "lab", Name: "typo", Outcome: reason.OutcomeKeepLegacy, Decisive: &reason.Reason{Code: translate.ReasonRequestLimitMismatch, Severity: reason.SeverityWarning, Message: "nvidia.com/gpu request 1 differs from limit 2"}, DevicesRequested: map[string]int64{"nvidia.com/gpu": 2}, Hardware: "nvidia.com/gpu, any model"},
			Cutover: &cutover.Effect{Result: cutover.NotCreatable, Why: `kube-apiserver refuses to create its pods: Pod "typo" is invalid: spec.containers[0].resources.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2`}},
	}
	r := report.New("cluster (forecast after the switch to DRA)", "profiles:nvidia", rows)
	r.Forecast = &cutover.Summary{GFDLabels: "drop", Order: "by priority, then creation time", Nodes: 7, Switched: 5, Devices: map[string]int{"gpu.nvidia.com": 45},
		Left:    []cutover.NodeNote{{Name: "optout-0", Why: "opted out (nvidia.com/gpu.deploy.operands=false)"}},
		Unknown: []string{"numaNode", "pcieRoot", "uuid"}, Classes: []string{"gpu.nvidia.com", "mig.nvidia.com"},
		Suggested: []cutover.SuggestedClass{{Resource: "nvidia.com/gpu", Rows: 2, Devices: 5, YAML: "kind: DeviceClass\nspec:\n  extendedResourceName: nvidia.com/gpu\n",
			Changes: []cutover.Change{{Object: "lab/Pod/debug", Source: "lab/debug.yaml#0", Was: cutover.Breaks, Now: cutover.ServedByClass, NowServed: 1, Pods: 1}}}},
		Caveats: []cutover.Caveat{{Text: "GFD labels go", Source: "NVIDIA GPU Operator v26.7.0"}},
		Pools:   []cutover.PoolScale{{Pool: "karpenter.sh/nodepool=gpu", Nodes: 2, Autoscaler: "Karpenter (default)", FromZero: "no", Remedy: "turn on Karpenter's DRA support"}},
		YAML:    "apiVersion: v1\nkind: Node\nmetadata:\n  name: a100-0\n"}
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
		"after the switch (5 of 7 nodes switch, GFD labels drop): 2 break, 1 cannot be created, 1 depend on the order, 1 not served today either, 1 move, 1 stay on the device plugin, 1 not affected",
		"lab/Pod/typo                          NotCreatable    -            -                  KeepLegacy",
		`kube-apiserver refuses to create its pods: Pod "typo" is invalid`,
		"pool karpenter.sh/nodepool=gpu (2 nodes): autoscaler Karpenter (default); adds a first node for claims: no (turn on Karpenter's DRA support)",
		// The pods served over the orders, not claimbridge's one.
		"research/Job/finetune                 OrderDependent  1–2/2",
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
		`data-cutover-result="OrderDependent">1<`, `data-cutover-result="NotServedToday">1<`,
		// 6 + 8 + 4 + 1 + 8 devices served today (not the 2 no node
		// serves today); the whole cluster placed serves 6 + 4 + 8 of
		// them: 4 of the finetune's, the embeddings' 4 and the debug's 1
		// are lost.
		`data-cutover="today">27<`, `data-cutover="servable">18<`, `data-cutover="breaks-devices">9<`,
		// The finetune's second pod is served in some orders: 18 to 22.
		`data-cutover="servable-least">18<`, `data-cutover="servable-most">22<`,
		`data-short="OrderDependent"`, "research/Deployment/trainer", `data-cutover="order"`,
		// A row kube-apiserver refuses is shown with what it says.
		`data-cutover-result="NotCreatable">1<`, `data-short="NotCreatable"`, "must be equal to nvidia.com/gpu limit of 2",
		// A suggested class lists what it changes, by file and object.
		"every workload it changes: lab/Pod/debug (lab/debug.yaml#0): Breaks → ServedByClass (0 → 1 of 1 pods)",
		// At a glance says what the cutover section says.
		`data-kpi="served-share">66%<`, `name="cutover"`, `data-cutover="OrderDependent"`,
		`data-code="SharedDeviceNotMapped" data-devices="4"`, `data-code="NodeNamePreset" data-devices="1"`,
		`data-servable="inference"`, `data-suggested="nvidia.com/gpu"`, `data-forecast="switched">5<`,
		`data-forecast-driver="gpu.nvidia.com">45<`, "opted out (nvidia.com/gpu.deploy.operands=false)",
		"Source: NVIDIA GPU Operator v26.7.0", "a time-sliced GPU &lt;shared&gt;",
		`data-pool="karpenter.sh/nodepool=gpu"`, `data-from-zero="no">no<`, "turn on Karpenter&#39;s DRA support",
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

// TestAutoscalingLostIsShownOnTheRow: a row marked autoscaling lost leads
// its table reason with AutoscalerIgnoresClaims, and the page shows the
// code, the pool and its remedy among the workloads served in part and on
// the row; the JSON row carries the pool.
func TestAutoscalingLostIsShownOnTheRow(t *testing.T) {
	why := "autoscaling lost in pool karpenter.sh/nodepool=gpu: today its autoscaler adds nodes for the pods that do not fit (2 nodes of the pool can run them), " +
		"after the switch none for their claims; 2 of 3 pods served: the fleet after the switch has room for no more of them, whatever the order"
	r := report.New("cluster (forecast after the switch to DRA)", "profiles:nvidia", []report.Row{
		{Row: decisions.Row{Kind: "Deployment", Namespace: "serving", Name: "llm", Outcome: reason.OutcomeTranslate, Verdict: "FitsNow", DevicesRequested: map[string]int64{"nvidia.com/gpu": 8}, Replicas: ptr.To[int32](3)}, Cutover: &cutover.Effect{Result: cutover.Partial, Today: 2, After: 2, Pods: 3, Served: 2, Alone: 2, Why: why,
			AutoscalingLost: &cutover.AutoscaledPool{Label: "karpenter.sh/nodepool", Name: "gpu", Nodes: 2}}},
	})
	r.Forecast = &cutover.Summary{GFDLabels: "drop", Nodes: 2, Switched: 2}
	var b bytes.Buffer
	if err := r.Write(&b, "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "AutoscalerIgnoresClaims: autoscaling lost in pool karpenter.sh/nodepool=gpu: today") {
		t.Errorf("the table does not lead the row's reason with the code:\n%s", b.String())
	}
	b.Reset()
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data-short-code="AutoscalerIgnoresClaims"`, `data-autoscaling-lost="karpenter.sh/nodepool=gpu"`, "set autoscaling.draAware: true in the policy"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	b.Reset()
	if err := r.Write(&b, "json"); err != nil {
		t.Fatal(err)
	}
	back, err := report.Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Items[0].Cutover.AutoscalingLost; got == nil || *got != (cutover.AutoscaledPool{Label: "karpenter.sh/nodepool", Name: "gpu", Nodes: 2}) {
		t.Errorf("the JSON row's pool: %+v", got)
	}
}
