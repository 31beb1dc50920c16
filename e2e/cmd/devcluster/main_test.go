package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/testing/syncbuffer"
)

func TestServeArgs(t *testing.T) {
	cases := map[string]struct {
		flags, afterDashes []string
		want               []string
		wantErr            string
	}{
		"nothing added": {},
		"-serve-arg words come first, then those after --, in order": {
			flags:       []string{"--template-gc-grace=1m", "--policy", "policy.yaml"},
			afterDashes: []string{"--stranded-after=30s", "--log-level", "info"},
			want:        []string{"--template-gc-grace=1m", "--policy", "policy.yaml", "--stranded-after=30s", "--log-level", "info"},
		},
		"a flag devcluster wires is refused with =": {
			afterDashes: []string{"--webhook-port=9443"},
			wantErr:     "serve flag --webhook-port: devcluster sets it itself",
		},
		"a flag devcluster wires is refused with its value apart and one dash": {
			flags:   []string{"-metrics-bind-address", ":8080"},
			wantErr: "serve flag --metrics-bind-address: devcluster sets it itself",
		},
		"a first word that is no flag is refused": {
			afterDashes: []string{"1m"},
			wantErr:     `serve argument "1m": not a flag`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := serveArgs(tc.flags, tc.afterDashes)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("serveArgs() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("serveArgs() (-want,+got):\n%s", diff)
			}
		})
	}
}

// The real binary, as make dev-cluster builds it: the help names the pass-through, and serve
// flags it cannot take are refused before anything starts (no control plane binaries are
// needed to get there).
func TestTheBinaryTakesServeFlagsAndRefusesThoseItWires(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "devcluster")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	help, _ := exec.CommandContext(t.Context(), bin, "-h").CombinedOutput()
	for _, want := range []string{"[-- claimbridge serve flags]", "-serve-arg word", "--template-gc-grace=1m", "--webhook-port"} {
		if !strings.Contains(string(help), want) {
			t.Errorf("devcluster -h does not mention %q:\n%s", want, help)
		}
	}

	for name, args := range map[string][]string{
		"after --":   {"-fleet", "no-such-fleet", "--", "--template-gc-grace=1m", "--cert-dir=elsewhere"},
		"-serve-arg": {"-serve-arg=--template-gc-grace=1m", "-serve-arg=--cert-dir=elsewhere"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("devcluster %s: err = %v, want exit status 1\n%s", strings.Join(args, " "), err, out)
			}
			want := "devcluster: serve flag --cert-dir: devcluster sets it itself"
			if !strings.HasPrefix(string(out), want) {
				t.Errorf("devcluster %s printed\n%s\nwant it to start with %q (and nothing started before)", strings.Join(args, " "), out, want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer the test and what it runs may use at once.
type syncBuffer = syncbuffer.Buffer

func TestAStepThatRunsForAWhileSaysSoUntilItIsDone(t *testing.T) {
	var out syncBuffer
	p := &progress{w: &out, total: 2, every: time.Millisecond}
	p.step("first")()
	done := p.step("building something slow")
	err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(out.String(), "[2/2] still running ("), nil
	})
	if err != nil {
		t.Fatalf("no line says the step is still running:\n%s", out.String())
	}
	done()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for i, want := range []string{"devcluster: [1/2] first", "devcluster: [1/2] done in ", "devcluster: [2/2] building something slow"} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d = %q, want it to start with %q", i, lines[i], want)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "devcluster: [2/2] done in ") {
		t.Errorf("last line = %q, want the step's end", last)
	}
	stillRunning := regexp.MustCompile(`^devcluster: \[2/2\] still running \([0-9.]+ s; [0-9.]+ s since devcluster started\)$`)
	for _, l := range lines[3 : len(lines)-1] {
		if !stillRunning.MatchString(l) {
			t.Errorf("line %q between the step's start and end is not a still-running line", l)
		}
	}
	n := len(lines)
	time.Sleep(5 * time.Millisecond)
	if got := len(strings.Split(strings.TrimSpace(out.String()), "\n")); got != n {
		t.Errorf("%d lines after the step ended, want none:\n%s", got-n, out.String())
	}
}

// The ready message's examples fit the fleet: on a fleet with no DRA device (the day before a
// cutover) the forecast, else an example workload the webhook translates there.
func TestTryItFitsTheFleet(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]tryIt{
		"mixed":          {Workload: "inference-l4.yaml", Namespace: "serving"},
		"l4-inference":   {Workload: "inference-l4.yaml", Namespace: "serving"},
		"dgx-h100":       {Workload: "batch-preferred.yaml", Namespace: "research"},
		"a100-mig":       {Workload: "notebook-mig.yaml", Namespace: "notebooks"},
		"tpu-v5e":        {Workload: "tpu-statefulset.yaml", Namespace: "serving"},
		"before-cutover": {Forecast: true},
		"legacy-gfd":     {Forecast: true},
		"gke-l4":         {},
		"hami-t4":        {},
		"a100-shared":    {Workload: "embeddings-shared.yaml", Namespace: "embeddings"},
	}
	fleets, err := os.ReadDir(filepath.Join(root, "examples", "fleets"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fleets {
		t.Run(f.Name(), func(t *testing.T) {
			w, ok := want[f.Name()]
			if !ok {
				t.Fatalf("no expectation for examples/fleets/%s", f.Name())
			}
			got, err := chooseTryIt(t.Context(), root, filepath.Join(root, "examples", "fleets", f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			got.Workload = filepath.Base(got.Workload)
			if got.Workload == "." {
				got.Workload = ""
			}
			if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("try-it (-want,+got):\n%s", diff)
			}
			cmds := got.commands(root, "https://127.0.0.1:1/report", "curl")
			switch {
			case got.Forecast:
				if !strings.Contains(cmds, "audit --forecast") || strings.Contains(cmds, "inference-l4") {
					t.Errorf("commands on a fleet without DRA:\n%s", cmds)
				}
			case got.Workload != "":
				if !strings.Contains(cmds, got.Workload) || !strings.Contains(cmds, "kubectl create namespace "+got.Namespace) {
					t.Errorf("commands do not apply %s in %s:\n%s", got.Workload, got.Namespace, cmds)
				}
			}
			if !strings.Contains(cmds, "create token "+readerName) {
				t.Errorf("commands do not get a reader token:\n%s", cmds)
			}
			for i, m := range regexp.MustCompile(`(?m)^  # (\d+)\. `).FindAllStringSubmatch(cmds, -1) {
				if m[1] != strconv.Itoa(i+1) {
					t.Errorf("step %d is numbered %s:\n%s", i+1, m[1], cmds)
				}
			}
		})
	}
}
