package feasibility_test

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/golden"
	"github.com/claimbridge/claimbridge/internal/testing/placementcorpus"
	"github.com/claimbridge/claimbridge/translate"
)

// The placement corpus (testdata/placement): pods, each with the fleet it
// runs on, and what the decision makes of them — the nodes the pod as
// submitted could land on (its legacy view), the nodes its translation
// lands on, and the outcome. Refresh with -update and review every change.

const corpusDir = "testdata/placement"

func loadCorpus(t testing.TB) map[string]*placementcorpus.File {
	t.Helper()
	files, err := placementcorpus.Load(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func policyOf(t testing.TB, f *placementcorpus.File) *translate.Policy {
	t.Helper()
	p, err := f.CompilePolicy()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func snapshotOf(t testing.TB, fleet string) (*feasibility.Inventory, *feasibility.Snapshot) {
	t.Helper()
	inv, err := feasibility.LoadInventory(filepath.Join("testdata/placement/fleets", fleet))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := feasibility.NewSnapshot(inv, 1, feasibility.DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	return inv, snap
}

// TestPlacementCorpus decides every pod of the corpus and compares with the
// golden files. It also checks that the placement check gives the same sets
// node by node as class by class.
func TestPlacementCorpus(t *testing.T) {
	files := loadCorpus(t)
	total := 0
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f := files[name]
		t.Run(name, func(t *testing.T) {
			inv, snap := snapshotOf(t, f.Fleet)
			policy := policyOf(t, f)
			checker := feasibility.NewChecker(feasibility.Options{})
			var got []placementcorpus.Result
			for _, c := range f.Cases {
				total++
				got = append(got, decideCase(t, c, policy, inv, snap, checker))
			}
			data, err := yaml.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, placementcorpus.GoldenPath(corpusDir, name), data)
		})
	}
	if total < 60 {
		t.Errorf("the corpus has %d pods, want at least 60", total)
	}
}

func decideCase(t *testing.T, c placementcorpus.Case, policy *translate.Policy, inv *feasibility.Inventory, snap *feasibility.Snapshot, checker *feasibility.Checker) placementcorpus.Result {
	t.Helper()
	ctx := context.Background()
	d, err := decide.Pod(ctx, decide.Input{Pod: c.Pod, Policy: policy, Classes: inv.Classes, Checker: checker, Snapshot: snap})
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	r := placementcorpus.Result{Name: c.Name, Outcome: d.Outcome, Reason: string(d.Decisive.Code)}
	if d.Verdict != nil {
		r.Verdict, r.Node = string(d.Verdict.Kind), d.Verdict.Node
	}
	if d.Placement == nil {
		return r
	}
	in := feasibility.PlacementInput{Policy: policy, Legacy: decide.AsAdmitted(c.Pod, policy), Translated: decide.AsAdmittedLike(d.Translation.Pod, c.Pod, policy),
		Claims: []*resourceapi.ResourceClaimSpec{&d.Translation.Template.Spec.Spec}, ListNodes: true}
	byClass := checker.Placement(ctx, snap, in)
	in.ByNode = true
	byNode := checker.Placement(ctx, snap, in)
	if diff := cmp.Diff(byNode.LegacyNodes, byClass.LegacyNodes); diff != "" {
		t.Errorf("%s: legacy nodes by class differ from node by node (-node,+class):\n%s", c.Name, diff)
	}
	if diff := cmp.Diff(byNode.TranslatedNodes, byClass.TranslatedNodes); diff != "" {
		t.Errorf("%s: translated nodes by class differ from node by node (-node,+class):\n%s", c.Name, diff)
	}
	if byClass.Equal() != d.Placement.Equal() || byClass.Legacy != d.Placement.Legacy || byClass.Translated != d.Placement.Translated {
		t.Errorf("%s: the decision's placement (%d/%d) differs from a second check (%d/%d)", c.Name, d.Placement.Legacy, d.Placement.Translated, byClass.Legacy, byClass.Translated)
	}
	r.Placement = &placementcorpus.Placement{Legacy: byClass.LegacyNodes, Translated: byClass.TranslatedNodes}
	if r.Placement.Legacy == nil {
		r.Placement.Legacy = []string{}
	}
	if r.Placement.Translated == nil {
		r.Placement.Translated = []string{}
	}
	return r
}
