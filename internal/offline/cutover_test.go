package offline

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/translate"
)

// manifestFiles are the example and corpus manifests: every object kind
// the CLI reads (built-in workloads, operators' custom resources, kinds no
// one listed).
func manifestFiles(tb testing.TB) []string {
	tb.Helper()
	var files []string
	for _, dir := range []string{"../../examples/crds", "../../examples/workloads", "../../examples/cutover", "../testing/publiccorpus/manifests"} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && filepath.Ext(path) == ".yaml" {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return files
}

// cutoverOf runs the forecast over one input against the before-cutover
// fleet.
func cutoverOf(ctx context.Context, before *feasibility.Inventory, data []byte) ([]int, error) {
	docs, err := manifest.Read([]string{"-"}, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	items, _, err := Translate(ctx, manifest.Clone(docs), Options{Policy: translate.DefaultPolicy()})
	if err != nil {
		return nil, err
	}
	rows, _, _, err := Cutover(ctx, docs, CutoverOptions{Policy: translate.DefaultPolicy(), Before: before, Quotas: QuotasOf(docs),
		Check: feasibility.Options{Timeout: 2 * time.Second}})
	if err != nil {
		return nil, err
	}
	return []int{len(Rows(items)), len(rows)}, nil
}

// TestEveryObjectKindGoesThroughTheForecast: every example and corpus file
// is forecast without a panic, with a row (and a cutover result) per pod
// template or object the plain audit has a row for; an object whose
// devices sit where no pod template can be located is Unjudged, from the
// resources it asks for.
func TestEveryObjectKindGoesThroughTheForecast(t *testing.T) {
	before, err := feasibility.LoadInventory("../../examples/fleets/before-cutover")
	if err != nil {
		t.Fatal(err)
	}
	files := manifestFiles(t)
	if len(files) < 60 {
		t.Fatalf("%d manifests, want the examples and the public corpus", len(files))
	}
	results := map[cutover.Result]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := manifest.Read([]string{"-"}, bytes.NewReader(data))
		if err != nil {
			continue // not a manifest the CLI reads: its error is the audit's
		}
		rows, _, _, err := Cutover(t.Context(), docs, CutoverOptions{Policy: translate.DefaultPolicy(), Before: before, Quotas: QuotasOf(docs),
			Check: feasibility.Options{Timeout: 2 * time.Second}})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		items, _, err := Translate(t.Context(), manifest.Clone(docs), Options{Policy: translate.DefaultPolicy()})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(Rows(items)) {
			t.Errorf("%s: %d forecast rows, %d audit rows", f, len(rows), len(Rows(items)))
		}
		for _, row := range rows {
			if row.Cutover == nil {
				t.Errorf("%s: %s has no cutover result", f, row.Name)
				continue
			}
			results[row.Cutover.Result]++
			if row.Cutover.Result == cutover.Unjudged && row.Cutover.Why == "" {
				t.Errorf("%s: %s is Unjudged without saying what it asks for", f, row.Name)
			}
		}
	}
	t.Logf("%d files: %v", len(files), results)
	if results[cutover.Unjudged] == 0 || results[cutover.Moves] == 0 {
		t.Errorf("results %v: the inputs no longer hold an object the forecast cannot judge, or one that moves", results)
	}
}

// FuzzCutover: no input makes the forecast panic; it answers or says what
// is wrong with the input.
func FuzzCutover(f *testing.F) {
	for _, file := range manifestFiles(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	before, err := feasibility.LoadInventory("../../examples/fleets/before-cutover")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		_, _ = cutoverOf(ctx, before, data)
	})
}
