package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// httpServed runs the webhook behind a real HTTP server, recovering panics
// as the server does.
func httpServed(t *testing.T) (*served, string) {
	t.Helper()
	s := newServed(t, "mixed", true)
	mux := http.NewServeMux()
	mux.Handle(Path, s.hook)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return s, srv.URL + Path
}

// postHTTP posts body and decodes the AdmissionReview that comes back.
func postHTTP(t *testing.T, url, contentType string, body []byte) *admissionv1.AdmissionReview {
	t.Helper()
	resp, err := http.Post(url, contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %s, want 200 with an AdmissionReview: %s", resp.Status, out)
	}
	var ar admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &ar); err != nil || ar.Response == nil {
		t.Fatalf("not an AdmissionReview with a response (%v): %.300s", err, out)
	}
	return &ar
}

// gpuPod asks for count nvidia.com/gpu in one container.
func gpuPod(count string) *corev1.Pod {
	return builders.MakePod("p", "prod").Container("c").Limit("nvidia.com/gpu", count).Obj()
}

func TestBadInputGetsAClearAnswerAndTheServerKeepsServing(t *testing.T) {
	l4 := reviewOf(t, "uid-1", "prod", l4Pod("prod"))
	withKind := func(body []byte, kind string) []byte {
		return bytes.Replace(body, []byte(`"kind":{"group":"","version":"v1","kind":"Pod"}`), []byte(kind), 1)
	}
	manyContainers := builders.MakePod("many", "prod")
	for i := range 1000 {
		manyContainers.Container(fmt.Sprintf("c%d", i)).Limit("nvidia.com/gpu", "1")
	}
	big := l4Pod("prod")
	big.Annotations = map[string]string{"example.com/blob": strings.Repeat("x", 3<<20)}
	deployment := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"}, "spec": map[string]any{"replicas": 1}}

	cases := map[string]struct {
		body        []byte
		contentType string // default application/json
		wantCode    int32  // of the response's status; 200 when allowed
		wantVersion string // of the AdmissionReview that comes back; default admission.k8s.io/v1
		wantPatched bool
		wantMessage string   // substring of the status message
		wantWarning []string // substrings, in order
	}{
		"a body that is not JSON is refused as a bad request": {
			body: []byte("this is not JSON"), wantCode: 400, wantMessage: "couldn't get version/kind", wantVersion: "-",
		},
		"an empty body is refused as a bad request": {
			body: []byte{}, wantCode: 400, wantMessage: "request body is empty", wantVersion: "-",
		},
		"truncated JSON is refused as a bad request": {
			body: l4[:len(l4)/2], wantCode: 400, wantMessage: "unexpected end of JSON", wantVersion: "-",
		},
		"a JSON array is refused as a bad request": {
			body: []byte(`[{"kind":"AdmissionReview"}]`), wantCode: 400, wantMessage: "cannot unmarshal array", wantVersion: "-",
		},
		"a body of another content type is refused as a bad request": {
			body: l4, contentType: "text/plain", wantCode: 400, wantMessage: "expected application/json", wantVersion: "-",
		},
		"a review over 7 MiB is refused as too large": {
			body: reviewOf(t, "uid-big", "prod", map[string]string{"blob": strings.Repeat("x", 8<<20)}), wantCode: 413,
			wantMessage: "request entity is too large", wantVersion: "-",
		},
		"a 3 MiB pod, larger than the API stores, is still translated": {
			body: reviewOf(t, "uid-3m", "prod", big), wantCode: 200, wantPatched: true,
			wantWarning: []string{"claimbridge: Translated: uses ResourceClaimTemplate"},
		},
		"a Deployment is not mutated and the message says it is not a pod": {
			body: withKind(reviewOf(t, "uid-d", "prod", deployment), `"kind":{"group":"apps","version":"v1","kind":"Deployment"}`), wantCode: 200,
			wantMessage: "not a v1 Pod (apps/v1, Kind=Deployment)",
		},
		"a Pod kind of group apps is not a pod": {
			body: withKind(l4, `"kind":{"group":"apps","version":"v1","kind":"Pod"}`), wantCode: 200,
			wantMessage: "not a v1 Pod (apps/v1, Kind=Pod)",
		},
		"a Pod of another version is not mutated": {
			body: withKind(l4, `"kind":{"group":"","version":"v2","kind":"Pod"}`), wantCode: 200,
			wantMessage: "not a v1 Pod (/v2, Kind=Pod)",
		},
		"a v1beta1 review is answered in v1beta1 and translated": {
			body: bytes.Replace(l4, []byte(`"apiVersion":"admission.k8s.io/v1"`), []byte(`"apiVersion":"admission.k8s.io/v1beta1"`), 1), wantCode: 200,
			wantVersion: "admission.k8s.io/v1beta1", wantPatched: true, wantWarning: []string{"uses ResourceClaimTemplate"},
		},
		"a Deployment inside a pod review is admitted with a decode warning": {
			body: reviewOf(t, "uid-x", "prod", deployment), wantCode: 200,
			wantMessage: "cannot decode the pod", wantWarning: []string{"cannot decode the pod: unable to decode apps/v1, Kind=Deployment into *v1.Pod"},
		},
		"a review without an object is admitted with a decode warning": {
			body: reviewRaw(t, "uid-n", "prod", nil), wantCode: 200, wantWarning: []string{"cannot decode the pod: there is no content to decode"},
		},
		"a count of 0 asks for no device: skipped, the message says why": {
			body: reviewOf(t, "uid-0", "prod", gpuPod("0")), wantCode: 200, wantMessage: string(translate.ReasonNoLegacyResources),
		},
		"a negative count is kept as submitted with the reason": {
			body: reviewOf(t, "uid-neg", "prod", gpuPod("-1")), wantCode: 200,
			wantWarning: []string{"InvalidQuantity: kept as submitted; ask for whole devices: extended resources take integer quantities; spec.containers[0].resources.limits[nvidia.com/gpu]: nvidia.com/gpu -1 is negative"},
		},
		"a fractional count is kept as submitted with the reason": {
			body: reviewOf(t, "uid-half", "prod", gpuPod("500m")), wantCode: 200,
			wantWarning: []string{"InvalidQuantity: kept as submitted; ask for whole devices: extended resources take integer quantities; spec.containers[0].resources.limits[nvidia.com/gpu]: nvidia.com/gpu 500m is not a whole number of devices"},
		},
		"a million devices are kept as submitted with the reason": {
			body: reviewOf(t, "uid-m", "prod", gpuPod("1000000")), wantCode: 200,
			wantWarning: []string{"TooManyDevices: kept as submitted; split the pod or ask for fewer devices per container: the request is over DRA's per-request maximum; spec.containers[0].resources.limits[nvidia.com/gpu]: nvidia.com/gpu 1000000 is"},
		},
		"1,000 containers with a GPU each are kept as submitted with the reason": {
			body: reviewOf(t, "uid-1000", "prod", manyContainers.Obj()), wantCode: 200,
			wantWarning: []string{"TooManyRequests: kept as submitted; use fewer containers with devices or fewer device kinds: the claim would be over DRA's request limit; the pod needs 1000 device requests, more than the 32 a claim may have"},
		},
	}
	s, url := httpServed(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			contentType := tc.contentType
			if contentType == "" {
				contentType = "application/json"
			}
			ar := postHTTP(t, url, contentType, tc.body)
			resp := ar.Response
			code := int32(0)
			if resp.Result != nil {
				code = resp.Result.Code
			}
			if code != tc.wantCode || resp.Allowed != (tc.wantCode == 200) {
				t.Errorf("allowed %v, code %d, want code %d (result %v)", resp.Allowed, code, tc.wantCode, resp.Result)
			}
			wantVersion := tc.wantVersion
			switch wantVersion {
			case "":
				wantVersion = "admission.k8s.io/v1"
			case "-": // the review did not decode: a bare response
				wantVersion = ""
			}
			if ar.APIVersion != wantVersion {
				t.Errorf("answered with apiVersion %q, want %q", ar.APIVersion, wantVersion)
			}
			// A pod kept as submitted carries its decision: a patch of the
			// annotations only.
			patched := len(resp.Patch) > 0
			if patched && tc.body != nil {
				if req, err := decodeReview(tc.body); err == nil {
					if _, only := annotationsOnly(t, req.Object.Raw, resp.Patch); only {
						patched = false
					}
				}
			}
			if got := patched; got != tc.wantPatched {
				t.Errorf("patched = %v, want %v (warnings %q)", got, tc.wantPatched, resp.Warnings)
			}
			if tc.wantMessage != "" && (resp.Result == nil || !strings.Contains(resp.Result.Message, tc.wantMessage)) {
				t.Errorf("message %q, want it to contain %q", resp.Result.Message, tc.wantMessage)
			}
			for i, w := range tc.wantWarning {
				if i >= len(resp.Warnings) || !strings.Contains(resp.Warnings[i], w) {
					t.Errorf("warning %d: want it to contain %q, got %q", i, w, resp.Warnings)
				}
			}
			checkWarningsAreShortLines(t, resp.Warnings)
			checkStillServing(t, s, url)
		})
	}
}

