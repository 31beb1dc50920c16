// Package placementcorpus reads the placement corpus
// (feasibility/testdata/placement): pods, each with the fleet it
// runs on and the policy of its file, and the golden decisions — the
// outcome, the reason that decided, and the nodes the pod as submitted
// could land on and those its translation lands on. The offline corpus test
// and the e2e test on the real control plane both read it through here.
package placementcorpus

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// File is one file of <dir>/corpus.
type File struct {
	// Fleet is a directory under <dir>/fleets.
	Fleet string `json:"fleet"`
	// Profiles or Policy choose the policy; the default policy otherwise.
	Profiles []string                    `json:"profiles,omitempty"`
	Policy   *v1alpha1.TranslationPolicy `json:"policy,omitempty"`
	Cases    []Case                      `json:"cases"`
}

// Case is one pod.
type Case struct {
	Name string `json:"name"`
	// Why the case is here, in a sentence.
	Why string      `json:"why"`
	Pod *corev1.Pod `json:"pod"`
}

// Result is what the decision made of one case (a golden file holds one
// per case, in the order of the cases).
type Result struct {
	Name    string         `json:"name"`
	Outcome reason.Outcome `json:"outcome"`
	// Reason is the code of the reason that decided (decide.Decision.Decisive).
	Reason string `json:"reason"`
	// Placement holds the node sets of the placement check, absent when it did not run.
	Placement *Placement `json:"placement,omitempty"`
	Verdict   string     `json:"verdict,omitempty"`
	Node      string     `json:"node,omitempty"`
}

// Placement: the nodes the pod as submitted could land on (its legacy
// view), and those its translation lands on.
type Placement struct {
	Legacy     []string `json:"legacy"`
	Translated []string `json:"translated"`
}

// Load reads every corpus file of dir/corpus by name (the file name without
// .yaml), its pods completed (name, namespace "corpus", images).
func Load(dir string) (map[string]*File, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "corpus", "*.yaml"))
	if err != nil {
		return nil, err
	}
	out := map[string]*File{}
	for _, p := range paths {
		if strings.HasSuffix(p, ".golden.yaml") {
			continue
		}
		var f File
		if err := readStrict(p, &f); err != nil {
			return nil, err
		}
		for i := range f.Cases {
			Complete(f.Cases[i].Name, f.Cases[i].Pod)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".yaml")] = &f
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no corpus in %s", dir)
	}
	return out, nil
}

// GoldenPath is the golden file of the corpus file name.
func GoldenPath(dir, name string) string {
	return filepath.Join(dir, "corpus", name+".golden.yaml")
}

// LoadGolden reads the golden results of every file, by case name, and
// checks that they follow the cases one to one and that names are unique.
func LoadGolden(dir string, files map[string]*File) (map[string]Result, error) {
	out := map[string]Result{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f := files[name]
		var results []Result
		if err := readStrict(GoldenPath(dir, name), &results); err != nil {
			return nil, err
		}
		if len(results) != len(f.Cases) {
			return nil, fmt.Errorf("%s: %d cases, %d golden results", name, len(f.Cases), len(results))
		}
		for i, c := range f.Cases {
			if results[i].Name != c.Name {
				return nil, fmt.Errorf("%s: case %d is %s, its golden result %s", name, i, c.Name, results[i].Name)
			}
			if _, dup := out[c.Name]; dup {
				return nil, fmt.Errorf("case name %s is not unique in the corpus", c.Name)
			}
			out[c.Name] = results[i]
		}
	}
	return out, nil
}

// PolicyDocument is the file's policy: its own, its profiles, or nil for
// the default policy.
func (f *File) PolicyDocument() *v1alpha1.TranslationPolicy {
	switch {
	case f.Policy != nil:
		return f.Policy
	case len(f.Profiles) > 0:
		return &v1alpha1.TranslationPolicy{
			APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
			Metadata: v1alpha1.PolicyMetadata{Name: "profiles:" + strings.Join(f.Profiles, ",")},
			Spec:     v1alpha1.PolicySpec{Profiles: f.Profiles},
		}
	}
	return nil
}

// Policy compiles the file's policy (the default policy when it has none).
func (f *File) CompilePolicy() (*translate.Policy, error) {
	doc := f.PolicyDocument()
	if doc == nil {
		return translate.DefaultPolicy(), nil
	}
	return translate.NewPolicy(doc)
}

// Complete fills what the corpus leaves out for brevity: the pod's name
// (the case's), the namespace ("corpus") and images.
func Complete(name string, pod *corev1.Pod) {
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

func readStrict(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
