package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/informertest"
	"github.com/claimbridge/claimbridge/internal/testing/staticinventory"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/livereport"
	"github.com/claimbridge/claimbridge/metrics"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// served is the pod handler behind controller-runtime's admission.Webhook,
// the way the server registers it, answering from a fixed fleet.
type served struct {
	hook    *admission.Webhook
	handler *PodHandler
	inv     *staticinventory.StaticInventory
}

// newServed wires the handler like the server does (and like newFixture),
// for a fuzz target or a test. recoverPanic is the webhook's setting: the
// server recovers; the fuzz target lets a panic crash the input.
func newServed(tb testing.TB, fleet string, recoverPanic bool) *served {
	tb.Helper()
	m := metrics.NewMetrics()
	if err := m.RegisterWith(prometheus.NewRegistry()); err != nil {
		tb.Fatal(err)
	}
	inv := &staticinventory.StaticInventory{
		Namespaces: namespaces(map[string]api.Mode{"prod": api.ModeEnforce, "staging": api.ModeAudit, "dev": api.ModeOff, "claimbridge": api.ModeEnforce}),
		Features:   feasibility.DefaultFeatures(),
		Fleet:      informertest.ExampleFleet(tb, fleet),
	}
	h := &PodHandler{
		Decoder:   admission.NewDecoder(clientgoscheme.Scheme),
		Policy:    translate.DefaultPolicy,
		Inventory: inv,
		Checker:   feasibility.NewChecker(feasibility.Options{}),
		Templates: APITemplates{Client: fake.NewClientset()},
		Namespace: "claimbridge",
		Report:    &livereport.ReportStore{},
		Metrics:   m,
		Recent:    &inventory.RecentTemplates{},
		Now:       func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) },
	}
	return &served{hook: &admission.Webhook{Handler: h, RecoverPanic: &recoverPanic}, handler: h, inv: inv}
}

// post sends body to the webhook's ServeHTTP as kube-apiserver does and
// returns the HTTP status and the raw response.
func (s *served) post(body []byte) (int, []byte) {
	req := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.hook.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// review posts body and decodes the answer (see response).
func (s *served) review(tb testing.TB, body []byte) *admissionv1.AdmissionResponse {
	tb.Helper()
	status, out := s.post(body)
	return response(tb, status, out)
}

// anyVersionReview decodes v1 and v1beta1 AdmissionReviews alike, the way
// controller-runtime's ServeHTTP does (an unregistered type whose GVK is set
// to v1), so that the fuzz target knows which bodies are decodable.
type anyVersionReview struct{ admissionv1.AdmissionReview }

func (r *anyVersionReview) DeepCopyObject() k8sruntime.Object {
	return &anyVersionReview{*r.DeepCopy()}
}

var reviewCodecs = func() serializer.CodecFactory {
	s := k8sruntime.NewScheme()
	if err := admissionv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := admissionv1beta1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s)
}()

func decodeReview(body []byte) (*admissionv1.AdmissionRequest, error) {
	ar := anyVersionReview{}
	ar.Request = &admissionv1.AdmissionRequest{}
	ar.SetGroupVersionKind(admissionv1.SchemeGroupVersion.WithKind("AdmissionReview"))
	if _, _, err := reviewCodecs.UniversalDeserializer().Decode(body, nil, &ar); err != nil {
		return nil, err
	}
	return ar.Request, nil
}

// reviewOf is the AdmissionReview kube-apiserver sends for creating pod.
func reviewOf(tb testing.TB, uid, ns string, pod any) []byte {
	tb.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		tb.Fatal(err)
	}
	return reviewRaw(tb, uid, ns, raw)
}

func reviewRaw(tb testing.TB, uid, ns string, raw []byte) []byte {
	tb.Helper()
	dryRun := false
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID(uid),
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: ns,
			Operation: admissionv1.Create,
			DryRun:    &dryRun,
			Object:    k8sruntime.RawExtension{Raw: raw},
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// response decodes the webhook's answer; it must always be an
// AdmissionReview with a response.
func response(tb testing.TB, status int, body []byte) *admissionv1.AdmissionResponse {
	tb.Helper()
	if status != http.StatusOK {
		tb.Fatalf("HTTP status %d, want 200 with an AdmissionReview: %s", status, body)
	}
	var ar admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &ar); err != nil {
		tb.Fatalf("response is not an AdmissionReview: %v: %s", err, body)
	}
	if ar.Response == nil {
		tb.Fatalf("AdmissionReview without a response: %s", body)
	}
	return ar.Response
}

// patchedPod applies a response's JSON patch to the request's object and
// decodes the result.
func patchedPod(tb testing.TB, raw []byte, resp *admissionv1.AdmissionResponse) ([]byte, *corev1.Pod) {
	tb.Helper()
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		tb.Fatalf("patch type %v, want JSONPatch", resp.PatchType)
	}
	p, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		tb.Fatalf("decode patch: %v: %s", err, resp.Patch)
	}
	out, err := p.Apply(raw)
	if err != nil {
		tb.Fatalf("apply patch: %v", err)
	}
	pod := &corev1.Pod{}
	if err := admission.NewDecoder(clientgoscheme.Scheme).DecodeRaw(k8sruntime.RawExtension{Raw: out}, pod); err != nil {
		tb.Fatalf("patched object is not a pod: %v: %s", err, out)
	}
	return out, pod
}

