package translate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/internal/testing/golden"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// goldenCase is one file under testdata/cases: a pod and what it is
// translated with.
type goldenCase struct {
	Pod      *corev1.Pod                 `json:"pod"`
	Profiles []string                    `json:"profiles,omitempty"`
	Policy   *v1alpha1.TranslationPolicy `json:"policy,omitempty"`
	Classes  []*resourceapi.DeviceClass  `json:"classes,omitempty"`
	Quotas   []*corev1.ResourceQuota     `json:"quotas,omitempty"`
	// Alternative is Input.Alternative (ExactlyOnly output).
	Alternative int `json:"alternative,omitempty"`
	// Admitted is Input.Admitted: the pod as the webhook sees it.
	Admitted bool `json:"admitted,omitempty"`
	// Shares is Input.Shares: the share counts of the fleet's shared
	// devices by family ({} for a fleet without any); unset, no fleet.
	Shares map[string][]int64 `json:"shares,omitempty"`
	// Renamed is Input.Renamed: the counts of Shares only nodes that
	// rename their shared resource publish.
	Renamed map[string][]int64 `json:"renamed,omitempty"`
	// Memory is Input.Memory: the fleet's devices shared by memory.
	Memory map[string]celgen.SharedMemory `json:"memory,omitempty"`
}

// goldenResult is what a case must produce, stored as <case>.golden.yaml.
type goldenResult struct {
	Outcome  reason.Outcome                     `json:"outcome"`
	Reasons  []string                           `json:"reasons"`
	Pod      *corev1.Pod                        `json:"pod"`
	Template *resourceapi.ResourceClaimTemplate `json:"template,omitempty"`
	// ImplicitTolerations are Result.ImplicitTolerations.
	ImplicitTolerations []corev1.Toleration `json:"implicitTolerations,omitempty"`
	// Output, Combinations and FaithfulCombination are Result's, shown
	// when the output profile is not Full; Charge is shown for cases with
	// quotas.
	Output              v1alpha1.OutputProfile        `json:"output,omitempty"`
	Combinations        int                           `json:"combinations,omitempty"`
	FaithfulCombination *int                          `json:"faithfulCombination,omitempty"`
	Charge              map[corev1.ResourceName]int64 `json:"charge,omitempty"`
}

func loadCase(t testing.TB, path string) (Input, *goldenCase) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var gc goldenCase
	if err := yaml.UnmarshalStrict(data, &gc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	in := Input{Pod: gc.Pod, Classes: gc.Classes, Quotas: gc.Quotas, Alternative: gc.Alternative, Admitted: gc.Admitted, Shares: gc.Shares, Renamed: gc.Renamed, Memory: gc.Memory}
	switch {
	case gc.Policy != nil:
		in.Policy, err = NewPolicy(gc.Policy)
	case len(gc.Profiles) > 0:
		in.Policy, err = ProfilePolicy(gc.Profiles...)
	default:
		in.Policy = DefaultPolicy()
	}
	if err != nil {
		t.Fatalf("%s: policy: %v", path, err)
	}
	return in, &gc
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/cases/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".golden.yaml") {
			cases = append(cases, f)
		}
	}
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	for _, path := range cases {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			in, gc := loadCase(t, path)
			res, err := Pod(in)
			if err != nil {
				t.Fatal(err)
			}
			got := goldenResult{Outcome: res.Outcome, Pod: res.Pod, Template: res.Template, ImplicitTolerations: res.ImplicitTolerations}
			if res.Output != "" && res.Output != v1alpha1.OutputFull {
				got.Output, got.Combinations = res.Output, res.Combinations
				if res.Combinations > 0 {
					got.FaithfulCombination = &res.FaithfulCombination
				}
			}
			if len(gc.Quotas) > 0 {
				got.Charge = res.Charge
			}
			for _, r := range res.Reasons {
				got.Reasons = append(got.Reasons, string(r.Severity)+" "+r.String())
			}
			checkCatalog(t, res)
			gotYAML, err := yaml.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			goldenPath := strings.TrimSuffix(path, ".yaml") + ".golden.yaml"
			golden.Check(t, goldenPath, gotYAML)

			// A pod that is not translated is left exactly as submitted.
			if res.Outcome != reason.OutcomeTranslate {
				if diff := cmp.Diff(in.Pod, res.Pod); diff != "" {
					t.Errorf("outcome %s changed the pod (-submitted,+result):\n%s", res.Outcome, diff)
				}
				if len(res.ImplicitTolerations) > 0 {
					t.Errorf("outcome %s with implicit tolerations %v", res.Outcome, res.ImplicitTolerations)
				}
			}

			// The input is never modified.
			again, _ := loadCase(t, path)
			if diff := cmp.Diff(again.Pod, in.Pod); diff != "" {
				t.Errorf("input pod was modified (-want,+got):\n%s", diff)
			}
			checkTemplate(t, res)
			checkLabelReasons(t, res)
			checkIdempotent(t, in, res)
		})
	}
}

