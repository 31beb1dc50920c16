package cli

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/internal/testing/browser"
	"github.com/claimbridge/claimbridge/internal/testing/golden"
	"github.com/claimbridge/claimbridge/internal/testing/reportpage"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

var forecastArgs = []string{"audit", "--forecast", "-f", "../../../examples/cutover", "--fleet", "../../../examples/fleets/before-cutover"}

// sharesPlatform declares the standalone NVIDIA chart with 4 consumable
// shares per GPU, as many as the T4 node's time-slicing replicas.
const sharesPlatform = "../../../examples/platforms/consumable-shares-4.yaml"

// TestForecastExamples: the cutover example's workloads against the fleet
// before the switch (no ResourceSlice at all): each row says what the
// switch does to it, the forecast fleet written with --forecast-out is
// read back by --fleet, and the audit of that fleet agrees with the
// forecast row for row.
func TestForecastExamples(t *testing.T) {
	out := filepath.Join(t.TempDir(), "forecast.yaml")
	js, err := run(t, "", append(forecastArgs, "-o", "json", "--forecast-out", out, "--platform", sharesPlatform)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	rep, err := report.Read(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]cutover.Result{
		"trainer": cutover.Moves, "notebook": cutover.Moves,
		// The trainer can take the H100 node's GPUs first.
		"finetune-h100": cutover.OrderDependent,
		// Three pods, two MIG devices of the profile, today and after.
		"mig-serve": cutover.Partial,
		// Time-sliced T4s: shares of the T4 GPUs after the switch.
		"embeddings": cutover.Moves, "debug-a100": cutover.Breaks,
		"k80-batch":      cutover.NotServedToday,
		"legacy-serving": cutover.StaysLegacy, "api": cutover.NotAffected,
	}
	served := map[string][2]int64{"trainer": {3, 3}, "notebook": {2, 2}, "finetune-h100": {2, 2}, "mig-serve": {2, 3}, "embeddings": {4, 4},
		"debug-a100": {0, 1}, "k80-batch": {0, 1}, "legacy-serving": {1, 1}}
	outcomes := map[string]reason.Outcome{}
	for _, row := range rep.Items {
		outcomes[row.Name] = row.Outcome
		if row.Cutover == nil || row.Cutover.Result != want[row.Name] {
			t.Errorf("%s: cutover %+v, want %s", row.Name, row.Cutover, want[row.Name])
			continue
		}
		if row.Cutover.Result == cutover.Breaks && (row.Decisive == nil || row.Cutover.Why == "") {
			t.Errorf("%s breaks without saying why: %+v", row.Name, row)
		}
		if got := [2]int64{row.Cutover.Served, row.Cutover.Pods}; got != served[row.Name] {
			t.Errorf("%s: %d of %d pods served, want %d of %d", row.Name, got[0], got[1], served[row.Name][0], served[row.Name][1])
		}
		if row.Name == "finetune-h100" && (!slices.Equal(row.Cutover.Competes, []string{"research/Deployment/trainer"}) || row.Cutover.Alone != 2) {
			t.Errorf("finetune-h100 competes with %v (alone %d), want the trainer (alone 2)", row.Cutover.Competes, row.Cutover.Alone)
		}
	}
	if len(rep.Items) != len(want) {
		t.Errorf("%d rows, want %d", len(rep.Items), len(want))
	}
	f := rep.Forecast
	if f == nil || f.Switched != 5 || f.Nodes != 7 || f.GFDLabels != "drop" || len(f.Left) != 1 || f.Left[0].Name != "cutover-optout-0" || f.YAML == "" || len(f.Caveats) == 0 || f.Order == "" {
		t.Fatalf("forecast: %+v", f)
	}

	// The forecast fleet, read back as a fleet: what moves is translated
	// and fits now, what breaks or stays is kept.
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != f.YAML {
		t.Error("--forecast-out differs from the report's forecast fleet")
	}
	inv, err := feasibility.LoadInventory(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Slices) == 0 || len(inv.Classes) == 0 {
		t.Fatalf("forecast fleet: %d slices, %d classes", len(inv.Slices), len(inv.Classes))
	}
	js, err = run(t, "", "audit", "-f", "../../../examples/cutover", "--fleet", out, "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	after, err := report.Read(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range after.Items {
		if row.Outcome != outcomes[row.Name] {
			t.Errorf("%s: %s against the forecast fleet file, %s in the forecast", row.Name, row.Outcome, outcomes[row.Name])
		}
		if (want[row.Name] == cutover.Moves || want[row.Name] == cutover.OrderDependent) && row.Verdict != string(feasibility.FitsNow) {
			t.Errorf("%s moves in the forecast but is %s against its fleet", row.Name, row.Verdict)
		}
	}

	if _, err := run(t, "", append(forecastArgs, "--fail-on", "breaks")...); exitCode(err) != exitInvalid {
		t.Errorf("--fail-on breaks with a row that breaks: exit %d, want %d", exitCode(err), exitInvalid)
	}
	// Time-sliced GPUs on a driver that runs its defaults
	// (--consumable-shares=disabled, no platform declared), or forecast
	// whole: the T4 shares break, and say what would make them move — the
	// gate, the flag and the chart's values.
	// The driver's memory mode publishes no shares capacity, and a claim
	// that asks for no memory takes the whole GPU: without the policy's
	// memoryShares the shares stay as submitted there too.
	memory := modePlatform(t, "memory")
	for _, extra := range [][]string{nil, {"--forecast-time-slicing", "whole"}, {"--platform", sharesPlatform, "--forecast-time-slicing", "whole"}, memory} {
		js, err = run(t, "", append(append(forecastArgs, "-o", "json"), extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := report.Read(strings.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range whole.Items {
			if row.Name != "embeddings" {
				continue
			}
			if row.Cutover == nil || row.Cutover.Result != cutover.Breaks || row.Decisive == nil || row.Decisive.Code != translate.ReasonSharesUnavailable {
				t.Errorf("%v: embeddings with time-sliced GPUs forecast whole: %+v (decisive %+v), want Breaks for SharesUnavailable", extra, row.Cutover, row.Decisive)
				continue
			}
			remedy := row.Remedy(offline.Reasons(), row.Decisive.Code)
			for _, name := range []string{"ConsumableShares", "--consumable-shares=", "consumableShares="} {
				if !strings.Contains(remedy, name) {
					t.Errorf("%v: embeddings breaks, and its remedy %q does not name %s", extra, remedy, name)
				}
			}
		}
		if extra == nil && !slices.ContainsFunc(whole.Forecast.Notes, func(n string) bool {
			return strings.Contains(n, "--consumable-shares=disabled (default:") && strings.Contains(n, "featureGates.ConsumableShares=true")
		}) {
			t.Errorf("driver defaults: no note says the T4s are whole GPUs by the driver's default, and how to share them: %q", whole.Forecast.Notes)
		}
	}
	for _, args := range [][]string{
		append(forecastArgs, "--gfd-labels", "sometimes"),
		append(forecastArgs, "--forecast-time-slicing", "sometimes"),
		{"audit", "-f", "../../../examples/cutover", "--fleet", "../../../examples/fleets/before-cutover", "--forecast-time-slicing", "whole"},
		append(forecastArgs, "--forecast-nodes", "a in (b"),
		append(forecastArgs, "--platform-preset", "gpu-operator,nvidia-gpu-operator"),
		{"audit", "-f", "../../../examples/cutover", "--fleet", "../../../examples/fleets/before-cutover", "--platform", sharesPlatform},
		{"audit", "-f", "../../../examples/cutover", "--fleet", "../../../examples/fleets/before-cutover", "--platform-preset", "gpu-operator"},
		{"audit", "-f", "../../../examples/cutover", "--fleet", "../../../examples/fleets/before-cutover", "--fail-on", "breaks"},
		{"audit", "-f", "../../../examples/cutover", "--fleet", "../../../examples/fleets/before-cutover", "--forecast-nodes", "a=b"},
	} {
		if _, err := run(t, "", args...); exitCode(err) != exitUsage {
			t.Errorf("%v: exit %d (%v), want %d", args[1:], exitCode(err), err, exitUsage)
		}
	}
	// A selector that leaves the H100 node alone: the H100 Job has no node
	// to move to, and the node keeps its device plugin, so it stays.
	js, err = run(t, "", append(forecastArgs, "-o", "json", "--forecast-nodes", "node.kubernetes.io/instance-type!=p5.48xlarge")...)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := report.Read(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range sel.Items {
		if row.Name == "finetune-h100" && (row.Cutover == nil || row.Cutover.Result != cutover.StaysLegacy) {
			t.Errorf("finetune-h100 with the H100 node left alone: %+v", row.Cutover)
		}
	}
	if sel.Forecast.Switched != 4 {
		t.Errorf("%d nodes switch with the H100 node left alone, want 4", sel.Forecast.Switched)
	}
}

// karpenterFleet is the before-cutover fleet with every node in the
// Karpenter NodePool "gpu", in a directory of the test's.
func karpenterFleet(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob("../../../examples/fleets/before-cutover/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("the before-cutover fleet: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		labelled := strings.Replace(string(b), "kind: Node\nmetadata:\n  labels:\n", "kind: Node\nmetadata:\n  labels:\n    karpenter.sh/nodepool: gpu\n", 1)
		if labelled == string(b) {
			t.Fatalf("%s: no node labels to add to", f)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(labelled), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestForecastMarksAutoscalingLost: the cutover example on its fleet with
// every node in a Karpenter NodePool: the workload that moves with more
// pods than the fleet after the switch serves (mig-serve, 2 of 3) is
// marked autoscaling lost, in its JSON row and at the head of its table
// reason (AutoscalerIgnoresClaims), and the summary has the autoscaling
// caveat; no other row is marked. With autoscaling.draAware in the policy,
// none is.
// modePlatform declares the NVIDIA DRA driver run with
// --consumable-shares=mode, as platform flags.
func modePlatform(t *testing.T, mode string) []string {
	t.Helper()
	f := filepath.Join(t.TempDir(), mode+".yaml")
	doc := "apiVersion: claimbridge.io/v1alpha1\nkind: Platform\nspec:\n  drivers:\n  - family: nvidia-gpu\n    consumableShares: " + mode + "\n"
	if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--platform", f}
}

// TestTimeSlicedGPUsMoveByMemory: the 4 time-sliced T4 pods of
// examples/cutover move where the driver shares GPUs by memory: in
// unlimited mode a share asks for nothing; in memory mode with the
// policy's memoryShares 4 each asks for a quarter of a T4's memory, which
// the template carries. In memory mode without memoryShares they break
// (TestForecastExamples). The memory case runs the shipped
// examples/platforms/memory-shares*.yaml.
func TestTimeSlicedGPUsMoveByMemory(t *testing.T) {
	cases := map[string]struct {
		args   []string
		memory string // the share's memory request in the template, "" none
	}{
		"unlimited":                  {args: modePlatform(t, "unlimited")},
		"memory with memoryShares 4": {args: []string{"--platform", "../../../examples/platforms/memory-shares.yaml", "--policy", "../../../examples/platforms/memory-shares-policy.yaml"}, memory: "3840Mi"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"audit", "--forecast", "-f", "../../../examples/cutover", "--fleet", "../../../examples/fleets/before-cutover", "-o", "json"}, tc.args...)
			js, err := run(t, "", args...)
			if err != nil {
				t.Fatal(err)
			}
			r, err := report.Read(strings.NewReader(js))
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(r.Items, func(row report.Row) bool { return row.Name == "embeddings" })
			if i < 0 {
				t.Fatal("no row for embeddings")
			}
			row := r.Items[i]
			if row.Cutover == nil || row.Cutover.Result != cutover.Moves || row.Cutover.Served != 4 {
				t.Fatalf("embeddings: %+v (decisive %+v), want Moves with 4 of 4 pods served", row.Cutover, row.Decisive)
			}
			if got := strings.Contains(js, "with memory="+tc.memory+" per device"); tc.memory != "" && !got {
				t.Errorf("the translation of embeddings does not ask for memory=%s per device", tc.memory)
			}
		})
	}
}

func TestForecastMarksAutoscalingLost(t *testing.T) {
	fleet := karpenterFleet(t)
	args := []string{"audit", "--forecast", "-f", "../../../examples/cutover", "--fleet", fleet}
	js, err := run(t, "", append(args, "-o", "json")...)
	if err != nil && exitCode(err) != exitInvalid {
		t.Fatal(err)
	}
	rep, err := report.Read(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	var marked []string
	for _, row := range rep.Items {
		if row.Cutover != nil && row.Cutover.AutoscalingLost != nil {
			marked = append(marked, row.Name)
			if p := row.Cutover.AutoscalingLost; p.Label != "karpenter.sh/nodepool" || p.Name != "gpu" || row.Cutover.Served >= row.Cutover.Pods {
				t.Errorf("%s: marked %+v with %d of %d pods served", row.Name, p, row.Cutover.Served, row.Cutover.Pods)
			}
		}
	}
	if !slices.Equal(marked, []string{"mig-serve"}) {
		t.Errorf("rows marked autoscaling lost: %v, want [mig-serve]", marked)
	}
	if !slices.ContainsFunc(rep.Forecast.Caveats, func(c cutover.Caveat) bool { return strings.HasPrefix(c.Text, "Autoscaling: 7 of the nodes") }) {
		t.Errorf("no autoscaling caveat among %+v", rep.Forecast.Caveats)
	}
	table, err := run(t, "", args...)
	if err != nil && exitCode(err) != exitInvalid {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(strings.Split(table, "\n"), func(l string) bool {
		return strings.HasPrefix(l, "lab/Deployment/mig-serve ") && strings.Contains(l, " Partial ") && strings.Contains(l, "AutoscalerIgnoresClaims: autoscaling lost in pool karpenter.sh/nodepool=gpu")
	}) {
		t.Errorf("the table's mig-serve row does not say autoscaling is lost:\n%s", table)
	}

	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nspec:\n  profiles: [nvidia, gke, nfd]\n  autoscaling:\n    draAware: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	js, err = run(t, "", append(args, "-o", "json", "--policy", policy)...)
	if err != nil && exitCode(err) != exitInvalid {
		t.Fatal(err)
	}
	if rep, err = report.Read(strings.NewReader(js)); err != nil {
		t.Fatal(err)
	}
	for _, row := range rep.Items {
		if row.Cutover != nil && row.Cutover.AutoscalingLost != nil {
			t.Errorf("%s marked autoscaling lost with autoscaling.draAware", row.Name)
		}
		if row.Name == "mig-serve" && (row.Cutover == nil || row.Cutover.Result != cutover.Partial) {
			t.Errorf("mig-serve with autoscaling.draAware: %+v, want Partial unmarked", row.Cutover)
		}
	}
}

// TestForecastPageInChromium opens the cutover example's page in a real
// headless Chromium: the cutover view's counts equal the JSON report's,
// the forecast fleet downloads as the YAML the report holds. It saves a
// screenshot of the view (forecast-cutover.png under _output):
// docs/cutover.png, which README.md and docs/concepts/cutover.md show, is
// the same page rendered from the repository root.
func TestForecastPageInChromium(t *testing.T) {
	chromium := browser.ForTest(t)
	url, rep := pageInBrowser(t, chromium, "forecast", append(slices.Clone(forecastArgs), "--platform", sharesPlatform)...)
	out := outputDir(t)
	if err := chromium.Screenshot(t.Context(), url, filepath.Join(out, "forecast-cutover.png"), 1280, 2100); err != nil {
		t.Fatal(err)
	}
	dom, err := chromium.DumpDOM(t.Context(), url, 1280, 900)
	if err != nil {
		t.Fatal(err)
	}
	p, err := reportpage.Parse(dom)
	if err != nil {
		t.Fatal(err)
	}
	for res, n := range rep.Summary.Cutover {
		cells := p.All(reportpage.WithAttr("data-cutover-result", string(res)))
		if len(cells) != 1 || reportpage.Text(cells[0]) != strconv.Itoa(n) {
			t.Errorf("the cutover view's %s count: %d cells, want one saying %d", res, len(cells), n)
		}
	}
	breaks := p.All(reportpage.Element("tr", "break"))
	if len(breaks) != 1 {
		t.Errorf("%d groups of what breaks, want 1 (NodeNamePreset)", len(breaks))
	}
	// The page names the platform it assumed, fact by fact.
	named := p.All(reportpage.WithAttr("data-platform", rep.Forecast.Platform))
	facts := p.All(reportpage.Element("ul", "platform"))
	if rep.Forecast.Platform == "" || len(named) != 1 || len(facts) != 1 || !strings.Contains(reportpage.Text(facts[0]), "class gpu.nvidia.com maps nvidia.com/gpu (declared") ||
		!strings.Contains(reportpage.Text(facts[0]), "consumable shares 4 (declared") {
		t.Errorf("the page does not name the platform %q with its facts (%d, %d)", rep.Forecast.Platform, len(named), len(facts))
	}
	// The numbers at the top are the whole cluster's: the devices of the
	// pods the placement serves, of those served today.
	var today, after int64
	for _, row := range rep.Items {
		c := row.Cutover
		if c == nil || c.Result == cutover.NotServedToday || row.Demand() == 0 {
			continue
		}
		today += row.Demand()
		if c.Result == cutover.NotAffected {
			after += row.Demand()
		} else {
			after += row.Demand() / row.Pods() * c.Served
		}
	}
	for attr, n := range map[string]int64{"today": today, "servable": after, "breaks-devices": today - after} {
		cells := p.All(reportpage.WithAttr("data-cutover", attr))
		if len(cells) != 1 || reportpage.Text(cells[0]) != strconv.FormatInt(n, 10) {
			t.Errorf("the cutover view's %s: %d cells, want one saying %d", attr, len(cells), n)
		}
	}
	// Every workload: the rows that are not served in full are there, and
	// the filter by cutover result keeps just them (the fragment is read
	// as the page loads).
	for _, res := range []cutover.Result{cutover.NotServedToday, cutover.Partial, cutover.OrderDependent} {
		dom, err := chromium.DumpDOM(t.Context(), url+"#cutover="+string(res), 1280, 900)
		if err != nil {
			t.Fatal(err)
		}
		filtered, err := reportpage.Parse(dom)
		if err != nil {
			t.Fatal(err)
		}
		var shown, hidden int
		for _, tr := range filtered.All(reportpage.Element("tr", "row")) {
			if _, h := reportpage.Attr(tr, "hidden"); h {
				hidden++
				continue
			}
			shown++
			if got, _ := reportpage.Attr(tr, "data-cutover"); got != string(res) {
				t.Errorf("#cutover=%s shows a %s row", res, got)
			}
		}
		if shown != 1 || hidden != len(rep.Items)-1 {
			t.Errorf("#cutover=%s: %d rows shown, %d hidden; want 1 and %d", res, shown, hidden, len(rep.Items)-1)
		}
	}
	links := p.All(reportpage.Element("a", "download"))
	if len(links) != 1 {
		t.Fatalf("%d download links, want 1", len(links))
	}
	href, _ := reportpage.Attr(links[0], "href")
	y, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(href, "data:application/yaml;base64,"))
	if err != nil || string(y) != rep.Forecast.YAML {
		t.Errorf("the download link does not hold the forecast fleet (%v)", err)
	}
}

// TestForecastExamplesByPlatform: the cutover example's forecast, as text,
// on each install path the presets name, on the drivers' defaults and on a
// declared platform (testdata/platform/<name>.golden.txt): the summary
// line names the platform, and the rows follow it — a class that maps
// nvidia.com/gpu serves plain GPU pods as submitted where the Operator's
// does not, and time-sliced GPUs break on a driver without shares.
func TestForecastExamplesByPlatform(t *testing.T) {
	cases := map[string][]string{"driver-defaults": nil, "consumable-shares-4": {"--platform", sharesPlatform}}
	for _, preset := range v1alpha1.PlatformPresets() {
		cases["preset-"+preset] = []string{"--platform-preset", preset}
	}
	for name, extra := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, "", append(slices.Clone(forecastArgs), extra...)...)
			if err != nil && exitCode(err) != exitInvalid {
				t.Fatalf("%v\n%s", err, out)
			}
			golden.Check(t, filepath.Join("testdata", "platform", name+".golden.txt"), []byte(out))
			if !strings.Contains(out, "after the switch (platform ") {
				t.Errorf("the summary does not name the platform:\n%s", out)
			}
		})
	}
}

// TestForecastFollowsTheClassMapping: with the standalone chart's classes
// (gpu.nvidia.com maps nvidia.com/gpu) the forecast fleet's class carries
// extendedResourceName, and legacy-serving, pinned to the opted-out node
// whose device plugin stays, is still served there by the device plugin
// (kube-scheduler counts a node's allocatable before any class); with the
// GPU Operator's classes nothing is mapped.
func TestForecastFollowsTheClassMapping(t *testing.T) {
	for preset, maps := range map[string]bool{"nvidia-dra-driver": true, "gpu-operator": false} {
		js, err := run(t, "", append(slices.Clone(forecastArgs), "-o", "json", "--platform-preset", preset)...)
		if err != nil && exitCode(err) != exitInvalid {
			t.Fatal(err)
		}
		rep, err := report.Read(strings.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(rep.Forecast.YAML, "extendedResourceName: nvidia.com/gpu"); got != maps {
			t.Errorf("%s: the forecast fleet maps nvidia.com/gpu: %v, want %v", preset, got, maps)
		}
		for _, row := range rep.Items {
			if row.Name == "legacy-serving" && (row.Cutover == nil || row.Cutover.Result != cutover.StaysLegacy || row.Cutover.Served != 1) {
				t.Errorf("%s: legacy-serving %+v, want StaysLegacy 1/1 on the opted-out node's device plugin", preset, row.Cutover)
			}
		}
	}
}

// TestTPUClaimsTakeWholeNodes: on TPU v5e 2x4 nodes (8 chips each), a
// Deployment asking for google.com/tpu: 4 stays as submitted, its reason
// naming the TPU driver's rule (a claim for fewer chips than the node has
// is never prepared), and one asking for 8 is translated with a selector
// on the node's chip count; the audit as a reviewer reads it
// (testdata/tpu/whole-node.golden.txt), and the forecast of the same
// fleet before the switch says the same.
func TestTPUClaimsTakeWholeNodes(t *testing.T) {
	in := filepath.Join("testdata", "tpu", "whole-node.yaml")
	out, err := run(t, "", "audit", "-f", in, "--fleet", "../../../examples/fleets/tpu-v5e", "-o", "json")
	if err != nil && exitCode(err) != exitInvalid {
		t.Fatalf("%v\n%s", err, out)
	}
	rep, err := report.Read(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rep.Items {
		switch row.Name {
		case "tpu-4":
			if row.Outcome != reason.OutcomeKeepLegacy || row.Decisive == nil || !strings.Contains(row.Decisive.Message, "driver prepares only claims for all of a node's devices") {
				t.Errorf("tpu-4: %s %+v, want kept as submitted for the driver's rule", row.Outcome, row.Decisive)
			}
		case "tpu-8":
			if row.Outcome != reason.OutcomeTranslate || row.Verdict != string(feasibility.FitsNow) {
				t.Errorf("tpu-8: %s %s, want translated and FitsNow", row.Outcome, row.Verdict)
			}
		}
	}
	table, err := run(t, "", "audit", "-f", in, "--fleet", "../../../examples/fleets/tpu-v5e", "-o", "markdown")
	if err != nil && exitCode(err) != exitInvalid {
		t.Fatalf("%v\n%s", err, table)
	}
	golden.Check(t, filepath.Join("testdata", "tpu", "whole-node.golden.txt"), []byte(table))

	// The forecast of the same node before the switch (the device plugin's
	// 8 chips): the 4-chip Deployment breaks, for the driver's rule; the
	// 8-chip one moves.
	js, err := run(t, "", "audit", "--forecast", "-f", in, "--fleet", "../../../forecast/testdata/golden/gke-tpu-v5e/nodes.yaml", "-o", "json")
	if err != nil && exitCode(err) != exitInvalid {
		t.Fatalf("%v\n%s", err, js)
	}
	if rep, err = report.Read(strings.NewReader(js)); err != nil {
		t.Fatal(err)
	}
	for _, row := range rep.Items {
		want := map[string]cutover.Result{"tpu-4": cutover.Breaks, "tpu-8": cutover.Moves}[row.Name]
		if row.Cutover == nil || row.Cutover.Result != want {
			t.Errorf("%s: forecast %+v, want %s", row.Name, row.Cutover, want)
		}
		if row.Name == "tpu-4" && (row.Decisive == nil || !strings.Contains(row.Decisive.Message, "prepares only claims for all of a node's devices")) {
			t.Errorf("tpu-4 breaks without naming the driver's rule: %+v", row.Decisive)
		}
	}
}
