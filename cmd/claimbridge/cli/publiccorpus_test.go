package cli

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// The public corpus (internal/testing/publiccorpus: manifests that mirror
// public GPU, TPU and NIC workloads, with their sources) run through every
// command a user runs offline, with the default policy.

const (
	corpusManifests = "../../../internal/testing/publiccorpus/manifests"
	exampleFleets   = "../../../examples/fleets"
	// placementFleets holds fleets of the placement corpus; gkeFleets carry GKE's own
	// labels and taints: GKE's GPU and TPU pools, A3 High beside A3 Mega.
	placementFleets = "../../../feasibility/testdata/placement/fleets"
)

var gkeFleets = []string{"gke", "gke-a3"}

// corpusTally counts what TestPublicCorpus checked.
type corpusTally struct {
	files, templates, objects         int // objects: asking for devices outside any pod template
	runs                              int // commands run
	exit                              [2]int
	translated, kept, skipped         int // without a fleet
	devices, tolerations, implicit    int // translations whose devices and tolerations were checked; with tolerations added by rule
	unchanged                         int // documents checked byte for byte
	reasoned                          int // kept or skipped decisions checked against the catalog
	fleetDecisions, proven, fleetKept int // decisions against the example fleets
	forecastRows, forecastMoves       int
	fleets                            []string
	byOutcome                         map[reason.Outcome]int
	decisive                          map[reason.Code]int
	kinds                             map[string]int // rows without a fleet, by kind
}

// corpusKinds are kinds the corpus must hold a row of: those public
// manifests showed with no row or the wrong one.
var corpusKinds = []string{"SparkApplication", "ScheduledSparkApplication", "VirtualMachine", "VirtualMachineInstance", "VirtualMachinePool",
	"DynamoGraphDeployment", "HyperJob", "JobTemplate", "Workload", "NodePool", "NodeClaim"}

// corpusFiles is the fewest files the corpus holds.
const corpusFiles = 130

