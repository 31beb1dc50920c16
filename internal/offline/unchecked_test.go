package offline

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/claimbridge/claimbridge/internal/testing/golden"
)

// TestUncheckedLabelsStayLegacyWithoutAFleet (issue 27, item 2): offline
// without a fleet, a workload whose translation would drop a label no
// device attribute expresses stays as submitted, and explain says which
// label and why; the output keeps it byte for byte. Golden files:
// testdata/labels/unchecked.{golden.yaml,explain.golden}.
func TestUncheckedLabelsStayLegacyWithoutAFleet(t *testing.T) {
	in := filepath.Join("testdata", "labels", "unchecked.yaml")
	input, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	_, items, out := translateFile(t, "unchecked", input)
	golden.Check(t, filepath.Join("testdata", "labels", "unchecked.golden.yaml"), []byte(out))
	var explain bytes.Buffer
	if err := WriteExplain(&explain, items); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "labels", "unchecked.explain.golden"), explain.Bytes())
}