// checkTemplate compiles every generated selector independently of the
// translator and checks the references between pod and template.
func checkTemplate(t testing.TB, res *Result) {
	t.Helper()
	if res.Outcome != reason.OutcomeTranslate {
		if res.Template != nil {
			t.Errorf("outcome %s with a template", res.Outcome)
		}
		return
	}
	spec := res.Template.Spec.Spec
	if got, want := res.Template.Name, TemplateName(&spec); got != want {
		t.Errorf("template name %s, want content hash %s", got, want)
	}
	names := map[string]bool{}
	for _, r := range spec.Devices.Requests {
		names[r.Name] = true
		var subs []resourceapi.DeviceSubRequest
		if r.Exactly != nil {
			subs = append(subs, resourceapi.DeviceSubRequest{Name: "", DeviceClassName: r.Exactly.DeviceClassName, Selectors: r.Exactly.Selectors, AllocationMode: r.Exactly.AllocationMode, Count: r.Exactly.Count})
		} else {
			if len(r.FirstAvailable) < 2 || len(r.FirstAvailable) > 8 {
				t.Errorf("request %s has %d alternatives", r.Name, len(r.FirstAvailable))
			}
			subs = r.FirstAvailable
			for _, s := range subs {
				names[r.Name+"/"+s.Name] = true
			}
		}
		for _, s := range subs {
			if s.AllocationMode != resourceapi.DeviceAllocationModeExactCount || s.Count < 1 {
				t.Errorf("request %s/%s is not defaulted: mode %q count %d", r.Name, s.Name, s.AllocationMode, s.Count)
			}
			for _, sel := range s.Selectors {
				if err := celgen.CheckSelector(sel.CEL.Expression); err != nil {
					t.Errorf("request %s/%s: %v", r.Name, s.Name, err)
				}
			}
		}
	}
	for _, c := range spec.Devices.Constraints {
		for _, n := range c.Requests {
			if !names[n] {
				t.Errorf("constraint names unknown request %q", n)
			}
		}
	}
	for _, list := range [][]corev1.Container{res.Pod.Spec.InitContainers, res.Pod.Spec.Containers} {
		for _, c := range list {
			for _, rc := range c.Resources.Claims {
				if rc.Name == api.ClaimName && !names[rc.Request] {
					t.Errorf("container %s refers to unknown request %q", c.Name, rc.Request)
				}
			}
		}
	}
}