// TestPublicCorpus runs `translate`, `explain`, `audit` (against a fleet of
// its hardware) and `audit --forecast` (before-cutover) over every file of
// the public corpus, and decides every pod template of every file without a
// fleet and against each example fleet that publishes DRA devices. For
// every pod template:
//
//   - no command panics, and each exits 0 or 1;
//   - a translation asks for as many devices as the pod as submitted (the
//     claim's requests, every alternative alike, count the pod's effective
//     device request);
//   - a translation adds no toleration but the ExtendedResourceToleration
//     plugin's, and those only for the resources it removed, where the
//     target cluster runs the plugin (the policy says so, or the pod
//     requires a label only GKE nodes carry); there it loses none of them;
//   - a document with nothing translated comes out of `translate` byte for
//     byte;
//   - a pod kept as submitted or skipped says why with a reason of the
//     catalog, which leads to that outcome;
//   - against a fleet (the example fleets, the placement corpus's GKE
//     fleets, and the cutover forecast's), a translation lands on
//     exactly the nodes where the pod as submitted would run (the placement
//     check proves it), or the pod is kept.
//
// The corpus holds at least corpusFiles files, a row of each kind of
// corpusKinds, and rows kept for a VM's devices, for a KAI-Scheduler GPU
// share and skipped as a record of other pods. A defect found on a real
// manifest becomes a corpus file (and a row of SOURCES.md), not a one-off
// unit case.
func TestPublicCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusManifests, "*", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	fleets := openExampleFleets(t)
	tally := &corpusTally{byOutcome: map[reason.Outcome]int{}, decisive: map[reason.Code]int{}, kinds: map[string]int{}}
	for name := range fleets {
		tally.fleets = append(tally.fleets, name)
	}
	slices.Sort(tally.fleets)
	policy := translate.DefaultPolicy()
	for _, f := range files {
		rel, _ := filepath.Rel(corpusManifests, f)
		tally.files++
		t.Run(strings.TrimSuffix(rel, ".yaml"), func(t *testing.T) {
			input, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out := corpusCommands(t, f, string(input), tally)
			corpusOffline(t, f, string(input), out, policy, tally)
			corpusFleets(t, f, policy, fleets, tally)
			corpusForecast(t, f, policy, tally)
		})
	}
	t.Logf("public corpus: %d files, %d pod templates and %d objects that ask for devices outside any; without a fleet %d translated, %d kept, %d skipped",
		tally.files, tally.templates, tally.objects, tally.translated, tally.kept, tally.skipped)
	t.Logf("commands: %d runs (translate, explain, audit, audit --forecast), %d exited 0, %d exited 1, none panicked",
		tally.runs, tally.exit[0], tally.exit[1])
	t.Logf("devices per pod unchanged: %d translations; tolerations: %d translations checked, %d with the plugin's toleration added by rule",
		tally.devices, tally.tolerations, tally.implicit)
	t.Logf("unchanged documents byte for byte: %d; kept or skipped with a catalog reason: %d decisions", tally.unchanged, tally.reasoned)
	t.Logf("against the example fleets (%s): %d decisions, %d translated with the placement proven equal, %d kept or skipped",
		strings.Join(tally.fleets, ", "), tally.fleetDecisions, tally.proven, tally.fleetKept)
	t.Logf("cutover forecast (before-cutover): %d rows, %d moving to DRA with the placement proven equal", tally.forecastRows, tally.forecastMoves)
	var decisive []string
	for _, c := range slices.Sorted(maps.Keys(tally.decisive)) {
		decisive = append(decisive, fmt.Sprintf("%s %d", c, tally.decisive[c]))
	}
	t.Logf("without a fleet, outcomes %v; decisive reasons: %s", tally.byOutcome, strings.Join(decisive, ", "))
	if tally.templates < 60 {
		t.Errorf("the corpus has %d pod templates, want at least 60", tally.templates)
	}
	if tally.files < corpusFiles {
		t.Errorf("the corpus has %d files, want at least %d", tally.files, corpusFiles)
	}
	for _, k := range corpusKinds {
		if tally.kinds[k] == 0 {
			t.Errorf("the corpus has no row of a %s", k)
		}
	}
	for _, c := range []reason.Code{decide.ReasonVirtLauncherDevices, decide.ReasonSharedByReservationPod, offline.ReasonRecordOfPods} {
		if tally.decisive[c] == 0 {
			t.Errorf("no row of the corpus is decided by %s", c)
		}
	}
}

// openExampleFleets opens every example fleet that publishes DRA devices,
// and the placement corpus's GKE fleets.
func openExampleFleets(t *testing.T) map[string]*feasibility.Inventory {
	t.Helper()
	dirs, err := os.ReadDir(exampleFleets)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for _, d := range dirs {
		if d.IsDir() {
			paths[d.Name()] = filepath.Join(exampleFleets, d.Name())
		}
	}
	for _, name := range gkeFleets {
		paths["placement corpus "+name] = filepath.Join(placementFleets, name)
	}
	out := map[string]*feasibility.Inventory{}
	for name, path := range paths {
		inv, err := feasibility.LoadInventory(path)
		if err != nil {
			t.Fatalf("fleet %s: %v", name, err)
		}
		if len(inv.Slices) > 0 {
			out[name] = inv
		}
	}
	if len(out) == 0 {
		t.Fatal("no example fleet publishes DRA devices")
	}
	return out
}

// auditFleet is the example fleet of the hardware a corpus file asks for,
// for the audit command.
func auditFleet(input string) string {
	switch {
	case strings.Contains(input, "google.com/tpu"):
		return "tpu-v5e"
	case strings.Contains(input, "nvidia.com/gpumem") || strings.Contains(input, "hami"):
		return "hami-t4"
	case strings.Contains(input, "nvidia-l4") || strings.Contains(input, "NVIDIA-L4"):
		return "gke-l4"
	case strings.Contains(input, "MIG") || strings.Contains(input, "nvidia.com/mig-"):
		return "a100-mig"
	case strings.Contains(input, "H100") || strings.Contains(input, "h100") || strings.Contains(input, "B200") || strings.Contains(input, "efa") || strings.Contains(input, "rdma"):
		return "dgx-h100"
	}
	return "mixed"
}

