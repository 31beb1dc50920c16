package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claimbridge/claimbridge/e2e/cluster"
)

// TestTheCutoverPageOnTheDevCluster follows docs/tasks/cutover.md on make dev-cluster with the
// before-cutover fleet, with kubectl as the page does: the example's namespaces and workloads
// applied (audit mode), the namespaces labelled enforce (step 6), then the switch (step 7)
// with devcluster switch, which moves the nodes to the DRA stack as the forecast says and
// recreates every pod at once. Every workload's pods end bound within the range the forecast
// gave (exit code 0), and the table says so row by row.
func TestTheCutoverPageOnTheDevCluster(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dc := startDevCluster(t, "-fleet", filepath.Join(root, "examples", "fleets", "before-cutover"))
	bins := os.Getenv(cluster.BinDirEnv)
	if bins == "" {
		t.Skipf("$%s is not set: no kubectl to follow the page with", cluster.BinDirEnv)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), filepath.Join(bins, "kubectl"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+dc.kubeconfig)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	kubectl("apply", "-f", "examples/cutover")
	for _, ns := range []string{"research", "lab", "inference"} {
		kubectl("label", "namespace", ns, "claimbridge.io/mode=enforce", "--overwrite")
	}
	// Step 6 done: the pods of the day before the switch have been decided in audit mode
	// (none translated); the switch recreates them all, so the enforce label decides them.
	time.Sleep(5 * time.Second)

	var out bytes.Buffer
	cmd := exec.CommandContext(t.Context(), dc.bin, "switch", "-kubeconfig", dc.kubeconfig)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("devcluster switch:\n%s", out.String())
	if err != nil {
		t.Fatalf("devcluster switch: %v (exit code 1: a workload was bound otherwise than forecast)", err)
	}
	rows := regexp.MustCompile(`(?m)^(\S+/\S+/\S+)\s+(\S+)\s+\S+\s+\d+\s+(true|false)$`).FindAllStringSubmatch(out.String(), -1)
	if len(rows) < 9 {
		t.Fatalf("the switch's table has %d workload rows, want the example's 9", len(rows))
	}
	moved := 0
	for _, r := range rows {
		if r[3] != "true" {
			t.Errorf("%s (%s) bound otherwise than forecast", r[1], r[2])
		}
		if r[2] == "Moves" {
			moved++
		}
	}
	if moved == 0 {
		t.Error("no workload moves to DRA in the switch: the namespaces were not enforce")
	}
	if !strings.Contains(kubectl("get", "resourceslices"), "cutover-") {
		t.Error("no ResourceSlice of the forecast fleet after the switch")
	}
}
