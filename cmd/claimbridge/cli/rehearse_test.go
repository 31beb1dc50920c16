//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/claimbridge/claimbridge/translate"
)

// TestRehearseExitsTwoWhenItCannotRun: bad input, and binaries it cannot run, are exit code 2
// with the reason, before any control plane starts.
func TestRehearseExitsTwoWhenItCannotRun(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("CLAIMBRIDGE_K8S_BIN", "")
	// Not in a pod: no kube-apiserver Service in the environment.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	examples := []string{"rehearse", "-f", "../../../examples/cutover", "--fleet", "../../../examples/fleets/before-cutover"}
	for name, tc := range map[string]struct {
		args     []string
		wantText string
	}{
		"no fleet":                         {[]string{"rehearse", "-f", "../../../examples/cutover"}, "--fleet"},
		"a fleet that is not there":        {[]string{"rehearse", "-f", "../../../examples/cutover", "--fleet", "nowhere"}, "nowhere"},
		"an unknown mode":                  {append(examples, "--mode", "sometimes"), "--mode"},
		"an unknown output":                {append(examples, "-o", "xml"), "-o must be one of"},
		"a directory without the binaries": {append(examples, "--k8s-bin", t.TempDir()), "--k8s-bin="},
		"an unknown flag":                  {append(examples, "--forecast"), "unknown flag"},
		"publish without a cluster":        {append(examples, "--publish", "cb/cb-rehearsal"), "--publish writes into the cluster"},
		"publish without a namespace":      {[]string{"rehearse", "--kubeconfig", "nowhere", "--publish", "cb-rehearsal"}, "NAMESPACE/NAME"},
		"in-cluster outside a pod":         {[]string{"rehearse", "--in-cluster"}, "--in-cluster:"},
		"in-cluster and a kubeconfig":      {[]string{"rehearse", "--in-cluster", "--kubeconfig", "nowhere"}, "exclude each other"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, "", tc.args...)
			if got := exitCode(err); got != rehearseFailed {
				t.Errorf("exit code %d, want %d (err %v)", got, rehearseFailed, err)
			}
			text := out
			if err != nil {
				text += err.Error()
			}
			if !strings.Contains(text, tc.wantText) || strings.Contains(text, "starting etcd") {
				t.Errorf("output %q does not mention %q, or a control plane started", text, tc.wantText)
			}
		})
	}
}

// TestServeGetsTheRehearsalsPolicy: claimbridge serve is given the policy the forecast used:
// the --policy file itself, or a TranslationPolicy of the --profile profiles.
func TestServeGetsTheRehearsalsPolicy(t *testing.T) {
	p := policyFlags{profiles: []string{"nvidia"}}
	args, cleanup, err := p.serveArgs()
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 2 || args[0] != "--policy" {
		t.Fatalf("serve args %v, want --policy FILE", args)
	}
	data, err := os.ReadFile(args[1])
	if err != nil {
		t.Fatal(err)
	}
	got, err := translate.LoadPolicy(data)
	if err != nil {
		t.Fatal(err)
	}
	want, err := translate.ProfilePolicy("nvidia")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Spec(), got.Spec()); diff != "" {
		t.Errorf("serve's policy (-want,+got):\n%s", diff)
	}
	cleanup()
	if _, err := os.Stat(args[1]); !os.IsNotExist(err) {
		t.Errorf("the policy file is still there after cleanup (%v)", err)
	}

	file := policyFlags{file: filepath.Join("..", "..", "..", "examples", "policy.yaml"), kueue: "kueue.yaml"}
	args, _, err = file.serveArgs()
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 4 || !filepath.IsAbs(args[1]) || !strings.HasSuffix(args[1], "examples/policy.yaml") || args[2] != "--kueue-config" || !filepath.IsAbs(args[3]) {
		t.Errorf("serve args %v, want --policy and --kueue-config with absolute paths", args)
	}
}

// TestServeGetsTheDeclaredPlatform: claimbridge serve translates on the platform the forecast
// was told: the presets first, then the --platform document, as one Platform document that
// resolves to the same facts.
func TestServeGetsTheDeclaredPlatform(t *testing.T) {
	none := forecastFlags{}
	if args, _, err := none.platformServeArgs(); err != nil || args != nil {
		t.Errorf("nothing declared: %v, %v; want no flag (serve detects it)", args, err)
	}
	f := forecastFlags{platform: filepath.Join("..", "..", "..", "examples", "platforms", "consumable-shares-4.yaml"), presets: []string{"amd-gpu-operator", "tpu-dra-driver"}}
	args, cleanup, err := f.platformServeArgs()
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 2 || args[0] != "--platform" {
		t.Fatalf("serve args %v, want --platform FILE", args)
	}
	want, err := f.loadPlatform(nil)
	if err != nil {
		t.Fatal(err)
	}
	served := forecastFlags{platform: args[1]}
	got, err := served.loadPlatform(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The same facts from the same kind of source; only the file named differs.
	facts := func(lines []string) []string {
		out := make([]string, 0, len(lines))
		for _, l := range lines[1:] { // the first line names the document
			out = append(out, regexp.MustCompile(`\(declared: [^)]*\)`).ReplaceAllString(l, "(declared)"))
		}
		return out
	}
	if diff := cmp.Diff(facts(want.Lines()), facts(got.Lines())); diff != "" {
		t.Errorf("the platform serve resolves (-forecast's,+serve's):\n%s", diff)
	}
	cleanup()
	if _, err := os.Stat(args[1]); !os.IsNotExist(err) {
		t.Errorf("the platform file is still there after cleanup (%v)", err)
	}
}
