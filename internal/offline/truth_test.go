package offline

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/forecast"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/translate"
)

// truthCase is one forecast the invariants are checked on: manifests
// forecast together against a fleet before the switch.
type truthCase struct {
	name  string
	files []string
	fleet string
}

// truthCases are the whole public corpus at once (six Pods named gpu-pod
// in six files, two LeaderWorkerSets named vllm: one cluster) and the
// examples' workloads against every example fleet, and each golden case of
// the forecast (its nodes, its workloads).
func truthCases(t *testing.T) []truthCase {
	t.Helper()
	fleets, err := filepath.Glob("../../examples/fleets/*")
	if err != nil || len(fleets) == 0 {
		t.Fatalf("no example fleets: %v", err)
	}
	var out []truthCase
	for _, f := range fleets {
		out = append(out,
			truthCase{name: "corpus on " + filepath.Base(f), files: []string{"../testing/publiccorpus/manifests"}, fleet: f},
			truthCase{name: "examples on " + filepath.Base(f), files: []string{"../../examples/workloads", "../../examples/cutover"}, fleet: f})
	}
	goldens, err := filepath.Glob("../../forecast/testdata/golden/*/workloads.yaml")
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no golden forecast cases: %v", err)
	}
	for _, w := range goldens {
		dir := filepath.Dir(w)
		out = append(out, truthCase{name: "golden " + filepath.Base(dir), files: []string{w}, fleet: filepath.Join(dir, "nodes.yaml")})
	}
	return out
}

// TestForecastRowsAreTrue checks what every row of a cutover forecast
// says against what it stands for, over truthCases. The invariants:
//
//  1. Today is the number of nodes of the fleet before the switch where the
//     pod as submitted runs (as the cluster's admission hands it over:
//     decide.AsAdmitted; a KAI-Scheduler share as its reservation pod),
//     counted here from first principles: the nodes kube-scheduler's
//     filters admit it to (or its spec.nodeName), that advertise every
//     extended resource it asks for, and whose allocatable holds every
//     resource it requests — cpu, memory, ephemeral-storage, hugepages,
//     extended resources: what the verdict compares. 0 for a pod that asks
//     for no extended resource, and for one kube-apiserver refuses.
//  2. NotCreatable exactly when kube-apiserver refuses the pod
//     (podfacts.Refused), with Today, After and Served 0 and a Why that
//     quotes it.
//  3. NotServedToday only with Today 0, and Today 0 only with
//     NotServedToday, NotCreatable, NotAffected or Unjudged: a row that no
//     node serves today neither Moves nor Breaks.
//  4. Moves, ServedByClass and StaysLegacy serve every pod; Breaks none
//     (not even alone); Partial some, not all; OrderDependent gets more
//     alone than after the workloads it competes with.
//  5. An Unjudged row with a pod template serves fewer pods than it asks
//     for where the attributes it depends on are known.
//  6. A NotServedToday row says why, naming what no node has (a resource
//     none has as much of) before blaming selectors.
//  7. Every suggested DeviceClass lists exactly the rows whose result or
//     pods served differ in a re-run of the forecast with that class added
//     to the forecast's classes (what audit --forecast --forecast-classes
//     answers), row by row, each named by its file and object.
func TestForecastRowsAreTrue(t *testing.T) {
	policy := translate.DefaultPolicy()
	rows, suggested := 0, 0
	for _, tc := range truthCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := manifest.Read(tc.files, strings.NewReader(""))
			if err != nil {
				t.Fatal(err)
			}
			before, err := feasibility.LoadInventory(tc.fleet)
			if err != nil {
				t.Fatal(err)
			}
			if len(before.Nodes) == 0 {
				t.Skip("no nodes")
			}
			opts := CutoverOptions{Policy: policy, Before: before.WithClasses(ClassesOf(docs)...), Quotas: QuotasOf(docs), Check: feasibility.Options{Timeout: 5 * time.Second}}
			_, j, err := forecastDocs(t.Context(), docs, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range j.Workloads {
				rows++
				checkRow(t, w, j.Cutovers[i], opts.Before, policy)
			}
			for _, s := range j.Summary.Suggested {
				suggested++
				checkSuggested(t, docs, opts, j, s)
			}
		})
	}
	t.Logf("%d rows checked, %d suggested classes re-run", rows, suggested)
}