// corpusCommands runs the commands over one file: none may panic, each
// exits 0 or 1. It returns translate's output.
func corpusCommands(t *testing.T, file, input string, tally *corpusTally) string {
	t.Helper()
	var translated string
	for _, args := range [][]string{
		{"translate", "-f", file},
		{"explain", "-f", file},
		{"audit", "-f", file, "--fleet", filepath.Join(exampleFleets, auditFleet(input)), "-o", "json"},
		{"audit", "-f", file, "--forecast", "--fleet", filepath.Join(exampleFleets, "before-cutover"), "-o", "json"},
	} {
		out, code, panicked := runRecovering(t, args...)
		tally.runs++
		if panicked != nil {
			t.Errorf("%s panicked: %v", strings.Join(args, " "), panicked)
			continue
		}
		if code != 0 && code != 1 {
			t.Errorf("%s exited %d:\n%s", strings.Join(args, " "), code, out)
			continue
		}
		tally.exit[code]++
		if args[0] == "translate" {
			translated = out
		}
	}
	return translated
}

// runRecovering runs the command, and recovers a panic.
func runRecovering(t *testing.T, args ...string) (out string, code int, panicked any) {
	defer func() {
		if r := recover(); r != nil {
			panicked = r
		}
	}()
	out, err := run(t, "", args...)
	return out, exitCode(err), nil
}