// checkStillServing: a good request after a bad one is translated.
func checkStillServing(t *testing.T, s *served, url string) {
	t.Helper()
	want, err := translate.Pod(translate.Input{Pod: l4Pod("prod"), Policy: s.handler.Policy(), Classes: s.inv.Classes()})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(l4Pod("prod"))
	if err != nil {
		t.Fatal(err)
	}
	resp := postHTTP(t, url, "application/json", reviewRaw(t, "uid-good", "prod", raw)).Response
	if !resp.Allowed || len(resp.Patch) == 0 {
		t.Fatalf("a good request afterwards: allowed %v, patch %q, result %v", resp.Allowed, resp.Patch, resp.Result)
	}
	_, got := patchedPod(t, raw, resp)
	if diff := cmp.Diff(want.Pod.Spec, got.Spec); diff != "" {
		t.Errorf("a good request afterwards is not translated as before (-want,+got):\n%s", diff)
	}
}

func checkWarningsAreShortLines(t *testing.T, ws []string) {
	t.Helper()
	checkWarnings(t, ws)
}

// Label values are strings the pod's author chose: they end up in CEL and in
// warnings, so quotes, backslashes, newlines and unicode must neither break the
// generated selectors nor the one-line warnings.
func TestHostileLabelValuesGiveCompilingSelectorsAndOneLineWarnings(t *testing.T) {
	values := map[string]string{
		"a double quote":             `NVIDIA-L4"`,
		"a CEL injection attempt":    `" || true || "`,
		"a backslash":                `NVIDIA\L4`,
		"a trailing backslash":       `NVIDIA-L4\`,
		"a newline":                  "NVIDIA-L4\nX-Injected: 1",
		"a carriage return":          "NVIDIA-L4\r",
		"unicode":                    "NVIDIA-L4™-ü-日本",
		"a right-to-left override":   "NVIDIA-\u202eL4",
		"invalid UTF-8":              "NVIDIA-\xff\xfe",
		"a NUL byte":                 "NVIDIA-L4\x00",
		"a very long value":          strings.Repeat("A", 4096),
		"a very long unicode value":  strings.Repeat("日", 400),
		"single quotes and a dollar": `'${x}'`,
	}
	keys := map[string]string{ // label key → the reason a wrong value gets
		"nvidia.com/gpu.product":              "Infeasible",
		"nvidia.com/gpu.memory":               "NodeLabelUntranslatable",
		"nvidia.com/cuda.driver-version.full": "NodeLabelUntranslatable",
	}
	s, url := httpServed(t)
	for name, v := range values {
		for key, wantReason := range keys {
			t.Run(name+" in "+key, func(t *testing.T) {
				pod := builders.MakePod("p", "prod").Container("c").Limit("nvidia.com/gpu", "1").NodeSelector(key, v).Obj()
				res, err := translate.Pod(translate.Input{Pod: pod, Policy: s.handler.Policy()})
				if err != nil {
					t.Fatal(err)
				}
				if res.Template != nil {
					for _, r := range res.Template.Spec.Spec.Devices.Requests {
						subs := r.FirstAvailable
						if r.Exactly != nil {
							for _, sel := range r.Exactly.Selectors {
								if err := celgen.CheckSelector(sel.CEL.Expression); err != nil {
									t.Errorf("request %s: %v", r.Name, err)
								}
							}
						}
						for _, sub := range subs {
							for _, sel := range sub.Selectors {
								if err := celgen.CheckSelector(sel.CEL.Expression); err != nil {
									t.Errorf("request %s/%s: %v", r.Name, sub.Name, err)
								}
							}
						}
					}
				}
				resp := postHTTP(t, url, "application/json", reviewOf(t, "uid-l", "prod", pod)).Response
				if _, only := annotationsOnly(t, mustJSON(t, pod), resp.Patch); !resp.Allowed || (len(resp.Patch) > 0 && !only) {
					t.Errorf("allowed %v, patched %v: want admitted as submitted", resp.Allowed, len(resp.Patch) > 0)
				}
				if len(resp.Warnings) == 0 || !strings.HasPrefix(resp.Warnings[0], "claimbridge: "+wantReason+": kept as submitted; ") {
					t.Errorf("warnings %q, want the first to say %q", resp.Warnings, wantReason+": kept as submitted")
				}
				checkWarningsAreShortLines(t, resp.Warnings)
			})
		}
	}
	checkStillServing(t, s, url)
}

// Conflicting rules in a policy file are either rejected by LoadPolicy with
// the field that is wrong, or resolved the documented way with a reason.
func TestConflictingPolicyRules(t *testing.T) {
	const head = "apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nmetadata: {name: p}\nspec:\n"
	cases := map[string]struct {
		policy      string
		pod         *corev1.Pod
		wantErr     []string // substrings of the error
		wantClasses []string // device classes of the template's request, in order
		wantReason  string   // substring of a reason of the translation
	}{
		"an alignment rule naming an unknown family is rejected": {
			policy:  head + "  profiles: [nvidia]\n  alignment:\n  - {name: a, families: [nvidia-gpu, no-such-family], attribute: resource.kubernetes.io/pcieRoot}\n",
			wantErr: []string{`spec.alignment[0].families[1]: Not found: "no-such-family"`},
		},
		"a label rule for a family no resource rule defines is rejected": {
			policy:  head + "  profiles: [nvidia]\n  nodeLabels:\n  - {key: example.com/x, families: [ghost], conversion: String, attribute: example.com/x}\n",
			wantErr: []string{`spec.nodeLabels[0].families[0]: Not found: "ghost"`},
		},
		"a fallback to a resource no rule maps is rejected": {
			policy:  head + "  profiles: [nvidia]\n  fallbacks:\n  - name: f\n    match: {resource: nvidia.com/gpu}\n    alternatives: [{resource: example.com/unmapped}]\n",
			wantErr: []string{`spec.fallbacks[0].alternatives[0].resource: Not found: "example.com/unmapped"`},
		},
		"a fallback matching a resource no rule maps is rejected": {
			policy:  head + "  profiles: [nvidia]\n  fallbacks:\n  - name: f\n    match: {resource: example.com/unmapped}\n    alternatives: [{countMultiplier: 2}]\n",
			wantErr: []string{`spec.fallbacks[0].match.resource: Not found: "example.com/unmapped"`},
		},
		"an alignment rule naming one family twice is rejected": {
			policy:  head + "  profiles: [nvidia]\n  alignment:\n  - {name: a, families: [nvidia-gpu, nvidia-gpu], attribute: resource.kubernetes.io/pcieRoot}\n",
			wantErr: []string{`spec.alignment[0].families[1]: Duplicate value: "nvidia-gpu"`},
		},
		"every wrong field is named, not only the first": {
			policy: head + "  profiles: [nvidia]\n  alignment:\n  - {name: a, families: [ghost], attribute: resource.kubernetes.io/pcieRoot}\n" +
				"  nodeLabels:\n  - {key: example.com/x, families: [phantom], conversion: String, attribute: example.com/x}\n",
			wantErr: []string{`spec.nodeLabels[0].families[0]: Not found: "phantom"`, `spec.alignment[0].families[0]: Not found: "ghost"`},
		},
		"two rules for one resource name: the later one wins, as documented": {
			policy: head + "  resources:\n  - {name: nvidia.com/gpu, family: first, deviceClassName: first.example.com}\n" +
				"  - {name: nvidia.com/gpu, family: second, deviceClassName: second.example.com}\n",
			pod:         gpuPod("1"),
			wantClasses: []string{"second.example.com"},
		},
		"a fallback contradicting a label rule loses its alternative, with the reason": {
			// The fallback asks for a memory size the MiB rule cannot read.
			policy: head + "  profiles: [nvidia]\n  fallbacks:\n  - name: more-memory\n    match: {resource: nvidia.com/gpu, nodeSelector: {nvidia.com/gpu.product: NVIDIA-L4}}\n" +
				"    alternatives: [{nodeSelector: {nvidia.com/gpu.memory: lots}}]\n",
			pod:         l4Pod("prod"),
			wantClasses: []string{"gpu.nvidia.com"},
			wantReason:  "fallback more-memory: alternative nvidia.com/gpu left out",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := translate.LoadPolicy([]byte(tc.policy))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("policy accepted, want an error containing %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q, want it to contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("policy rejected: %v", err)
			}
			res, err := translate.Pod(translate.Input{Pod: tc.pod, Policy: p})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != reason.OutcomeTranslate {
				t.Fatalf("outcome %s, want %s: %v", res.Outcome, reason.OutcomeTranslate, res.Reasons)
			}
			var classes []string
			for _, r := range res.Template.Spec.Spec.Devices.Requests {
				if r.Exactly != nil {
					classes = append(classes, r.Exactly.DeviceClassName)
				}
				for _, sub := range r.FirstAvailable {
					classes = append(classes, sub.DeviceClassName)
				}
			}
			if diff := cmp.Diff(tc.wantClasses, classes); diff != "" {
				t.Errorf("device classes (-want,+got):\n%s", diff)
			}
			if tc.wantReason != "" {
				found := false
				for _, r := range res.Reasons {
					found = found || strings.Contains(r.String(), tc.wantReason)
				}
				if !found {
					t.Errorf("reasons %v, want one containing %q", res.Reasons, tc.wantReason)
				}
			}
		})
	}
}

// An unknown namespace, an UPDATE and a subresource are skipped with a
// message that says why, and never reach the translator.
func TestRequestsThatAreNotPodCreatesSaySo(t *testing.T) {
	_, url := httpServed(t)
	review := func(mutate func(*admissionv1.AdmissionRequest)) []byte {
		raw, err := json.Marshal(l4Pod("prod"))
		if err != nil {
			t.Fatal(err)
		}
		r := admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "prod", Operation: admissionv1.Create}
		r.Object.Raw = raw
		mutate(&r)
		body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &r})
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	cases := map[string]struct {
		mutate      func(*admissionv1.AdmissionRequest)
		wantMessage string
	}{
		"an UPDATE":                {func(r *admissionv1.AdmissionRequest) { r.Operation = admissionv1.Update }, "operation UPDATE"},
		"a DELETE without object":  {func(r *admissionv1.AdmissionRequest) { r.Operation, r.Object.Raw = admissionv1.Delete, nil }, "operation DELETE"},
		"the binding subresource":  {func(r *admissionv1.AdmissionRequest) { r.SubResource = "binding" }, "not a v1 Pod (/v1, Kind=Pod) binding"},
		"a namespace unknown here": {func(r *admissionv1.AdmissionRequest) { r.Namespace = "nowhere" }, "namespace nowhere is not opted in"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp := postHTTP(t, url, "application/json", review(tc.mutate)).Response
			if !resp.Allowed || len(resp.Patch) > 0 || len(resp.Warnings) > 0 {
				t.Errorf("allowed %v, patch %q, warnings %q: want admitted untouched", resp.Allowed, resp.Patch, resp.Warnings)
			}
			if resp.Result == nil || !strings.Contains(resp.Result.Message, tc.wantMessage) {
				t.Errorf("message %v, want it to contain %q", resp.Result, tc.wantMessage)
			}
		})
	}
}
