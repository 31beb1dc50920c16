package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGeneratedChartFilesAreCurrent(t *testing.T) {
	files, err := render()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", "charts", "claimbridge", name))
		if err != nil {
			t.Fatalf("%v (run: go run ./hack/genchart)", err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("charts/claimbridge/%s is stale; run: go run ./hack/genchart\n(-want,+got):\n%s", name, diff)
		}
	}
}