// checkTranslatedPod checks what the API would reject or a device plugin
// would still serve, on a pod the webhook patched: want is the translation of
// the submitted pod.
func checkTranslatedPod(tb testing.TB, in, got *corev1.Pod, want *translate.Result, policy *translate.Policy) {
	tb.Helper()
	if want.Outcome != reason.OutcomeTranslate {
		tb.Fatalf("patched, but the translation's outcome is %s", want.Outcome)
	}
	if !equality.Semantic.DeepEqual(want.Pod, got) {
		tb.Fatalf("the patched pod is not the translation (-want,+got):\n%s", cmp.Diff(want.Pod, got))
	}
	tmpl := want.Template
	if name := got.Annotations[api.AnnotationTemplate]; name != tmpl.Name {
		tb.Errorf("annotation %s = %q, want %q", api.AnnotationTemplate, name, tmpl.Name)
	}
	requests := map[string]bool{}
	for _, r := range tmpl.Spec.Spec.Devices.Requests {
		requests[r.Name] = true
		for _, sub := range r.FirstAvailable {
			for _, sel := range sub.Selectors {
				if err := celgen.CheckSelector(sel.CEL.Expression); err != nil {
					tb.Errorf("request %s/%s: %v", r.Name, sub.Name, err)
				}
			}
		}
		if r.Exactly != nil {
			for _, sel := range r.Exactly.Selectors {
				if err := celgen.CheckSelector(sel.CEL.Expression); err != nil {
					tb.Errorf("request %s: %v", r.Name, err)
				}
			}
		}
	}
	count := func(p *corev1.Pod) map[string]int {
		n := map[string]int{}
		for _, c := range p.Spec.ResourceClaims {
			n[c.Name]++
		}
		return n
	}
	before, after := count(in), count(got)
	for name, n := range after {
		if n > max(1, before[name]) {
			tb.Errorf("pod claim %q appears %d times", name, n)
		}
	}
	if after[api.ClaimName] != 1 {
		tb.Fatalf("pod claims %v, want one %q", got.Spec.ResourceClaims, api.ClaimName)
	}
	for _, pc := range got.Spec.ResourceClaims {
		if pc.Name == api.ClaimName && (pc.ResourceClaimTemplateName == nil || *pc.ResourceClaimTemplateName != tmpl.Name) {
			tb.Errorf("pod claim %s does not refer to template %s", pc.Name, tmpl.Name)
		}
	}
	check := func(kind string, list []corev1.Container) {
		for _, c := range list {
			translated := false
			for _, ref := range c.Resources.Claims {
				if ref.Name != api.ClaimName {
					continue
				}
				translated = true
				if !requests[ref.Request] {
					tb.Errorf("%s %s refers to request %q, not in template %s", kind, c.Name, ref.Request, tmpl.Name)
				}
			}
			if !translated {
				continue
			}
			for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
				for name, q := range list {
					if !q.IsZero() && mapsResource(policy, string(name)) {
						tb.Errorf("translated %s %s still asks for %s", kind, c.Name, name)
					}
				}
			}
		}
	}
	check("container", got.Spec.Containers)
	check("init container", got.Spec.InitContainers)
}

// mapsResource reports whether the policy turns the resource into a device
// request on its own (companions such as dra-cpu's cpu stay in the pod).
func mapsResource(policy *translate.Policy, name string) bool {
	for _, r := range policy.Spec().Resources {
		if r.KeepInPod || len(r.OnlyWith) > 0 {
			continue
		}
		if base, ok := strings.CutSuffix(r.Name, "*"); ok {
			if rest, ok := strings.CutPrefix(name, base); ok && rest != "" {
				return true
			}
		} else if r.Name == name {
			return true
		}
	}
	return false
}