// readCorpusFile reads a corpus file as the commands do.
func readCorpusFile(t *testing.T, file string) []manifest.Document {
	t.Helper()
	docs, err := manifest.Read([]string{file}, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// corpusOffline decides the file as `translate` does without a fleet and
// checks every pod template: devices, tolerations, reasons; then that the
// documents with nothing translated are in translate's output as written.
func corpusOffline(t *testing.T, file, input, output string, policy *translate.Policy, tally *corpusTally) {
	t.Helper()
	docs := readCorpusFile(t, file)
	items, _, err := offline.Translate(t.Context(), docs, offline.Options{Policy: policy, Classes: offline.ClassesOf(docs), Quotas: offline.QuotasOf(docs)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		d := it.Decision
		if it.Pod == nil {
			tally.objects++
		} else {
			tally.templates++
		}
		tally.byOutcome[d.Outcome]++
		tally.decisive[d.Decisive.Code]++
		tally.kinds[it.Doc.Object.GetObjectKind().GroupVersionKind().Kind]++
		switch d.Outcome {
		case reason.OutcomeTranslate:
			tally.translated++
			checkDevices(t, it, policy, tally)
			checkTolerations(t, it, policy, tally)
		case reason.OutcomeKeepLegacy:
			tally.kept++
			checkReasoned(t, it.Name(), d.Outcome, d.Decisive, d.Reasons, tally)
		case reason.OutcomeSkip:
			tally.skipped++
			checkReasoned(t, it.Name(), d.Outcome, d.Decisive, d.Reasons, tally)
		default:
			t.Errorf("%s: outcome %q", it.Name(), d.Outcome)
		}
	}
	// A document is unchanged when translating it alone changes nothing;
	// it is then in translate's output byte for byte.
	for _, piece := range strings.SplitAfter(input, "\n---") {
		doc := strings.TrimSuffix(piece, "---")
		if strings.TrimSpace(doc) == "" {
			continue
		}
		alone, err := manifest.Read([]string{"-"}, strings.NewReader(doc))
		if err != nil || len(alone) == 0 {
			continue
		}
		got, _, err := offline.Translate(t.Context(), alone, offline.Options{Policy: policy, Classes: offline.ClassesOf(docs), Quotas: offline.QuotasOf(docs)})
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(got, func(it offline.Item) bool { return it.Decision.Outcome == reason.OutcomeTranslate }) {
			continue
		}
		tally.unchanged++
		if !strings.Contains(output, doc) {
			t.Errorf("a document with nothing translated is not in translate's output as written:\n%s", doc)
		}
	}
}

// checkDevices: the translation's claim asks for the devices the pod as
// submitted asks for — its effective request (decide.Decision.Requested),
// summed over the mapped resources — and every alternative of a request for
// as many.
func checkDevices(t *testing.T, it offline.Item, policy *translate.Policy, tally *corpusTally) {
	t.Helper()
	d := it.Decision
	if d.Translation == nil || d.Translation.Template == nil {
		t.Errorf("%s: translated without a template", it.Name())
		return
	}
	var claim int64
	for _, r := range d.Translation.Template.Spec.Spec.Devices.Requests {
		counts := []int64{}
		if r.Exactly != nil {
			counts = append(counts, r.Exactly.Count)
		}
		for _, s := range r.FirstAvailable {
			counts = append(counts, s.Count)
		}
		if len(counts) == 0 || slices.Min(counts) != slices.Max(counts) {
			t.Errorf("%s: request %s asks for %v devices in its alternatives", it.Name(), r.Name, counts)
			continue
		}
		claim += counts[0]
	}
	var asked int64
	for _, n := range slices.Sorted(maps.Keys(d.Requested)) {
		asked += d.Requested[n]
	}
	// Mapped resources the translated pod still asks for stay on the
	// device plugin.
	left := int64(0)
	for _, v := range policy.DevicesRequested(d.Translation.Pod) {
		left += v
	}
	if claim+left != asked {
		t.Errorf("%s: the pod as submitted asks for %d devices (%v), its translation for %d in the claim and %d left in the pod", it.Name(), asked, d.Requested, claim, left)
	}
	tally.devices++
}

// checkTolerations: a translation adds no toleration but the
// ExtendedResourceToleration plugin's (Result.ImplicitTolerations), for
// resources it removed, where the target cluster runs the plugin.
func checkTolerations(t *testing.T, it offline.Item, policy *translate.Policy, tally *corpusTally) {
	t.Helper()
	d := it.Decision
	res := d.Translation
	var added []corev1.Toleration
	for _, tol := range res.Pod.Spec.Tolerations {
		if !slices.ContainsFunc(d.Pod.Spec.Tolerations, func(have corev1.Toleration) bool { return have == tol }) {
			added = append(added, tol)
		}
	}
	tally.tolerations++
	if !slices.Equal(added, res.ImplicitTolerations) {
		t.Errorf("%s: the translation adds the tolerations %v, the plugin's by rule are %v", it.Name(), added, res.ImplicitTolerations)
		return
	}
	runs, _, _ := policy.RunsExtendedResourceToleration(d.Pod)
	left := policy.DevicesRequested(res.Pod)
	if runs {
		// Where the plugin runs, none of its tolerations is lost: each
		// resource removed is tolerated as the plugin made the original.
		for _, n := range slices.Sorted(maps.Keys(d.Requested)) {
			if left[n] == 0 && !podfacts.ToleratesLikeThePlugin(res.Pod, string(n)) {
				t.Errorf("%s: the cluster runs ExtendedResourceToleration and the translation lost its toleration for %s", it.Name(), n)
			}
		}
	}
	if len(added) == 0 {
		return
	}
	tally.implicit++
	if !runs {
		t.Errorf("%s: tolerations %v added for a cluster that does not run ExtendedResourceToleration", it.Name(), added)
	}
	for _, tol := range added {
		n := corev1.ResourceName(tol.Key)
		if _, asked := d.Requested[n]; !asked || left[n] > 0 || tol.Operator != corev1.TolerationOpExists || tol.Effect != corev1.TaintEffectNoSchedule {
			t.Errorf("%s: toleration %v is not the plugin's for a resource translation removed", it.Name(), tol)
		}
	}
}

// checkReasoned: a pod kept as submitted or skipped says why, with a code
// of the catalog whose entry leads to that outcome; every reason it carries
// is in the catalog.
func checkReasoned(t *testing.T, name string, outcome reason.Outcome, decisive reason.Reason, reasons []reason.Reason, tally *corpusTally) {
	t.Helper()
	tally.reasoned++
	catalog := offline.Reasons()
	e, ok := catalog.Lookup(decisive.Code)
	switch {
	case decisive.Code == "":
		t.Errorf("%s: %s without a reason", name, outcome)
	case !ok:
		t.Errorf("%s: %s for %s, which has no catalog entry", name, outcome, decisive.Code)
	case e.Outcome != outcome:
		t.Errorf("%s: %s for %s, whose catalog entry leads to %q", name, outcome, decisive.Code, e.Outcome)
	}
	for _, r := range reasons {
		if _, ok := catalog.Lookup(r.Code); !ok {
			t.Errorf("%s: reason %s has no catalog entry", name, r.Code)
		}
	}
}

// corpusFleets decides the file against every example fleet that publishes
// DRA devices, as `audit` does: a translation lands where the pod as
// submitted would (placement proven equal), or the pod is kept.
func corpusFleets(t *testing.T, file string, policy *translate.Policy, fleets map[string]*feasibility.Inventory, tally *corpusTally) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(fleets)) {
		docs := readCorpusFile(t, file)
		fleet, err := feasibility.NewFleet(fleets[name].WithClasses(offline.ClassesOf(docs)...), feasibility.Options{})
		if err != nil {
			t.Fatalf("fleet %s: %v", name, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), fleetTimeout)
		items, _, err := offline.Translate(ctx, docs, offline.Options{Policy: policy, Classes: fleet.Inventory.Classes, Quotas: offline.QuotasOf(docs),
			Checker: fleet.Checker, Snapshot: fleet.Snapshot})
		cancel()
		if err != nil {
			t.Fatalf("fleet %s: %v", name, err)
		}
		for _, it := range items {
			d := it.Decision
			tally.fleetDecisions++
			if d.Outcome != reason.OutcomeTranslate {
				tally.fleetKept++
				checkReasoned(t, name+": "+it.Name(), d.Outcome, d.Decisive, d.Reasons, tally)
				continue
			}
			if d.Placement == nil || !d.Placement.Equal() {
				t.Errorf("fleet %s: %s is translated, and its placement is not proven equal: %+v", name, it.Name(), d.Placement)
				continue
			}
			tally.proven++
		}
	}
}

// corpusForecast forecasts the cutover of the before-cutover fleet as
// `audit --forecast` does: a workload that moves to DRA has its placement
// proven on the forecast fleet, one kept says why.
func corpusForecast(t *testing.T, file string, policy *translate.Policy, tally *corpusTally) {
	t.Helper()
	docs := readCorpusFile(t, file)
	before, err := feasibility.LoadInventory(filepath.Join(exampleFleets, "before-cutover"))
	if err != nil {
		t.Fatal(err)
	}
	rows, _, _, err := offline.Cutover(t.Context(), docs, offline.CutoverOptions{Policy: policy, Before: before.WithClasses(offline.ClassesOf(docs)...),
		Quotas: offline.QuotasOf(docs)})
	if err != nil {
		t.Fatalf("forecast: %v", err)
	}
	for _, row := range rows {
		tally.forecastRows++
		name := "forecast: " + row.Kind + " " + row.Name + " " + row.Path
		if row.Outcome != reason.OutcomeTranslate {
			decisive := reason.Reason{}
			if row.Decisive != nil {
				decisive = *row.Decisive
			}
			checkReasoned(t, name, row.Outcome, decisive, row.Reasons, tally)
			continue
		}
		if row.Placement == nil || row.Placement.Result != decisions.PlacementEqual {
			t.Errorf("%s: translated on the forecast fleet, and its placement is not proven equal: %+v", name, row.Placement)
			continue
		}
		tally.forecastMoves++
	}
}

// fleetTimeout bounds the decisions of one file against one fleet.
const fleetTimeout = time.Minute
