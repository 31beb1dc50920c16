package webhook

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// decisionAnnotations are the annotations admission adds to every pod it
// decides, sorted.
var decisionAnnotations = []string{api.AnnotationDecision, api.AnnotationDecisionMessage, api.AnnotationReason}

// annotationsOnly reports whether a JSON patch of raw changes nothing but
// the decision's annotations, and returns them.
func annotationsOnly(t testing.TB, raw, patch []byte) (map[string]string, bool) {
	t.Helper()
	if len(patch) == 0 {
		return nil, true
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("decode patch: %v", err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		t.Fatalf("apply patch: %v", err)
	}
	var before, after map[string]any
	if err := json.Unmarshal(raw, &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &after); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	if meta, ok := after["metadata"].(map[string]any); ok {
		if ann, ok := meta["annotations"].(map[string]any); ok {
			for _, k := range decisionAnnotations {
				if v, ok := ann[k].(string); ok {
					got[k] = v
				}
				delete(ann, k)
			}
			// A pod kept on the device plugin while DRA is busy also
			// carries its hold.
			if v, ok := ann[api.AnnotationDevicePluginHold].(string); ok && got[api.AnnotationDecision] == api.DecisionKeptLegacy {
				got[api.AnnotationDevicePluginHold] = v
				delete(ann, api.AnnotationDevicePluginHold)
			}
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
		if len(meta) == 0 {
			delete(after, "metadata")
		}
	}
	if meta, ok := before["metadata"].(map[string]any); ok {
		if ann, ok := meta["annotations"].(map[string]any); ok {
			for _, k := range decisionAnnotations {
				delete(ann, k)
			}
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
		if len(meta) == 0 {
			delete(before, "metadata")
		}
	}
	return got, cmp.Equal(before, after)
}

func TestEveryDecidedPodCarriesItsDecision(t *testing.T) {
	translated, err := translate.Pod(translate.Input{Pod: l4Pod("prod"), Policy: translate.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	decided := builders.MakePod("again", "staging").Container("c").Limit("nvidia.com/gpu", "1").Annotation(api.AnnotationSkip, "true").
		Annotation(api.AnnotationDecision, api.DecisionWouldTranslate).Annotation(api.AnnotationReason, string(translate.ReasonTranslated)).Obj()
	cases := map[string]struct {
		fleet        string
		pod          *corev1.Pod
		dryRun       bool
		wantDecision string // "" for no annotation
		wantReason   reason.Code
		wantOnly     bool // the patch adds the annotations and nothing else
		wantMessage  []string
	}{
		"enforce, translated: the translation carries the decision": {
			fleet: "l4-inference", pod: l4Pod("prod"), wantDecision: api.DecisionTranslated, wantReason: translate.ReasonTranslated,
			wantMessage: []string{"Translated: uses ResourceClaimTemplate " + translated.Template.Name + " (FitsNow, e.g. on l4-inference-0"},
		},
		"enforce, dry run: the patch shows the decision too": {
			fleet: "l4-inference", pod: l4Pod("prod"), dryRun: true, wantDecision: api.DecisionTranslated, wantReason: translate.ReasonTranslated,
		},
		"audit, would translate: only the annotations change": {
			fleet: "l4-inference", pod: l4Pod("staging"), wantDecision: api.DecisionWouldTranslate, wantReason: translate.ReasonTranslated, wantOnly: true,
			wantMessage: []string{"Translated: audit mode: would use ResourceClaimTemplate " + translated.Template.Name, "claimbridge.io/mode=enforce"},
		},
		"enforce, kept: only the annotations change, the message leads with the remedy": {
			fleet: "legacy-gfd", pod: l4Pod("prod"), wantDecision: api.DecisionKeptLegacy, wantReason: "Infeasible", wantOnly: true,
			wantMessage: []string{"Infeasible: no DRA node passes the pod's node selector, affinity and taints — label or untaint DRA nodes for nvidia.com/gpu", "NeverFits (NoCandidateNodes)"},
		},
		"audit, kept": {
			fleet: "legacy-gfd", pod: l4Pod("staging"), wantDecision: api.DecisionKeptLegacy, wantReason: "Infeasible", wantOnly: true,
		},
		"opted out in an opted-in namespace: skipped, and says so": {
			fleet: "legacy-gfd", pod: builders.MakePod("p", "prod").Container("c").Limit("nvidia.com/gpu", "1").Annotation(api.AnnotationSkip, "true").Obj(),
			wantDecision: api.DecisionSkipped, wantReason: translate.ReasonOptedOut, wantOnly: true,
			wantMessage: []string{"OptedOut: nothing to do; remove the annotation claimbridge.io/skip"},
		},
		"reinvoked on a translated pod: no patch, its decision stays": {
			fleet: "l4-inference", pod: translated.Pod,
		},
		"reinvoked on a decided pod that is now a Skip: its decision stays": {
			fleet: "l4-inference", pod: decided,
		},
		"a pod asking for no mapped device is left alone": {
			fleet: "l4-inference", pod: builders.MakePod("cpu", "prod").Container("c").Limit("cpu", "1").Obj(),
		},
		"a namespace that is not opted in is left alone": {
			fleet: "l4-inference", pod: l4Pod("dev"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.fleet, nil)
			req := request(t, admissionv1.Create, tc.pod, tc.dryRun)
			resp := f.handler.Handle(t.Context(), req)
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			if tc.wantDecision == "" {
				if len(resp.Patches) > 0 {
					t.Fatalf("patched %v, want no change", resp.Patches)
				}
				return
			}
			got := applied(t, req, resp).Annotations
			if got[api.AnnotationDecision] != tc.wantDecision || got[api.AnnotationReason] != string(tc.wantReason) {
				t.Errorf("decision %q reason %q, want %q %q", got[api.AnnotationDecision], got[api.AnnotationReason], tc.wantDecision, tc.wantReason)
			}
			msg := got[api.AnnotationDecisionMessage]
			if !strings.HasPrefix(msg, string(tc.wantReason)+": ") || len(msg) > explain.MaxExplanation || strings.ContainsAny(msg, "\r\n") {
				t.Errorf("message %q does not start with the reason code %s or is not one line of at most %d bytes", msg, tc.wantReason, explain.MaxExplanation)
			}
			for _, w := range tc.wantMessage {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q, want it to contain %q", msg, w)
				}
			}
			if tc.wantOnly {
				patch, err := json.Marshal(resp.Patches)
				if err != nil {
					t.Fatal(err)
				}
				ann, only := annotationsOnly(t, req.Object.Raw, patch)
				if !only {
					t.Errorf("the patch changes more than the annotations: %v", resp.Patches)
				}
				if diff := cmp.Diff(decisionAnnotations, slices.Sorted(maps.Keys(ann))); diff != "" {
					t.Errorf("annotations added (-want,+got):\n%s", diff)
				}
			}
		})
	}
}

// The apiserver sends a pod again after other webhooks changed it
// (reinvocationPolicy: IfNeeded): what the first pass added changes
// nothing the second time, in both modes and for kept pods alike.
func TestReinvocationChangesNothing(t *testing.T) {
	for name, tc := range map[string]struct {
		fleet string
		pod   *corev1.Pod
	}{
		"enforce, translated": {"l4-inference", l4Pod("prod")},
		"audit":               {"l4-inference", l4Pod("staging")},
		"kept":                {"legacy-gfd", l4Pod("prod")},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.fleet, nil)
			req := request(t, admissionv1.Create, tc.pod, false)
			first := applied(t, req, f.handler.Handle(t.Context(), req))
			again := request(t, admissionv1.Create, first, false)
			if resp := f.handler.Handle(t.Context(), again); len(resp.Patches) > 0 {
				t.Errorf("second pass patched %v", resp.Patches)
			}
		})
	}
}

// mutated: the response changes the pod beyond the decision's
// annotations (a translation).
func mutated(t testing.TB, req admission.Request, resp admission.Response) bool {
	t.Helper()
	if len(resp.Patches) == 0 {
		return false
	}
	_, only := annotationsOnly(t, req.Object.Raw, mustJSON(t, resp.Patches))
	return !only
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
