package webhook

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// podRequest is a request for a core/v1 Pod whose object is raw.
func podRequest(raw []byte) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind:   metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Object: k8sruntime.RawExtension{Raw: raw},
	}}
}

// seedPods are the pods of the handler's fuzz seeds that are reviews, as
// JSON.
func seedPods(f *testing.F) [][]byte {
	f.Helper()
	var out [][]byte
	for _, body := range fuzzSeeds(f) {
		var review admissionv1.AdmissionReview
		if json.Unmarshal(body, &review) != nil || review.Request == nil {
			continue // a seed of a review that does not decode
		}
		out = append(out, review.Request.Object.Raw)
	}
	return out
}

// FuzzDecodePodAsTheScheme: every pod the scheme's decoder decodes from a
// request for a v1 Pod, decodePod decodes to the same pod; what it does
// not decode, decodePod rejects too or decodes as a v1 Pod, never as
// another kind.
func FuzzDecodePodAsTheScheme(f *testing.F) {
	for _, raw := range seedPods(f) {
		f.Add(raw)
	}
	f.Add([]byte(` {"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","labels":{"x":"1"}},"spec":{"priority":7}}`))
	f.Add([]byte(`{"metadata":{"Name":"case"},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"2"}}}]}}`))
	f.Add([]byte(`{"kind":"Pod","spec":{"containers":"not a list"}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":2}}`))
	decoder := admission.NewDecoder(clientgoscheme.Scheme)
	f.Fuzz(func(t *testing.T, raw []byte) {
		req := podRequest(raw)
		want, got := &corev1.Pod{}, &corev1.Pod{}
		wantErr := decoder.Decode(req, want)
		gotErr := decodePod(decoder, req, got)
		if wantErr != nil {
			// The scheme's decoder rejects it: decodePod may take it
			// (a JSON the scheme's sniffing of the kind fails on), but
			// never as another kind.
			if gotErr == nil && (got.Kind != "" && got.Kind != "Pod" || got.APIVersion != "" && got.APIVersion != "v1") {
				t.Fatalf("decodePod took %q as a %s %s", raw, got.APIVersion, got.Kind)
			}
			return
		}
		if gotErr != nil {
			t.Fatalf("the scheme decodes %q, decodePod fails: %v", raw, gotErr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("decoded %q (-scheme,+decodePod):\n%s", raw, diff)
		}
	})
}

func TestDecodePodLeavesOtherKindsToTheScheme(t *testing.T) {
	req := podRequest([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}`))
	req.Kind.Kind = "Service"
	var called bool
	d := decoderFunc(func(admission.Request, k8sruntime.Object) error { called = true; return nil })
	if err := decodePod(d, req, &corev1.Pod{}); err != nil || !called {
		t.Errorf("a request for a Service: err %v, the scheme's decoder called %v; want it called", err, called)
	}
	called = false
	if err := decodePod(d, podRequest([]byte(`{"metadata":{"name":"a"}}`)), &corev1.Pod{}); err != nil || called {
		t.Errorf("a request for a Pod: err %v, the scheme's decoder called %v; want it decoded here", err, called)
	}
}

// decoderFunc is an admission.Decoder whose Decode is the function.
type decoderFunc func(admission.Request, k8sruntime.Object) error

func (f decoderFunc) Decode(req admission.Request, into k8sruntime.Object) error { return f(req, into) }

func (f decoderFunc) DecodeRaw(raw k8sruntime.RawExtension, into k8sruntime.Object) error {
	return f(admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Object: raw}}, into)
}

// BenchmarkDecodePod: a translated pod's request decoded by decodePod,
// against the scheme's decoder (the baseline). It fails when decodePod
// hands the request to the scheme's decoder.
func BenchmarkDecodePod(b *testing.B) {
	raw, err := json.Marshal(l4Pod("prod"))
	if err != nil {
		b.Fatal(err)
	}
	req := podRequest(raw)
	decoder := admission.NewDecoder(clientgoscheme.Scheme)
	b.Run("scheme", func(b *testing.B) {
		for b.Loop() {
			if err := decoder.Decode(req, &corev1.Pod{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decodePod", func(b *testing.B) {
		// The pod must be decoded here: a request that fell back to the
		// scheme's decoder would measure the baseline twice.
		fallback := decoderFunc(func(admission.Request, k8sruntime.Object) error {
			b.Fatal("decodePod fell back to the scheme's decoder for a v1 Pod")
			return nil
		})
		for b.Loop() {
			if err := decodePod(fallback, req, &corev1.Pod{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
