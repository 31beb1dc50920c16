package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/e2e/binary"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/report"
)

// claimbridgeBin is the binary of the image under test (make image), taken
// out once.
func claimbridgeBin(t *testing.T) string {
	t.Helper()
	bin, err := binary.FromImage(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// rows are the report's rows by name.
func rows(rep *report.Report) map[string]report.Row {
	out := map[string]report.Row{}
	for _, r := range rep.Items {
		out[r.Name] = r
	}
	return out
}

// checkAgreement: every workload the rehearsal created pods of was bound
// as forecast (pods bound = pods served), or the forecast said the order
// decides or the fleet is too small (OrderDependent, Partial).
func checkAgreement(t *testing.T, res *Result) {
	t.Helper()
	rehearsed := 0
	for _, r := range res.Report.Items {
		x, c := r.Rehearsed, r.Cutover
		if x == nil {
			continue
		}
		rehearsed++
		if x.Pods != c.Pods {
			t.Errorf("%s: %d of %d pods created", r.Name, x.Pods, c.Pods)
		}
		// A firm result binds what it serves; one the order decides binds
		// within the range it gave.
		least, most := c.Served, c.Served
		if c.Result == cutover.OrderDependent || c.Result == cutover.Partial {
			least, most = c.Range()
		}
		if x.Bound < least || x.Bound > most || !x.Agrees {
			t.Errorf("%s: forecast %s with %d–%d of %d pods served, rehearsal bound %d (agrees %t)", r.Name, c.Result, least, most, c.Pods, x.Bound, x.Agrees)
		}
	}
	if res.Disagree != 0 || rehearsed == 0 {
		t.Errorf("%d workloads rehearsed, %d not as forecast", rehearsed, res.Disagree)
	}
	var b bytes.Buffer
	if err := res.Report.Write(&b, "table"); err == nil {
		t.Logf("%s\n%s", b.String(), res.Timings)
	}
}

// TestTheCutoverExampleIsBoundAsForecast: the before-cutover example
// fleet and its workloads, switched on a real control plane with every
// pod created at once through claimbridge: kube-scheduler binds every
// workload's pods as the forecast served them — the trainer's and the
// notebook's all, the MIG slice two of three, the pinned A100 serving one,
// the shared T4s, the pod bound at creation to a switched node and the
// K80 job none — and the H100 job, which the forecast says depends on the
// order, whatever it gets.
func TestTheCutoverExampleIsBoundAsForecast(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Rehearse(t.Context(), Options{
		Files: []string{filepath.Join(root, "examples", "cutover")}, Fleets: []string{filepath.Join(root, "examples", "fleets", "before-cutover")},
		PlatformFile: sharesPlatform(t),
		Claimbridge:  claimbridgeBin(t), Settle: 5 * time.Second, Timeout: 3 * time.Minute, Progress: testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkAgreement(t, res)
	got := rows(res.Report)
	for name, want := range map[string]int64{"trainer": 3, "notebook": 2, "mig-serve": 2, "legacy-serving": 1, "embeddings": 4, "debug-a100": 0, "k80-batch": 0} {
		if x := got[name].Rehearsed; x == nil || x.Bound != want {
			t.Errorf("%s: rehearsal %+v, want %d bound", name, x, want)
		}
	}
}

// TestTwoWorkloadsCompetingForTheOnlyH100Node: an H100 node and an A100
// node; a Deployment that needs the whole H100 node and a Job whose pods
// take any GPU. The forecast says both depend on the order and names the
// other; the real scheduler binds what it binds, within the fleet.
func TestTwoWorkloadsCompetingForTheOnlyH100Node(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	src, err := feasibility.LoadInventory(filepath.Join(root, "examples", "fleets", "before-cutover"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var fleet []byte
	for _, n := range src.Nodes {
		if n.Name != "cutover-h100-0" && n.Name != "cutover-a100-0" {
			continue
		}
		n.APIVersion, n.Kind = "v1", "Node"
		y, err := yaml.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		fleet = append(append(fleet, "---\n"...), y...)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), fleet, 0o600); err != nil {
		t.Fatal(err)
	}
	workloads := `apiVersion: apps/v1
kind: Deployment
metadata: {name: serve-h100, namespace: inference}
spec:
  replicas: 1
  selector: {matchLabels: {app: serve-h100}}
  template:
    metadata: {labels: {app: serve-h100}}
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
      containers:
      - {name: serve, image: registry.example/serve:1, resources: {limits: {nvidia.com/gpu: 8}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: batch, namespace: research}
spec:
  parallelism: 3
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: batch, image: registry.example/batch:1, resources: {limits: {nvidia.com/gpu: 4}}}
`
	if err := os.WriteFile(filepath.Join(dir, "workloads.yaml"), []byte(workloads), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := Rehearse(t.Context(), Options{Files: []string{filepath.Join(dir, "workloads.yaml")}, Fleets: []string{filepath.Join(dir, "fleet.yaml")},
		Claimbridge: claimbridgeBin(t), Settle: 5 * time.Second, Timeout: 3 * time.Minute, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	checkAgreement(t, res)
	got := rows(res.Report)
	for name, other := range map[string]string{"serve-h100": "research/Job/batch", "batch": "inference/Deployment/serve-h100"} {
		c := got[name].Cutover
		if c == nil || c.Result != cutover.OrderDependent || !slices.Contains(c.Competes, other) {
			t.Errorf("%s: forecast %+v, want OrderDependent competing with %s", name, c, other)
		}
	}
	// 16 GPUs: the H100 Deployment's 8 and the Job's 4 each cannot all fit.
	if s, b := got["serve-h100"].Rehearsed, got["batch"].Rehearsed; s == nil || b == nil || s.Bound*8+b.Bound*4 > 16 {
		t.Errorf("rehearsal bound %+v and %+v: more GPUs than the fleet has", s, b)
	}
	// Each states the range of pods served over the orders: the H100
	// Deployment's one pod may or may not get the node (0–1/1); the Job's
	// three pods get at least the two the A100 node holds, whatever the
	// order (2–3/3), a range a rehearsal could contradict.
	for name, want := range map[string][2]int64{"serve-h100": {0, 1}, "batch": {2, 3}} {
		if least, most := got[name].Cutover.Range(); least != want[0] || most != want[1] {
			t.Errorf("%s: range %d–%d, want %d–%d", name, least, most, want[0], want[1])
		}
	}
	// The page's totals show the range of devices served.
	page := filepath.Join(dir, "page.html")
	var b bytes.Buffer
	if err := res.Report.Write(&b, "html"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `data-cutover="servable-least"`) || !strings.Contains(b.String(), `data-cutover="servable-most"`) {
		t.Errorf("the page's totals do not show the range of devices served (%s)", page)
	}
}

// TestAgreesWithinTheRange: a rehearsal agrees with an OrderDependent or
// Partial forecast only when the pods it bound lie within the range the
// forecast gave; with a firm result only when it bound the pods served.
func TestAgreesWithinTheRange(t *testing.T) {
	ordered := &cutover.Effect{Result: cutover.OrderDependent, Pods: 2, Served: 2, Alone: 2, Least: 1, Most: 2}
	moves := &cutover.Effect{Result: cutover.Moves, Pods: 2, Served: 2}
	for _, tc := range []struct {
		c     *cutover.Effect
		bound int64
		want  bool
	}{
		{ordered, 0, false}, {ordered, 1, true}, {ordered, 2, true},
		{moves, 1, false}, {moves, 2, true},
	} {
		if got := agrees(tc.c, tc.bound); got != tc.want {
			t.Errorf("%s %d–%d/%d, bound %d: agrees %t, want %t", tc.c.Result, tc.c.Least, tc.c.Most, tc.c.Pods, tc.bound, got, tc.want)
		}
	}
}

// testWriter logs a rehearsal's progress lines in the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// sharesPlatform is a Platform document whose NVIDIA DRA driver publishes
// each GPU as 4 consumable shares (--consumable-shares=4), as many as the
// time-sliced T4 node's replicas: the T4 shares move.
func sharesPlatform(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "platform.yaml")
	doc := "apiVersion: claimbridge.io/v1alpha1\nkind: Platform\nspec:\n  drivers:\n  - family: nvidia-gpu\n    consumableShares: \"4\"\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
