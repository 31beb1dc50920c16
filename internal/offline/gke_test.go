package offline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/internal/testing/golden"
)

// TestGKEWorkloadsOffline translates GKE-shaped workloads with the default
// policy and no fleet, as `claimbridge translate` does: each
// testdata/gke/<name>.yaml has its output (<name>.golden.yaml) and its
// explanation (<name>.explain.golden). A multi-host TPU Indexed Job stays
// as submitted (MultiHostTPUEnvironment), its single-host sibling is
// translated with the toleration GKE's admission gives the original.
func TestGKEWorkloadsOffline(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "gke", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.yaml") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			input, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, items, out := translateFile(t, name, input)
			golden.Check(t, filepath.Join("testdata", "gke", name+".golden.yaml"), []byte(out))
			var explain bytes.Buffer
			if err := WriteExplain(&explain, items); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "gke", name+".explain.golden"), explain.Bytes())
		})
	}
	if n == 0 {
		t.Fatal("no cases")
	}
}
