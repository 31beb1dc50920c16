// Package rehearse tests `claimbridge rehearse` as a user runs it: the claimbridge binary of
// the image under test, on example inputs, starting its own control plane from the binaries
// of $CLAIMBRIDGE_K8S_BIN (the harness's), its page and exit code read back.
package rehearse

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
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

// rehearse runs `claimbridge rehearse args...` with the control-plane binaries the harness
// uses, and returns the page (-o json), what it said on stderr and its exit code.
func rehearse(t *testing.T, args ...string) (*report.Report, string, int) {
	t.Helper()
	bins, err := cluster.ResolveBinDir(t.Context(), testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	bin, err := binary.FromImage(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, append([]string{"rehearse", "-o", "json", "--settle", "5s", "--settle-timeout", "3m", "--k8s-bin", bins}, args...)...)
	cmd.Env = append(os.Environ(), "CLAIMBRIDGE_CACHE="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err = cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("claimbridge rehearse %s: exit %d in %s\n%s", strings.Join(args, " "), code, time.Since(began).Round(100*time.Millisecond), stderr.String())
	if code == 2 {
		return nil, stderr.String(), code
	}
	rep, err := report.Read(&stdout)
	if err != nil {
		t.Fatalf("read the page: %v\n%s", err, stdout.String())
	}
	return rep, stderr.String(), code
}

// rows are the report's rows by name.
func rows(rep *report.Report) map[string]report.Row {
	out := map[string]report.Row{}
	for _, r := range rep.Items {
		out[r.Name] = r
	}
	return out
}

// checkAgreement: every workload the rehearsal created pods of was bound as forecast (pods
// bound = pods served), or within the range the forecast gave where it said the order
// decides or the fleet is too small (OrderDependent, Partial); the page says so and which
// release ran.
func checkAgreement(t *testing.T, rep *report.Report) {
	t.Helper()
	rehearsed := 0
	for _, r := range rep.Items {
		x, c := r.Rehearsed, r.Cutover
		if x == nil {
			continue
		}
		rehearsed++
		if x.Pods != c.Pods {
			t.Errorf("%s: %d of %d pods created", r.Name, x.Pods, c.Pods)
		}
		least, most := c.Served, c.Served
		if c.Result == cutover.OrderDependent || c.Result == cutover.Partial {
			least, most = c.Range()
		}
		if x.Bound < least || x.Bound > most || !x.Agrees {
			t.Errorf("%s: forecast %s with %d–%d of %d pods served, rehearsal bound %d (agrees %t)", r.Name, c.Result, least, most, c.Pods, x.Bound, x.Agrees)
		}
	}
	want := &cutover.Rehearsal{Kubernetes: "v1.37.2", Binaries: "--k8s-bin", Workloads: rehearsed}
	if x := rep.Rehearsal; x == nil || *x != *want || rehearsed == 0 {
		t.Errorf("the page's rehearsal %+v, want %+v", x, want)
	}
}

// TestTheCutoverExampleIsBoundAsForecast: the before-cutover example fleet and its
// workloads, switched on a real control plane with every pod created at once through
// claimbridge: kube-scheduler binds every workload's pods as the forecast served them — the
// trainer's and the notebook's all, the MIG slice two of three, the pinned A100 serving one,
// the shared T4s, the pod bound at creation to a switched node and the K80 job none — and
// the H100 job, which the forecast says depends on the order, whatever it gets; exit 0.
func TestTheCutoverExampleIsBoundAsForecast(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rep, _, code := rehearse(t, "-f", filepath.Join(root, "examples", "cutover"), "--fleet", filepath.Join(root, "examples", "fleets", "before-cutover"),
		"--platform", sharesPlatform(t))
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	checkAgreement(t, rep)
	got := rows(rep)
	for name, want := range map[string]int64{"trainer": 3, "notebook": 2, "mig-serve": 2, "legacy-serving": 1, "embeddings": 4, "debug-a100": 0, "k80-batch": 0} {
		if x := got[name].Rehearsed; x == nil || x.Bound != want {
			t.Errorf("%s: rehearsal %+v, want %d bound", name, x, want)
		}
	}
}

// TestTwoWorkloadsCompetingForTheOnlyH100Node: an H100 node and an A100 node; a Deployment
// that needs the whole H100 node and a Job whose pods take any GPU. The forecast says both
// depend on the order and names the other; the real scheduler binds what it binds, within
// the fleet, and the page shows the range of devices served.
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
	write(t, filepath.Join(dir, "fleet.yaml"), fleet)
	write(t, filepath.Join(dir, "workloads.yaml"), []byte(`apiVersion: apps/v1
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
`))
	rep, _, code := rehearse(t, "-f", filepath.Join(dir, "workloads.yaml"), "--fleet", filepath.Join(dir, "fleet.yaml"))
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	checkAgreement(t, rep)
	got := rows(rep)
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
	// Each states the range of pods served over the orders: the H100 Deployment's one pod
	// may or may not get the node (0–1/1); the Job's three pods get at least the two the
	// A100 node holds, whatever the order (2–3/3), a range a rehearsal could contradict.
	for name, want := range map[string][2]int64{"serve-h100": {0, 1}, "batch": {2, 3}} {
		if least, most := got[name].Cutover.Range(); least != want[0] || most != want[1] {
			t.Errorf("%s: range %d–%d, want %d–%d", name, least, most, want[0], want[1])
		}
	}
	// The page (as -o html renders it) shows the range of devices served and the release.
	var b bytes.Buffer
	if err := rep.Write(&b, "html"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data-cutover="servable-least"`, `data-cutover="servable-most"`, `<span data-rehearsal="kubernetes">v1.37.2</span>`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the page does not hold %s", want)
		}
	}
}

// TestBadInputExitsTwoBeforeStartingAnything: a fleet that does not exist is exit code 2,
// with the reason, and no control plane.
func TestBadInputExitsTwoBeforeStartingAnything(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := rehearse(t, "-f", filepath.Join(root, "examples", "cutover"), "--fleet", filepath.Join(t.TempDir(), "missing"))
	if code != 2 || !strings.Contains(stderr, "missing") || strings.Contains(stderr, "starting etcd") {
		t.Errorf("exit %d, stderr %q; want 2 naming the missing fleet before any control plane", code, stderr)
	}
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// testWriter logs progress lines in the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// sharesPlatform is a Platform document whose NVIDIA DRA driver publishes each GPU as 4
// consumable shares (--consumable-shares=4), as many as the time-sliced T4 node's replicas:
// the T4 shares move.
func sharesPlatform(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "platform.yaml")
	write(t, path, []byte("apiVersion: claimbridge.io/v1alpha1\nkind: Platform\nspec:\n  drivers:\n  - family: nvidia-gpu\n    consumableShares: \"4\"\n"))
	return path
}
