package offline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/podtemplates"
	"github.com/claimbridge/claimbridge/internal/testing/golden"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

func translateFile(t *testing.T, name string, input []byte) ([]manifest.Document, []Item, string) {
	t.Helper()
	return translateFileWith(t, name, input, translate.DefaultPolicy())
}

func translateFileWith(t *testing.T, name string, input []byte, p *translate.Policy) ([]manifest.Document, []Item, string) {
	t.Helper()
	docs, err := manifest.Read([]string{"-"}, bytes.NewReader(input))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	items, templates, err := Translate(t.Context(), docs, Options{Policy: p})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out bytes.Buffer
	if err := WriteObjects(&out, "yaml", docs, templates); err != nil {
		t.Fatal(err)
	}
	return docs, items, out.String()
}

// TestCRDGolden translates every example under examples/crds: the output
// (objects, then templates) and the explanation are golden files.
func TestCRDGolden(t *testing.T) {
	files, err := filepath.Glob("../../examples/crds/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			input, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, items, out := translateFile(t, name, input)
			golden.Check(t, filepath.Join("testdata", "crds", name+".golden.yaml"), []byte(out))
			var explain bytes.Buffer
			if err := WriteExplain(&explain, items); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "crds", name+".explain.golden"), explain.Bytes())

			// Translating the output again changes nothing.
			_, again, out2 := translateFile(t, name, []byte(out))
			if out2 != out {
				t.Errorf("translating the output again changed it:\n%s", cmp.Diff(out, out2))
			}
			for _, it := range again {
				if it.Decision.Outcome == reason.OutcomeTranslate {
					t.Errorf("%s translated a second time", it.Name())
				}
			}
			checkOutsideTemplates(t, input, []byte(out), written(items))
			checkPodsSkipped(t, []byte(out), items)
		})
	}
}

