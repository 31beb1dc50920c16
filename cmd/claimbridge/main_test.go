package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/report"
	"sigs.k8s.io/yaml"
)

func run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func exitCode(err error) int {
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitInvalid
}

func TestTranslateExamples(t *testing.T) {
	out, err := run(t, "", "translate", "-f", "../../examples/workloads")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := manifest.Read([]string{"-"}, strings.NewReader(out))
	if err != nil {
		t.Fatalf("output is not valid manifests: %v", err)
	}
	kinds := map[string]int{}
	for _, d := range docs {
		kinds[d.Object.GetObjectKind().GroupVersionKind().Kind]++
	}
	if kinds["ResourceClaimTemplate"] != 6 || kinds["Deployment"] != 2 || kinds["ConfigMap"] != 1 {
		t.Errorf("kinds in the output: %v", kinds)
	}
	// The output translated again changes nothing but dropping nothing.
	again, err := run(t, out, "translate", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	if again != out {
		t.Error("translating the output again changed it")
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badPolicy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(badPolicy, []byte("apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nspec:\n  profiles: [nvidia]\n  alignment:\n  - {name: x, families: [nope], attribute: a.com/b}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args     []string
		wantCode int
		wantText string
	}{
		"unknown flag is a usage error":            {args: []string{"translate", "--nope"}, wantCode: 2},
		"no input is a usage error":                {args: []string{"translate"}, wantCode: 2, wantText: "no input"},
		"bad output format is a usage error":       {args: []string{"translate", "-f", bad, "-o", "xml"}, wantCode: 2},
		"invalid manifest names file and document": {args: []string{"translate", "-f", bad}, wantCode: 1, wantText: "bad.yaml#0"},
		"invalid policy names the field":           {args: []string{"translate", "-f", bad, "--policy", badPolicy}, wantCode: 1, wantText: "spec.alignment[0].families[0]"},
		"audit needs a fleet":                      {args: []string{"audit", "-f", "../../examples/workloads"}, wantCode: 2, wantText: "--fleet"},
		"fail-on never-fits":                       {args: []string{"audit", "-f", "../../examples/workloads", "--fleet", "../../examples/fleets/mixed", "--fail-on", "never-fits"}, wantCode: 1},
		"fail-on passes when all fit":              {args: []string{"audit", "-f", "../../examples/workloads/inference-l4.yaml", "--fleet", "../../examples/fleets/mixed", "--fail-on", "never-fits,untranslatable"}, wantCode: 0},
		"policy check":                             {args: []string{"policy", "check", badPolicy}, wantCode: 1, wantText: "Not found"},
		"unknown profile":                          {args: []string{"policy", "show", "cuda"}, wantCode: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, "", tc.args...)
			if got := exitCode(err); got != tc.wantCode {
				t.Errorf("exit code %d, want %d (err %v)", got, tc.wantCode, err)
			}
			text := out
			if err != nil {
				text += err.Error()
			}
			if !strings.Contains(text, tc.wantText) {
				t.Errorf("output %q does not mention %q", text, tc.wantText)
			}
		})
	}
}

func TestAuditReportAgainstShippedFleets(t *testing.T) {
	type row struct{ outcome, verdict string }
	cases := map[string]struct {
		fleet string
		want  map[string]row
	}{
		"mixed fleet: DRA serves what it has, the A100-40GB CronJob stays legacy": {
			fleet: "mixed",
			want: map[string]row{
				"Deployment/llm-inference": {"Translate", "FitsNow"},
				"Job/pretrain":             {"Translate", "FitsNow"},
				"Pod/notebook-alice":       {"Translate", "FitsNow"},
				"StatefulSet/jax-serve":    {"Translate", "FitsNow"},
				"CronJob/nightly-eval":     {"KeepLegacy", "NeverFits"},
				"Pod/web":                  {"Skip", ""},
				"Pod/pinned":               {"Skip", ""},
			},
		},
		"legacy-only fleet: everything stays legacy": {
			fleet: "legacy-gfd",
			want: map[string]row{
				"Deployment/llm-inference": {"KeepLegacy", "NeverFits"},
				"Job/pretrain":             {"KeepLegacy", "NeverFits"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, "", "audit", "-f", "../../examples/workloads", "--fleet", "../../examples/fleets/"+tc.fleet, "-o", "yaml")
			if err != nil {
				t.Fatal(err)
			}
			var rep report.Report
			if err := yaml.UnmarshalStrict([]byte(out), &rep); err != nil {
				t.Fatalf("report does not decode strictly: %v", err)
			}
			got := map[string]row{}
			for _, r := range rep.Items {
				got[r.Kind+"/"+r.Name] = row{string(r.Outcome), r.Verdict}
			}
			for k, w := range tc.want {
				if got[k] != w {
					t.Errorf("%s: got %+v, want %+v", k, got[k], w)
				}
			}
		})
	}
}