// fuzzSeeds are reviews of the example and golden pods, a few odd ones and
// bodies that are not reviews at all.
func fuzzSeeds(f *testing.F) [][]byte {
	f.Helper()
	var seeds [][]byte
	add := func(ns string, pod any) { seeds = append(seeds, reviewOf(f, "uid-seed", ns, pod)) }
	add("prod", l4Pod("prod"))
	add("staging", l4Pod("staging"))
	add("prod", builders.MakePod("two", "prod").Container("a").Limit("nvidia.com/gpu", "2").
		Container("b").Limit("nvidia.com/gpu", "1").Limit("rdma/ib", "1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").Obj())
	add("prod", builders.MakePod("mig", "prod").Container("c").Limit("nvidia.com/mig-1g.10gb", "1").Obj())
	add("prod", builders.MakePod("tpu", "prod").Container("c").Limit("google.com/tpu", "4").
		NodeSelector("cloud.google.com/gke-tpu-accelerator", "tpu-v5-lite-podslice").NodeSelector("cloud.google.com/gke-tpu-topology", "2x2").Obj())
	add("prod", builders.MakePod("init", "prod").InitContainer("i", false).Limit("nvidia.com/gpu", "1").
		InitContainer("s", true).Limit("nvidia.com/gpu", "1").Container("c").Limit("nvidia.com/gpu", "1").Obj())
	cases, _ := filepath.Glob(filepath.Join("..", "translate", "testdata", "cases", "*.yaml"))
	for _, file := range cases {
		if strings.HasSuffix(file, ".golden.yaml") {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var c struct {
			Pod *corev1.Pod `json:"pod"`
		}
		if err := yaml.Unmarshal(data, &c); err != nil || c.Pod == nil {
			continue
		}
		c.Pod.Namespace = "prod"
		add("prod", c.Pod)
	}
	seeds = append(seeds,
		reviewRaw(f, "uid-bad", "prod", []byte(`{"spec":{"containers":7}}`)),
		[]byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"b","kind":{"version":"v1","kind":"Pod"},"namespace":"prod","operation":"CREATE","object":{"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}}`),
		[]byte(`{"request":{"uid":"x","kind":{"group":"apps","version":"v1","kind":"Deployment"},"namespace":"prod","operation":"CREATE","object":{}}}`),
		[]byte(`{"kind":"AdmissionReview"`),
		[]byte("not json"),
		[]byte(""),
	)
	return seeds
}

// FuzzHandlerDecode posts arbitrary bytes to the webhook as kube-apiserver
// posts an AdmissionReview, through controller-runtime's ServeHTTP. Always an
// AdmissionReview comes back; a review that does not decode is answered 400;
// one that decodes is allowed (claimbridge never denies), with warnings that
// lead with a reason code and fit kube-apiserver's limits (checkWarnings).
// Only the creation of a v1 Pod is patched: with its decision's annotations
// alone, or as the translation of the submitted one that passes the checks
// of checkTranslatedPod; sent again it is not patched again. testdata/fuzz
// holds the inputs of fixed bugs.
func FuzzHandlerDecode(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	s := newServed(f, "mixed", false)
	policy := s.handler.Policy()
	f.Fuzz(func(t *testing.T, body []byte) {
		resp := s.review(t, body)
		req, decodeErr := decodeReview(body)
		if decodeErr != nil {
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest || len(resp.Patch) > 0 {
				t.Fatalf("undecodable review (%v) answered %+v, want a 400 error", decodeErr, resp)
			}
			return
		}
		if !resp.Allowed {
			t.Fatalf("review denied: %+v", resp.Result)
		}
		if resp.UID != req.UID {
			t.Errorf("response UID %q, want the request's %q", resp.UID, req.UID)
		}
		for _, w := range resp.Warnings {
			if utf8.RuneCountInString(w) > explain.MaxWarningRunes || strings.ContainsAny(w, "\r\n") || !utf8.ValidString(w) {
				t.Errorf("warning is not one short line of UTF-8: %q", w)
			}
		}
		checkWarnings(t, resp.Warnings)
		if len(resp.Patch) == 0 {
			return
		}
		if req.Operation != admissionv1.Create || req.Kind != (metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}) || req.SubResource != "" {
			t.Fatalf("patched a request that is not the creation of a v1 Pod: %s %v %q", req.Operation, req.Kind, req.SubResource)
		}
		in := &corev1.Pod{}
		if err := s.handler.Decoder.DecodeRaw(req.Object, in); err != nil {
			t.Fatalf("patched a pod that does not decode: %v", err)
		}
		if in.Namespace == "" {
			in.Namespace = req.Namespace
		}
		want, err := translate.Pod(translate.Input{Pod: in, Policy: policy, Classes: s.inv.Classes(), Quotas: s.inv.Quotas(req.Namespace)})
		if err != nil {
			t.Fatal(err)
		}
		out, got := patchedPod(t, req.Object.Raw, resp)
		decided, only := annotationsOnly(t, req.Object.Raw, resp.Patch)
		switch {
		case only:
			// Audit mode, kept or skipped: only its decision is added.
			if decided[api.AnnotationDecision] == "" || decided[api.AnnotationDecision] == api.DecisionTranslated || decided[api.AnnotationReason] == "" {
				t.Fatalf("a patch of the annotations only, with decision %v", decided)
			}
		default:
			if got.Annotations[api.AnnotationDecision] != api.DecisionTranslated || got.Annotations[api.AnnotationReason] != string(translate.ReasonTranslated) {
				t.Errorf("translated pod carries decision %q reason %q", got.Annotations[api.AnnotationDecision], got.Annotations[api.AnnotationReason])
			}
			for _, k := range decisionAnnotations {
				delete(got.Annotations, k)
			}
			checkTranslatedPod(t, in, got, want, policy)
		}

		// The apiserver reinvokes the webhook with the patched pod: no change.
		again := s.review(t, reviewRaw(t, "uid-again", req.Namespace, out))
		if !again.Allowed || len(again.Patch) > 0 {
			t.Fatalf("second admission of the patched pod: allowed %v, patch %s", again.Allowed, again.Patch)
		}
	})
}
