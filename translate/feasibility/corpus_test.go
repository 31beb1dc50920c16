package feasibility_test

import (
	"context"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/translate"
	"github.com/claimbridge/claimbridge/translate/feasibility"
)

// The placement corpus (testdata/placement): pods, each with the fleet it
// runs on, and what the decision makes of them — the nodes the pod as
// submitted could land on (its legacy view), the nodes its translation
// lands on, and the outcome. Refresh with -update and review every change.

var updateCorpus = flag.Bool("update", false, "rewrite the placement corpus's golden files")

// CorpusFile is one file of testdata/placement/corpus.
type CorpusFile struct {
	// Fleet is a directory under testdata/placement/fleets.
	Fleet string `json:"fleet"`
	// Profiles or Policy choose the policy; the default policy otherwise.
	Profiles []string                     `json:"profiles,omitempty"`
	Policy   *translate.TranslationPolicy `json:"policy,omitempty"`
	Cases    []CorpusCase                 `json:"cases"`
}

// CorpusCase is one pod.
type CorpusCase struct {
	Name string `json:"name"`
	// Why the case is here, in a sentence.
	Why string      `json:"why"`
	Pod *corev1.Pod `json:"pod"`
}

// CorpusResult is what the decision made of one case.
type CorpusResult struct {
	Name    string            `json:"name"`
	Outcome translate.Outcome `json:"outcome"`
	// Reason is the code of the reason that decided (decide.Decision.Decisive).
	Reason string `json:"reason"`
	// Placement holds the node sets of the placement check, absent when it did not run.
	Placement *CorpusPlacement `json:"placement,omitempty"`
	Verdict   string           `json:"verdict,omitempty"`
	Node      string           `json:"node,omitempty"`
}

// CorpusPlacement: the nodes the pod as submitted could land on (its
// legacy view), and those its translation lands on.
type CorpusPlacement struct {
	Legacy     []string `json:"legacy"`
	Translated []string `json:"translated"`
}

// LoadCorpus reads every corpus file, by name.
func loadCorpus(t testing.TB) map[string]*CorpusFile {
	t.Helper()
	paths, err := filepath.Glob("testdata/placement/corpus/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*CorpusFile{}
	for _, p := range paths {
		if strings.HasSuffix(p, ".golden.yaml") {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f CorpusFile
		if err := yaml.UnmarshalStrict(data, &f); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for i := range f.Cases {
			completePod(f.Cases[i].Name, f.Cases[i].Pod)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".yaml")] = &f
	}
	return out
}

// completePod fills what the corpus leaves out for brevity: the name, the
// namespace and images.
func completePod(name string, pod *corev1.Pod) {
	if pod.Name == "" {
		pod.Name = name
	}
	if pod.Namespace == "" {
		pod.Namespace = "corpus"
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Image == "" {
				list[i].Image = "registry.example/" + list[i].Name + ":1"
			}
		}
	}
}

func (f *CorpusFile) policy(t testing.TB) *translate.Policy {
	t.Helper()
	switch {
	case f.Policy != nil:
		p, err := translate.NewPolicy(f.Policy)
		if err != nil {
			t.Fatal(err)
		}
		return p
	case len(f.Profiles) > 0:
		p, err := translate.ProfilePolicy(f.Profiles...)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	return translate.DefaultPolicy()
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
			policy := f.policy(t)
			checker := feasibility.NewChecker(feasibility.Options{})
			var got []CorpusResult
			for _, c := range f.Cases {
				total++
				got = append(got, decideCase(t, c, policy, inv, snap, checker))
			}
			data, err := yaml.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata/placement/corpus", name+".golden.yaml")
			if *updateCorpus {
				if err := os.WriteFile(golden, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(data)); diff != "" {
				t.Errorf("decisions differ from %s (-want,+got):\n%s", golden, diff)
			}
		})
	}
	if total < 60 {
		t.Errorf("the corpus has %d pods, want at least 60", total)
	}
}

func decideCase(t *testing.T, c CorpusCase, policy *translate.Policy, inv *feasibility.Inventory, snap *feasibility.Snapshot, checker *feasibility.Checker) CorpusResult {
	t.Helper()
	ctx := context.Background()
	d, err := decide.Pod(ctx, decide.Input{Pod: c.Pod, Policy: policy, Classes: inv.Classes, Checker: checker, Snapshot: snap})
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	r := CorpusResult{Name: c.Name, Outcome: d.Outcome, Reason: string(d.Decisive.Code)}
	if d.Verdict != nil {
		r.Verdict, r.Node = string(d.Verdict.Kind), d.Verdict.Node
	}
	if d.Placement == nil {
		return r
	}
	in := feasibility.PlacementInput{Policy: policy, Legacy: decide.AsAdmitted(c.Pod, d.Translation.ImplicitTolerations), Translated: d.Translation.Pod,
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
	r.Placement = &CorpusPlacement{Legacy: byClass.LegacyNodes, Translated: byClass.TranslatedNodes}
	if r.Placement.Legacy == nil {
		r.Placement.Legacy = []string{}
	}
	if r.Placement.Translated == nil {
		r.Placement.Translated = []string{}
	}
	return r
}
