package offline

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/testing/golden"
	"github.com/claimbridge/claimbridge/translate"
)

// TestCRDRowsGolden: the report rows of every example under examples/crds
// (no fleet) — how many pods each template stands for, as its operator
// counts them, the devices one pod asks for and the devices of the row —
// are a golden file. Before, a custom resource's rows were all one pod.
func TestCRDRowsGolden(t *testing.T) {
	files, err := filepath.Glob("../../examples/crds/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	var b strings.Builder
	for _, f := range files {
		input, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := manifest.Read([]string{"-"}, strings.NewReader(string(input)))
		if err != nil {
			t.Fatal(err)
		}
		items, _, err := Translate(t.Context(), docs, Options{Policy: translate.DefaultPolicy()})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s\n", filepath.Base(f))
		for _, row := range Rows(items) {
			replicas := "-"
			if row.Replicas != nil {
				replicas = fmt.Sprint(*row.Replicas)
			}
			var devices []string
			for _, k := range slices.Sorted(maps.Keys(row.DevicesRequested)) {
				devices = append(devices, fmt.Sprintf("%s=%d", k, row.DevicesRequested[k]))
			}
			name := row.Kind + " " + row.Namespace + "/" + row.Name
			if row.Path != "" {
				name += ": " + row.Path
			}
			fmt.Fprintf(&b, "  %s: %s, replicas %s, pods %d, per pod [%s], devices %d\n", name, row.Outcome, replicas, row.Pods(), strings.Join(devices, " "), row.Demand())
		}
	}
	golden.Check(t, filepath.Join("testdata", "crds", "rows.golden"), []byte(b.String()))
}
