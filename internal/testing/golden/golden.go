// Package golden compares what a test produces with a golden file under
// testdata/, and rewrites the file instead when the test runs with -update
// (go test ./pkg -update), the one flag of every golden test.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files (and generated files) the tests compare with")

// Updating reports whether the test runs with -update: a test whose
// golden is not one file (a section of a page, a folder of generated
// files) rewrites it itself.
func Updating() bool { return *update }

// Check compares got with the file at path, reporting the difference as
// (-want,+got); with -update it first writes got there (and the folders
// it needs).
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want,+got; -update rewrites it):\n%s", path, diff)
	}
}
