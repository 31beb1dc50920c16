package offline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/internal/testing/golden"
	"github.com/claimbridge/claimbridge/translate"
)

// TestGKEWorkloadsOffline translates GKE-shaped workloads with the default
// policy and no fleet, as `claimbridge translate` does: each
// testdata/gke/<name>.yaml has its output (<name>.golden.yaml) and its
// explanation (<name>.explain.golden). A multi-host TPU Indexed Job stays
// as submitted (MultiHostTPUEnvironment), its single-host sibling is
// translated with the toleration GKE's admission gives the original; a
// KServe predictor keeps the accelerator KServe pins it to
// (KServeAcceleratorPinned).
func TestGKEWorkloadsOffline(t *testing.T) {
	workloadGoldens(t, "gke", translate.DefaultPolicy())
}

// TestHAMiWorkloadsOffline does the same for HAMi-shaped workloads under the
// nvidia and hami profiles (testdata/hami): a pod that asks HAMi for MIG
// instances stays as submitted (HAMiMIGMode).
func TestHAMiWorkloadsOffline(t *testing.T) {
	p, err := translate.ProfilePolicy("nvidia", "hami")
	if err != nil {
		t.Fatal(err)
	}
	workloadGoldens(t, "hami", p)
}

// workloadGoldens checks the output and the explanation of every
// testdata/<dir>/<name>.yaml under the policy against its golden files.
func workloadGoldens(t *testing.T, dir string, p *translate.Policy) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.yaml"))
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
			_, items, out := translateFileWith(t, name, input, p)
			golden.Check(t, filepath.Join("testdata", dir, name+".golden.yaml"), []byte(out))
			var explain bytes.Buffer
			if err := WriteExplain(&explain, items); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", dir, name+".explain.golden"), explain.Bytes())
		})
	}
	if n == 0 {
		t.Fatal("no cases")
	}
}