// checkIdempotent: translating the result again changes nothing.
func checkIdempotent(t testing.TB, in Input, res *Result) {
	t.Helper()
	in.Pod = res.Pod
	again, err := Pod(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(res.Pod, again.Pod); diff != "" {
		t.Errorf("second translation changed the pod (-first,+second):\n%s", diff)
	}
	if res.Outcome == reason.OutcomeTranslate && again.Outcome != reason.OutcomeSkip {
		t.Errorf("second translation: outcome %s, want %s", again.Outcome, reason.OutcomeSkip)
	}
}

// checkLabelReasons: every NodeLabelTranslated reason names attributes (or a
// DeviceClass) and requests, and each of those requests in the template
// really has a selector on that attribute (or that class).
func checkLabelReasons(t testing.TB, res *Result) {
	t.Helper()
	for _, r := range res.Reasons {
		if r.Code != ReasonNodeLabelTranslated {
			continue
		}
		if res.Template == nil {
			t.Errorf("%s without a template", r)
			continue
		}
		msg, ok := strings.CutPrefix(r.Message, "became a device selector on ")
		msg, _, ok2 := strings.Cut(msg, " and was removed")
		if !ok || !ok2 {
			t.Errorf("cannot read %q", r.Message)
			continue
		}
		// "<what> of request <names>", groups joined by "; on ".
		for _, group := range strings.Split(msg, "; on ") {
			whats, reqs, ok := strings.Cut(group, " of request ")
			if !ok {
				t.Errorf("cannot read %q", r.Message)
				continue
			}
			checkLabelGroup(t, res, r, whats, reqs)
		}
	}
}

// checkLabelGroup checks one group of a NodeLabelTranslated reason: each
// request named has a selector on each attribute (or the class) named.
func checkLabelGroup(t testing.TB, res *Result, r reason.Reason, whats, reqs string) {
	t.Helper()
	for _, name := range strings.Split(reqs, ", ") {
		sub, found := findSubrequest(res.Template.Spec.Spec, name)
		if !found {
			t.Errorf("%s: the template has no request %s", r.Field, name)
			continue
		}
		for _, what := range strings.Split(whats, " and ") {
			if class, ok := strings.CutPrefix(what, "DeviceClass "); ok {
				if sub.DeviceClassName != class {
					t.Errorf("%s: request %s has class %s, the reason says %s", r.Field, name, sub.DeviceClassName, class)
				}
				continue
			}
			if what == "allowMultipleAllocations" {
				if !slices.ContainsFunc(sub.Selectors, func(s resourceapi.DeviceSelector) bool {
					return strings.Contains(s.CEL.Expression, "device.allowMultipleAllocations")
				}) {
					t.Errorf("%s: request %s has no selector on device.allowMultipleAllocations, the reason says it has", r.Field, name)
				}
				continue
			}
			field := "attributes"
			if c, ok := strings.CutPrefix(what, "capacity "); ok {
				field, what = "capacity", c
			}
			domain, id, _ := strings.Cut(what, "/")
			ref := "device." + field + "[\"" + domain + "\"]." + id
			if !slices.ContainsFunc(sub.Selectors, func(s resourceapi.DeviceSelector) bool { return strings.Contains(s.CEL.Expression, ref) }) {
				t.Errorf("%s: request %s has no selector on %s, the reason says it has", r.Field, name, ref)
			}
		}
	}
}

// findSubrequest finds "<request>" (exactly) or "<request>/<subrequest>".
func findSubrequest(spec resourceapi.ResourceClaimSpec, name string) (resourceapi.DeviceSubRequest, bool) {
	req, sub, _ := strings.Cut(name, "/")
	for _, r := range spec.Devices.Requests {
		if r.Name != req {
			continue
		}
		if r.Exactly != nil && sub == "" {
			return resourceapi.DeviceSubRequest{DeviceClassName: r.Exactly.DeviceClassName, Selectors: r.Exactly.Selectors}, true
		}
		for _, s := range r.FirstAvailable {
			if s.Name == sub {
				return s, true
			}
		}
	}
	return resourceapi.DeviceSubRequest{}, false
}

// checkCatalog: every reason of a result has a catalog entry whose severity
// it carries, and a pod kept as submitted or skipped has a reason whose
// entry leads to that outcome (the one decide takes as decisive).
func checkCatalog(t *testing.T, res *Result) {
	t.Helper()
	for _, r := range res.Reasons {
		e, ok := Reasons().Lookup(r.Code)
		if !ok {
			t.Errorf("reason %s has no catalog entry", r.Code)
			continue
		}
		if e.Severity != r.Severity {
			t.Errorf("reason %s is reported as %s, the catalog says %s", r.Code, r.Severity, e.Severity)
		}
	}
	if res.Outcome == reason.OutcomeTranslate || len(res.Reasons) == 0 {
		return
	}
	// decide takes the first reason whose entry leads to the outcome.
	if !slices.ContainsFunc(res.Reasons, func(r reason.Reason) bool { return Reasons()[r.Code].Outcome == res.Outcome }) {
		t.Errorf("outcome %s, and no reason's catalog entry leads to it: %v", res.Outcome, res.Reasons)
	}
}
