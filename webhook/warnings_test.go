package webhook

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/metrics"
	"github.com/claimbridge/claimbridge/reason"
)

// warningCode is how every warning starts: the prefix of the mode, then a
// reason code.
var warningCode = regexp.MustCompile(`^claimbridge( \(audit\))?: ([A-Z][A-Za-z]+)[: ]`)

// checkWarnings: every warning starts with the prefix and a code of the
// catalog, is one line of valid UTF-8 without control characters and at
// most explain.MaxWarningRunes long; together they stay within explain.MaxWarningsRunes.
func checkWarnings(t testing.TB, ws []string) {
	t.Helper()
	total := 0
	for _, w := range ws {
		total += utf8.RuneCountInString(w)
		if utf8.RuneCountInString(w) > explain.MaxWarningRunes || !utf8.ValidString(w) || strings.ContainsFunc(w, unicode.IsControl) {
			t.Errorf("warning is not one line of at most %d runes of UTF-8: %q", explain.MaxWarningRunes, w)
		}
		m := warningCode.FindStringSubmatch(w)
		if m == nil {
			t.Errorf("warning does not start with the prefix and a reason code: %q", w)
			continue
		}
		if _, ok := explain.Reasons().Lookup(reason.Code(m[2])); !ok {
			t.Errorf("warning starts with %q, not a code of the catalog: %q", m[2], w)
		}
	}
	if total > explain.MaxWarningsRunes {
		t.Errorf("warnings of one pod add up to %d runes, more than %d: %q", total, explain.MaxWarningsRunes, ws)
	}
}

// throughAPIServer passes warnings through kube-apiserver's own warning
// recorder (the filter every request goes through) as the mutating
// dispatcher does, and returns what a client reads in the Warning headers.
func throughAPIServer(t testing.TB, ws []string) []string {
	t.Helper()
	h := filters.WithWarningRecorder(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, text := range ws {
			warning.AddWarning(r.Context(), "", text)
		}
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/prod/pods", nil))
	parsed, errs := utilnet.ParseWarningHeaders(rec.Header().Values("Warning"))
	if len(errs) > 0 {
		t.Fatalf("parse Warning headers: %v", errs)
	}
	var out []string
	for _, p := range parsed {
		out = append(out, p.Text)
	}
	return out
}

// corpusPods are the pods of the handler's tests and fuzz corpus, and
// pods made to produce long warnings: the example and golden pods, hostile
// label values, pods every rule keeps, pods no node serves.
func corpusPods(t *testing.T) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for _, body := range fuzzSeeds(&testing.F{}) {
		req, err := decodeReview(body)
		if err != nil || req.Object.Raw == nil {
			continue
		}
		p := &corev1.Pod{}
		if err := admission.NewDecoder(clientgoscheme.Scheme).DecodeRaw(req.Object, p); err == nil && len(p.Spec.Containers) > 0 {
			pods = append(pods, p)
		}
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzHandlerDecode", "*"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// go test fuzz v1 files: the body is the quoted []byte on the second line.
		lines := strings.SplitN(string(data), "\n", 2)
		if len(lines) < 2 {
			continue
		}
		raw, ok := strings.CutPrefix(strings.TrimSpace(lines[1]), "[]byte(")
		if !ok {
			continue
		}
		if body, err := strconv.Unquote(strings.TrimSuffix(raw, ")")); err == nil {
			if req, err := decodeReview([]byte(body)); err == nil {
				p := &corev1.Pod{}
				if err := admission.NewDecoder(clientgoscheme.Scheme).DecodeRaw(req.Object, p); err == nil && len(p.Spec.Containers) > 0 {
					pods = append(pods, p)
				}
			}
		}
	}
	long := strings.Repeat("日本", 300)
	pods = append(pods,
		builders.MakePod("long-label", "prod").Container("c").Limit("nvidia.com/gpu", "1").NodeSelector("nvidia.com/gpu.product", long).Obj(),
		builders.MakePod("long-key", "prod").Container("c").Limit("nvidia.com/gpu", "1").NodeSelector("example.com/"+strings.Repeat("k", 60), "v").Obj(),
		builders.MakePod("newline", "prod").Container("c").Limit("nvidia.com/gpu", "1").NodeSelector("nvidia.com/gpu.product", "L4\nX-Injected: 1\x00").Obj(),
		builders.MakePod("shared", "prod").Container("c").Limit("nvidia.com/gpu.shared", "1").Obj(),
		builders.MakePod("eight", "prod").Container("c").Limit("nvidia.com/gpu", "8").SchedulerName("volcano").Obj(),
		builders.MakePod("bound", "prod").Container("c").Limit("nvidia.com/gpu", "1").NodeName("a100-0").Obj(),
		builders.MakePod("negative", "prod").Container("c").Limit("nvidia.com/gpu", "-1").Obj(),
		builders.MakePod("hami", "prod").Container("c").Limit("nvidia.com/gpu", "1").Limit("nvidia.com/gpumem", "4000").Obj(),
		builders.MakePod("nic", "prod").Container("c").Limit("nvidia.com/gpu", "2").Limit("vpc.amazonaws.com/efa", "1").Obj(),
		builders.MakePod("priority", "prod").Container("c").Limit("nvidia.com/gpu", "1").Priority(1000).Obj(),
	)
	return pods
}

// TestEveryWarningFitsTheAPIServersLimitAndLeadsWithItsCode: over the
// corpus, on fleets that translate, keep and cannot serve, in both modes,
// every admission warning starts with the prefix and its reason code,
// fits kube-apiserver's limits, and reaches the client whole through the
// apiserver's warning recorder.
func TestEveryWarningFitsTheAPIServersLimitAndLeadsWithItsCode(t *testing.T) {
	pods := corpusPods(t)
	if len(pods) < 30 {
		t.Fatalf("a corpus of %d pods, want the examples and golden pods too", len(pods))
	}
	lines := 0
	for _, fleet := range []string{"mixed", "legacy-gfd", "l4-inference"} {
		f := newFixture(t, fleet, func(f *fixture) {
			f.handler.Metrics = metrics.NewMetrics()
			if err := f.handler.Metrics.RegisterWith(prometheus.NewRegistry()); err != nil {
				t.Fatal(err)
			}
			f.handler.Templates = APITemplates{Client: fake.NewClientset()}
			f.inv.Features = feasibility.DefaultFeatures()
		})
		for _, ns := range []string{"prod", "staging"} {
			for _, p := range pods {
				p := p.DeepCopy()
				p.Namespace = ns
				resp := f.handler.Handle(t.Context(), request(t, "CREATE", p, false))
				checkWarnings(t, resp.Warnings)
				if got := throughAPIServer(t, resp.Warnings); !cmp.Equal(resp.Warnings, got, cmp.Comparer(func(a, b []string) bool {
					return strings.Join(a, "\x00") == strings.Join(b, "\x00")
				})) {
					t.Errorf("%s/%s on %s: the apiserver passes on %q, not %q", ns, p.Name, fleet, got, resp.Warnings)
				}
				lines += len(resp.Warnings)
			}
		}
	}
	if lines < 100 {
		t.Errorf("only %d warnings over the corpus: the test checks too little", lines)
	}
}