// checkRow checks invariants 1 to 6 on one row.
func checkRow(t *testing.T, w forecast.Workload, c cutover.Effect, before *feasibility.Inventory, policy *translate.Policy) {
	t.Helper()
	name := w.Source + " " + w.Key
	refused := w.Pod != nil && len(podfacts.Refused(w.Pod)) > 0
	switch {
	case refused != (c.Result == cutover.NotCreatable):
		t.Errorf("%s: %s, kube-apiserver refuses it: %v", name, c.Result, podfacts.Refused(w.Pod))
	case refused && (c.Today != 0 || c.After != 0 || c.Served != 0 || !strings.Contains(c.Why, "is invalid: ")):
		t.Errorf("%s: NotCreatable with today %d, after %d, served %d, why %q", name, c.Today, c.After, c.Served, c.Why)
	}
	if w.Pod != nil && !refused {
		pod := w.Pod
		if r := podfacts.AsReserved(pod); r != nil {
			pod = r
		}
		if want := nodesToday(decide.AsAdmitted(pod, policy), before); c.Today != want {
			t.Errorf("%s: today %d, but the pod as submitted runs on %d nodes of the fleet before the switch", name, c.Today, want)
		}
	}
	least, most := c.Range()
	var wrong string
	switch c.Result {
	case cutover.NotServedToday:
		if c.Today != 0 {
			wrong = "served today"
		} else if !strings.HasPrefix(c.Why, "no node serves it today either") {
			wrong = "says no why"
		}
	case cutover.NotCreatable, cutover.NotAffected:
	case cutover.Unjudged:
		if w.Pod != nil && c.Pods > 0 && max(c.Served, c.Alone) >= c.Pods {
			wrong = "serves every pod where what it depends on is known"
		}
	default:
		if c.Today == 0 {
			wrong = "not served today"
		}
	}
	switch {
	case wrong != "":
	case (c.Result == cutover.Moves || c.Result == cutover.ServedByClass || c.Result == cutover.StaysLegacy) && c.Served != c.Pods:
		wrong = "does not serve every pod"
	case c.Result == cutover.Breaks && (c.Served != 0 || c.Alone != 0):
		wrong = "serves some pods"
	case c.Result == cutover.Partial && (c.Served == 0 || c.Served >= c.Pods):
		wrong = "is not served in part"
	case c.Result == cutover.OrderDependent && least >= most:
		wrong = "does not depend on the order"
	}
	if wrong != "" {
		t.Errorf("%s: %s %s (today %d, served %d–%d of %d, alone %d): %s", name, c.Result, wrong, c.Today, least, most, c.Pods, c.Alone, c.Why)
	}
	if c.Result == cutover.NotServedToday && w.Pod != nil {
		if gone := missingEverywhere(decide.AsAdmitted(w.Pod, policy), before); gone != "" && !strings.Contains(c.Why, string(gone)) {
			t.Errorf("%s: no node has %s, and the row says: %s", name, gone, c.Why)
		}
	}
}

