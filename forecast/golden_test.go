package forecast

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/golden"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/translate"
)

// goldenOptions are a case's options.yaml (optional).
type goldenOptions struct {
	GFDLabels GFDLabels `json:"gfdLabels,omitempty"`
	// Nodes is a label selector (Options.Nodes).
	Nodes string `json:"nodes,omitempty"`
}

// goldenOptionsOf are a golden case's options: options.yaml (optional)
// and platform.yaml, a Platform document (optional: the drivers'
// defaults).
func goldenOptionsOf(t *testing.T, dir string, p *translate.Policy) Options {
	t.Helper()
	opts := Options{Policy: p}
	if b, err := os.ReadFile(filepath.Join(dir, "options.yaml")); err == nil {
		var o goldenOptions
		if err := yaml.UnmarshalStrict(b, &o); err != nil {
			t.Fatal(err)
		}
		opts.GFDLabels = o.GFDLabels
		if o.Nodes != "" {
			if opts.Nodes, err = labels.Parse(o.Nodes); err != nil {
				t.Fatal(err)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "platform.yaml")); err == nil {
		doc, err := v1alpha1.DecodePlatform(b)
		if err != nil {
			t.Fatal(err)
		}
		if opts.Platform, err = platform.Load(nil, nil, doc, "platform.yaml"); err != nil {
			t.Fatal(err)
		}
	}
	return opts
}

// TestGolden: each directory under testdata/golden holds a fleet before the
// switch (nodes.yaml, read with feasibility.LoadInventory) and, optionally,
// options.yaml; forecast.yaml is WriteYAML's output and summary.yaml the
// per-node summary (Result.Nodes). Each forecast also reads back as After,
// is a fleet feasibility accepts, leaves its input as it was, and forecasts
// nothing more when run again on After. A directory with workloads.yaml
// (pods, one workload each) also has cutover.yaml: what the switch does to
// each, judged with the whole cluster (ForecastCutover, each pod decided by
// decide.Pod against the forecast fleet as audit --forecast decides it).
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/golden/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("%d golden cases, want at least 10", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			before, err := feasibility.LoadInventory(filepath.Join(dir, "nodes.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			opts := goldenOptionsOf(t, dir, translate.DefaultPolicy())
			res, err := Forecast(before, opts)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := res.WriteYAML(&out); err != nil {
				t.Fatal(err)
			}
			summary, err := yaml.Marshal(res.Nodes)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(dir, "forecast.yaml"), out.Bytes())
			golden.Check(t, filepath.Join(dir, "summary.yaml"), summary)

			// The input is left as it was.
			again, err := feasibility.LoadInventory(filepath.Join(dir, "nodes.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(again, before) {
				t.Errorf("Forecast changed its input:\n%s", cmp.Diff(again, before))
			}

			// WriteYAML reads back as After, and feasibility takes it.
			path := filepath.Join(t.TempDir(), "forecast.yaml")
			if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			back, err := feasibility.LoadInventory(path)
			if err != nil {
				t.Fatal(err)
			}
			sameFleet(t, "read back", res.After, back)
			if _, err := feasibility.NewSnapshot(back, 1, feasibility.DefaultFeatures()); err != nil {
				t.Errorf("the forecast fleet is not a valid snapshot: %v", err)
			}

			// A second forecast on After changes nothing: switched nodes
			// offer nothing legacy any more, the others forecast the same.
			second, err := Forecast(res.After, opts)
			if err != nil {
				t.Fatal(err)
			}
			sameFleet(t, "forecast again", res.After, second.After)

			if _, err := os.Stat(filepath.Join(dir, "workloads.yaml")); err == nil {
				golden.Check(t, filepath.Join(dir, "cutover.yaml"), goldenCutover(t, before, filepath.Join(dir, "workloads.yaml"), opts))
			}
		})
	}
}

