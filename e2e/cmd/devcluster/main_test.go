package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