// nodesToday counts, from first principles, the nodes where the pod as
// submitted runs before the switch: every resource it requests against
// each node's allocatable (extended resources a DeviceClass maps, which
// the scheduler serves from DRA, are the only ones left out; the device
// plugin's own must be advertised), and its node selection, affinity,
// taints and spec.nodeName.
func nodesToday(pod *corev1.Pod, before *feasibility.Inventory) int {
	if len(podfacts.ExtendedRequests(pod)) == 0 {
		return 0
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	n := 0
	for _, node := range before.Nodes {
		if pod.Spec.NodeName != "" && node.Name != pod.Spec.NodeName ||
			pod.Spec.NodeName == "" && upstream.NodeRejects(required, pod, node) != "" {
			continue
		}
		fits := true
		for name, q := range podfacts.EffectiveRequests(pod) {
			have, ok := node.Status.Allocatable[name]
			switch {
			case name == corev1.ResourcePods:
			case podfacts.IsExtendedResource(name) && !ok:
				fits = false
			case podfacts.IsExtendedResource(name) && mappedByClass(name, before.Classes):
				fits = fits && have.Cmp(q) >= 0
			case have.Cmp(q) < 0:
				fits = false
			}
		}
		if fits {
			n++
		}
	}
	return n
}

// mappedByClass: a DeviceClass maps the extended resource.
func mappedByClass(name corev1.ResourceName, classes []*resourceapi.DeviceClass) bool {
	return slices.ContainsFunc(classes, func(c *resourceapi.DeviceClass) bool {
		return c.Spec.ExtendedResourceName != nil && *c.Spec.ExtendedResourceName == string(name)
	})
}

// missingEverywhere is the first resource (in name order) the pod requests
// that no node of the fleet has as much of in its allocatable; "" when
// each is somewhere.
func missingEverywhere(pod *corev1.Pod, before *feasibility.Inventory) corev1.ResourceName {
	requests := podfacts.EffectiveRequests(pod)
	names := make([]corev1.ResourceName, 0, len(requests))
	for n := range requests {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b corev1.ResourceName) int { return cmp.Compare(a, b) })
	for _, n := range names {
		if n == corev1.ResourcePods || mappedByClass(n, before.Classes) {
			continue
		}
		if !slices.ContainsFunc(before.Nodes, func(node *corev1.Node) bool {
			have := node.Status.Allocatable[n]
			return have.Cmp(requests[n]) >= 0
		}) {
			return n
		}
	}
	return ""
}

// checkSuggested re-runs the forecast with the suggested class added to
// the forecast's classes, as audit --forecast --forecast-classes does, and
// compares every row with the first run by file and object: the rows
// whose result or pods served differ are the suggestion's changes.
func checkSuggested(t *testing.T, docs []manifest.Document, opts CutoverOptions, j *forecast.CutoverForecast, s cutover.SuggestedClass) {
	t.Helper()
	var class resourceapi.DeviceClass
	if err := yaml.UnmarshalStrict([]byte(s.YAML), &class); err != nil {
		t.Fatalf("suggested class for %s: %v", s.Resource, err)
	}
	opts.Forecast.Classes = append(slices.Clone(j.Forecast.After.Classes), &class)
	_, again, err := forecastDocs(t.Context(), docs, opts)
	if err != nil {
		t.Fatal(err)
	}
	type id struct {
		source, key string
		nth         int
	}
	ids := func(ws []forecast.Workload) []id {
		seen := map[id]int{}
		out := make([]id, len(ws))
		for i, w := range ws {
			k := id{source: w.Source, key: w.Key}
			out[i] = id{w.Source, w.Key, seen[k]}
			seen[k]++
		}
		return out
	}
	rerun := map[id]cutover.Effect{}
	for i, k := range ids(again.Workloads) {
		rerun[k] = again.Cutovers[i]
	}
	var want []cutover.Change
	for i, k := range ids(j.Workloads) {
		was := j.Cutovers[i]
		now, ok := rerun[k]
		if !ok {
			t.Errorf("%s (%s): no row in the re-run", k.key, k.source)
			continue
		}
		if was.Result != now.Result || was.Served != now.Served {
			want = append(want, cutover.Change{Object: k.key, Source: k.source, Was: was.Result, Now: now.Result,
				WasServed: was.Served, NowServed: now.Served, Pods: max(was.Pods, now.Pods)})
		}
	}
	if diff := gocmp.Diff(want, s.Changes); diff != "" {
		t.Errorf("the class for %s lists other changes than a re-run with it shows (-rerun,+listed):\n%s", s.Resource, diff)
	}
	for _, c := range s.Changes {
		if c.Was == c.Now && c.WasServed == c.NowServed {
			t.Errorf("the class for %s lists a change that changes nothing: %s", s.Resource, c)
		}
	}
}