// goldenCutover judges the pods of path, a workload each, on the forecast
// of before, and writes what the switch does to each.
func goldenCutover(t *testing.T, before *feasibility.Inventory, path string, opts Options) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []job
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var pod corev1.Pod
		if err := yaml.UnmarshalStrict([]byte(doc), &pod); err != nil {
			t.Fatal(err)
		}
		if pod.Name == "" {
			continue
		}
		jobs = append(jobs, job{key: pod.Namespace + "/Pod/" + pod.Name, pod: &pod, pods: 1})
	}
	j := forecastJobs(t, before, jobs, opts)
	type row struct {
		Workload  string   `json:"workload"`
		Result    string   `json:"result"`
		Today     int      `json:"today"`
		After     int      `json:"after"`
		Why       string   `json:"why,omitempty"`
		Outcome   string   `json:"outcome"`
		Verdict   string   `json:"verdict,omitempty"`
		DependsOn []string `json:"dependsOn,omitempty"`
		Decisive  string   `json:"decisive"`
	}
	var rows []row
	for i, w := range j.Workloads {
		c, d := j.Cutovers[i], w.Decision
		r := row{Workload: w.Key, Result: string(c.Result), Today: c.Today, After: c.After, Why: c.Why, Outcome: string(d.Outcome),
			Decisive: string(d.Decisive.Code) + ": " + d.Decisive.Message}
		if v := d.Verdict; v != nil {
			r.Verdict, r.DependsOn = string(v.Kind)+" ("+string(v.Code)+")", v.DependsOn
		}
		rows = append(rows, r)
	}
	out, err := yaml.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameFleet compares the nodes, slices, classes and taint rules of two
// inventories (quantities by value).
func sameFleet(t *testing.T, what string, want, got *feasibility.Inventory) {
	t.Helper()
	for _, c := range []struct {
		name      string
		want, got any
	}{
		{"nodes", want.Nodes, got.Nodes},
		{"slices", want.Slices, got.Slices},
		{"classes", want.Classes, got.Classes},
		{"taint rules", want.TaintRules, got.TaintRules},
	} {
		if !apiequality.Semantic.DeepEqual(c.want, c.got) {
			t.Errorf("%s: %s differ (-want,+got):\n%s", what, c.name, cmp.Diff(c.want, c.got))
		}
	}
}

// TestGoldenLabelsDeriveBack: on every switched node of the golden cases,
// the vocabulary's backward direction over the forecast devices gives the
// node's labels back wherever it derives one, except where the labels say
// what the devices cannot: the device plugin's strategy (mig.strategy, the
// "-MIG-<profile>" and "-SHARED" product suffixes) and, on a node with MIG
// devices, the number of GPUs (which GPU holds which MIG device is
// unknown). labels-contradict is left out: its labels disagree on purpose.
func TestGoldenLabelsDeriveBack(t *testing.T) {
	dirs, err := filepath.Glob("testdata/golden/*")
	if err != nil {
		t.Fatal(err)
	}
	p := translate.DefaultPolicy()
	for _, dir := range dirs {
		if filepath.Base(dir) == "labels-contradict" {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			before, err := feasibility.LoadInventory(filepath.Join(dir, "nodes.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Forecast(before, goldenOptionsOf(t, dir, p))
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range before.Nodes {
				if !res.Nodes[i].Switched {
					continue
				}
				devices := familyDevices(p, res.After, n.Name)
				mig, shared := false, false
				for _, f := range p.Families() {
					for _, d := range devices(f) {
						mig = mig || attrString(d.Attributes["type"]) == typeMIG
						shared = shared || d.AllowMultipleAllocations
					}
				}
				for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
					v := n.Labels[k]
					// MPS, and time-slicing where the platform's driver
					// publishes no shares, are forecast as whole GPUs.
					mps := n.Labels["nvidia.com/gpu.sharing-strategy"] == "mps" || n.Labels["nvidia.com/gpu.replicas"] != "" && !shared
					switch {
					case k == "nvidia.com/mig.strategy",
						k == "nvidia.com/gpu.product" && strings.Contains(v, "-MIG-"),
						k == "nvidia.com/gpu.count" && mig,
						// No device says it.
						mps && (k == "nvidia.com/gpu.product" || k == "nvidia.com/gpu.replicas" || k == "nvidia.com/gpu.sharing-strategy"):
						continue
					}
					// GFD marks a time-sliced product for the pods that ask
					// for shares under the plain resource name.
					var plain map[string]bool
					if strings.HasSuffix(v, "-SHARED") {
						plain = map[string]bool{"nvidia-gpu": true}
					}
					got, ok := p.LegacyLabelOfShares(k, n.Labels, devices, plain)
					if !ok {
						continue
					}
					if want := p.CanonicalLabelValue(k, v); got != want {
						t.Errorf("%s: %s derives back as %q, the node has %q", n.Name, k, got, want)
					}
				}
			}
		})
	}
}
