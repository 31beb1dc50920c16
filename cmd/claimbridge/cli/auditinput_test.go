package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/cutover"
)

// TestAuditRefusesAFleetOfNothing: a --fleet directory that holds no Node,
// ResourceSlice or DeviceClass (an empty one, or one of workloads given by
// mistake) is an error that says what a fleet is and what was read
// instead, not an empty fleet against which every row is NeverFits.
func TestAuditRefusesAFleetOfNothing(t *testing.T) {
	workloads := t.TempDir()
	data, err := os.ReadFile("../../../examples/cutover/workloads.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(workloads, "workloads.yaml"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"empty": t.TempDir(), "workloads": workloads} {
		t.Run(name, func(t *testing.T) {
			for _, args := range [][]string{
				{"audit", "-f", "../../../examples/cutover", "--fleet", dir},
				{"audit", "-f", "../../../examples/cutover", "--fleet", dir, "--forecast"},
			} {
				out, err := run(t, "", args...)
				if exitCode(err) != exitInvalid || !strings.Contains(out+errText(err), "no Node, ResourceSlice or DeviceClass") {
					t.Errorf("%v: exit %d, %q %v; want exit %d saying the fleet holds no Node, ResourceSlice or DeviceClass", args, exitCode(err), out, err, exitInvalid)
				}
				if name == "workloads" && !strings.Contains(errText(err), "Deployment") {
					t.Errorf("%v: the error %v does not say what was read instead", args, err)
				}
			}
		})
	}
}

// TestAuditHelpNamesEveryCutoverResult: `audit --help` explains every
// result a forecast row can have.
func TestAuditHelpNamesEveryCutoverResult(t *testing.T) {
	out, err := run(t, "", "audit", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cutover.Results {
		if !strings.Contains(out, "  "+string(r)+" ") {
			t.Errorf("audit --help does not explain the cutover result %s", r)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