// checkOutsideTemplates: with every pod template blanked out, input and
// output objects are the same YAML, comments and field order included, but
// for the fields written for an operator (by document, the fields of the
// OperatorCountWritten reasons), which are blanked too.
func checkOutsideTemplates(t *testing.T, input, output []byte, fields map[int][]string) {
	t.Helper()
	blank := func(data []byte) []string {
		docs, err := manifest.Read([]string{"-"}, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range docs {
			if d.Object.GetObjectKind().GroupVersionKind().Kind == "ResourceClaimTemplate" {
				continue
			}
			f, err := podtemplates.Find(d.Node)
			if err != nil {
				t.Fatal(err)
			}
			for _, tm := range f.Templates {
				// Every template found becomes null, so that what is
				// around them can be compared (for Argo, the whole
				// template its container is in).
				path := tm.Path
				if parent, _, ok := cutLastStep(path); ok && tm.Form == podtemplates.FormContainer {
					path = parent
				}
				if n := nodeAt(d.Node, path); n != nil {
					*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
				}
			}
			for _, field := range fields[d.Index] {
				clearField(d.Node, field)
			}
			s, err := yaml.String(d.Node)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	if diff := cmp.Diff(blank(input), blank(output)); diff != "" {
		t.Errorf("the objects differ outside their pod templates (-input,+output):\n%s", diff)
	}
}

// written lists, by document, the fields written for operators.
func written(items []Item) map[int][]string {
	out := map[int][]string{}
	for _, it := range items {
		for _, r := range it.Decision.Reasons {
			if r.Code == ReasonOperatorCountWritten {
				out[it.Doc.Index] = append(out[it.Doc.Index], r.Field)
			}
		}
	}
	return out
}

// clearField removes the field at a path such as
// "spec.workerGroupSpecs[0].rayStartParams.num-gpus", and the mappings it
// leaves empty, as if it had never been written.
func clearField(n *yaml.Node, field string) {
	var steps []string
	for _, part := range strings.Split(field, ".") {
		name, idx, isList := strings.Cut(part, "[")
		steps = append(steps, name)
		if isList {
			steps = append(steps, "["+idx)
		}
	}
	var walk func(n *yaml.Node, steps []string) bool
	walk = func(n *yaml.Node, steps []string) bool {
		step := steps[0]
		if strings.HasPrefix(step, "[") {
			var i int
			if _, err := fmt.Sscanf(step, "[%d]", &i); err != nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return false
			}
			walk(n.Content[i], steps[1:])
			return false
		}
		if n.Kind != yaml.MappingNode {
			return false
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value != step {
				continue
			}
			if len(steps) == 1 || walk(n.Content[i+1], steps[1:]) {
				n.Content = slices.Delete(n.Content, i, i+2)
			}
			break
		}
		return len(n.Content) == 0
	}
	walk(n, steps)
}

// nodeAt is the node at a template's path ("spec.templates[1].container",
// "" for the object itself), nil when there is none.
func nodeAt(n *yaml.Node, path string) *yaml.Node {
	if path == "" {
		return n
	}
	for _, part := range strings.Split(path, ".") {
		name, idx, isList := strings.Cut(part, "[")
		if n = mapValue(n, name); n == nil {
			return nil
		}
		if isList {
			var i int
			if _, err := fmt.Sscanf("["+idx, "[%d]", &i); err != nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return nil
			}
			n = n.Content[i]
		}
	}
	return n
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// cutLastStep splits a path before its last field.
func cutLastStep(path string) (parent, last string, ok bool) {
	i := strings.LastIndex(path, ".")
	if i < 0 {
		return "", "", false
	}
	return path[:i], path[i+1:], true
}

// checkPodsSkipped: a pod its operator creates from a translated template is
// left alone by the webhook (translation skips it as already translated), and
// refers to the claim its template declares.
func checkPodsSkipped(t *testing.T, output []byte, items []Item) {
	t.Helper()
	docs, err := manifest.Read([]string{"-"}, bytes.NewReader(output))
	if err != nil {
		t.Fatal(err)
	}
	translated := map[string]bool{}
	for _, it := range items {
		if it.Decision.Outcome == reason.OutcomeTranslate {
			translated[it.Name()] = true
		}
	}
	seen := 0
	for _, d := range docs {
		f, err := podtemplates.Find(d.Node)
		if err != nil {
			t.Fatal(err)
		}
		for _, tmpl := range f.Templates {
			it := Item{Doc: d, Path: tmpl.Path, Rule: tmpl.Rule}
			if tmpl.Rule == podtemplates.RuleBuiltin {
				it.Path = ""
			}
			if !translated[it.Name()] {
				continue
			}
			seen++
			pod := operatorPod(t, tmpl, d.Node)
			res, err := translate.Pod(translate.Input{Pod: pod, Policy: translate.DefaultPolicy()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != reason.OutcomeSkip || !slices.ContainsFunc(res.Reasons, func(r reason.Reason) bool { return r.Code == translate.ReasonAlreadyTranslated }) {
				t.Errorf("%s: a pod created from the translated template is not skipped: %v", it.Name(), res.Reasons)
			}
			if !slices.ContainsFunc(pod.Spec.ResourceClaims, func(c corev1.PodResourceClaim) bool { return c.Name == api.ClaimName }) {
				t.Errorf("%s: the pod has no claim %q", it.Name(), api.ClaimName)
			}
		}
	}
	if seen != len(translated) {
		t.Errorf("found %d translated templates in the output, want %d", seen, len(translated))
	}
}

// operatorPod builds the pod an operator would create from a template; for
// Argo it applies the template's podSpecPatch as Argo does (a strategic
// merge patch over the pod spec).
func operatorPod(t *testing.T, tmpl *podtemplates.Template, obj *yaml.Node) *corev1.Pod {
	t.Helper()
	pod := tmpl.Pod()
	if tmpl.Form != podtemplates.FormContainer {
		return pod
	}
	// The podSpecPatch beside the template's container.
	patch := ""
	if parent, _, ok := cutLastStep(tmpl.Path); ok {
		if n := nodeAt(obj, parent+".podSpecPatch"); n != nil {
			patch = n.Value
		}
	}
	if patch == "" {
		t.Fatalf("%s: no podSpecPatch", tmpl.Path)
	}
	spec, err := json.Marshal(pod.Spec)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := strategicpatch.StrategicMergePatch(spec, []byte(patch), corev1.PodSpec{})
	if err != nil {
		t.Fatalf("%s: podSpecPatch %s: %v", tmpl.Path, patch, err)
	}
	pod.Spec = corev1.PodSpec{}
	if err := json.Unmarshal(merged, &pod.Spec); err != nil {
		t.Fatal(err)
	}
	return pod
}

// TestVolcanoJobPodsAreDecidedForTheScheduler: a Volcano Job's pods get its
// spec.schedulerName ("volcano" by default) from its controller, so they are
// decided as pods of that scheduler: kept legacy by the default policy,
// translated by a policy that lists it, and the template is written back
// without the inherited name.
func TestVolcanoJobPodsAreDecidedForTheScheduler(t *testing.T) {
	job := func(scheduler string) []byte {
		s := ""
		if scheduler != "" {
			s = "  schedulerName: " + scheduler + "\n"
		}
		return []byte("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j, namespace: ml}\nspec:\n" + s +
			"  tasks:\n  - name: w\n    template:\n      spec:\n        containers:\n        - name: w\n          image: x\n          resources: {limits: {nvidia.com/gpu: 1}}\n")
	}
	volcano, err := translate.LoadPolicy([]byte("apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nspec:\n  profiles: [nvidia]\n  schedulers: [volcano]\n"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		input       []byte
		policy      *translate.Policy
		wantOutcome reason.Outcome
	}{
		"no schedulerName: Volcano's default, not listed": {input: job(""), policy: translate.DefaultPolicy(), wantOutcome: reason.OutcomeKeepLegacy},
		"schedulerName volcano, not listed":               {input: job("volcano"), policy: translate.DefaultPolicy(), wantOutcome: reason.OutcomeKeepLegacy},
		"schedulerName default-scheduler":                 {input: job("default-scheduler"), policy: translate.DefaultPolicy(), wantOutcome: reason.OutcomeTranslate},
		"a policy that lists volcano translates":          {input: job(""), policy: volcano, wantOutcome: reason.OutcomeTranslate},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			docs, _, templates := translateOne(t, tc.input, tc.policy, tc.wantOutcome)
			var out bytes.Buffer
			if err := WriteObjects(&out, "yaml", docs, templates); err != nil {
				t.Fatal(err)
			}
			if strings.Count(out.String(), "schedulerName") != strings.Count(string(tc.input), "schedulerName") {
				t.Errorf("the inherited schedulerName was written into the template:\n%s", out.String())
			}
		})
	}
}

// TestKueueWorkloadsAreDecidedAsKueueManaged: a workload that carries
// kueue.x-k8s.io/queue-name is admitted by Kueue from its pod templates, so
// they are decided as Kueue-managed pods: kept as submitted until Kueue's
// deviceClassMappings are known, then translated without firstAvailable;
// the workload's label is not written into the template.
func TestKueueWorkloadsAreDecidedAsKueueManaged(t *testing.T) {
	job := []byte("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  namespace: ml\n  labels: {kueue.x-k8s.io/queue-name: research}\nspec:\n  template:\n    spec:\n" +
		"      restartPolicy: Never\n      affinity:\n        nodeAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution:\n" +
		"          - weight: 10\n            preference: {matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-H100-80GB-HBM3]}]}\n" +
		"      containers:\n      - name: w\n        image: x\n        resources: {limits: {nvidia.com/gpu: 1}}\n")
	mapped := translate.DefaultPolicy().WithKueueMappings([]v1alpha1.KueueDeviceClassMapping{{Name: "nvidia.com/gpu", DeviceClassNames: []string{"gpu.nvidia.com"}}})
	cases := map[string]struct {
		policy      *translate.Policy
		wantOutcome reason.Outcome
		wantReason  reason.Code
	}{
		"no mappings known: kept as submitted":  {policy: translate.DefaultPolicy(), wantOutcome: reason.OutcomeKeepLegacy, wantReason: translate.ReasonKueueClassNotMapped},
		"the class mapped: one exactly request": {policy: mapped, wantOutcome: reason.OutcomeTranslate, wantReason: decide.ReasonFeasible},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			docs, items, templates := translateOne(t, job, tc.policy, tc.wantOutcome)
			d := items[0].Decision
			if tc.wantOutcome == reason.OutcomeKeepLegacy && d.Decisive.Code != tc.wantReason {
				t.Errorf("decisive %s, want %s", d.Decisive.Code, tc.wantReason)
			}
			if tc.wantOutcome != reason.OutcomeTranslate {
				return
			}
			for _, r := range templates[0].Spec.Spec.Devices.Requests {
				if r.Exactly == nil {
					t.Errorf("request %s has firstAvailable, which Kueue rejects", r.Name)
				}
			}
			var out bytes.Buffer
			if err := WriteObjects(&out, "yaml", docs, templates); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(out.String(), "kueue.x-k8s.io/queue-name"); n != 1 {
				t.Errorf("the queue label appears %d times, want once (the Job's):\n%s", n, out.String())
			}
		})
	}
}

// translateOne translates one document and expects one item with outcome want.
func translateOne(t *testing.T, input []byte, policy *translate.Policy, want reason.Outcome) ([]manifest.Document, []Item, []*resourceapi.ResourceClaimTemplate) {
	t.Helper()
	docs, err := manifest.Read([]string{"-"}, bytes.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	items, templates, err := Translate(t.Context(), docs, Options{Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].Decision.Outcome != want {
		t.Fatalf("items %+v, want one %s", items, want)
	}
	return docs, items, templates
}
