package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

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
)

func namespaces(modes map[string]api.Mode) map[string]*corev1.Namespace {
	out := map[string]*corev1.Namespace{}
	for name, m := range modes {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if m != api.ModeOff {
			ns.Labels = map[string]string{api.LabelMode: string(m)}
		}
		out[name] = ns
	}
	return out
}

type fixture struct {
	handler *PodHandler
	client  *fake.Clientset
	metrics *metrics.Metrics
	inv     *staticinventory.StaticInventory
	store   *livereport.ReportStore
}

func newFixture(t *testing.T, fleet string, mutate func(*fixture)) *fixture {
	t.Helper()
	f := &fixture{client: fake.NewClientset(), metrics: metrics.NewMetrics(), store: &livereport.ReportStore{}}
	if err := f.metrics.RegisterWith(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	f.inv = &staticinventory.StaticInventory{
		Namespaces: namespaces(map[string]api.Mode{"prod": api.ModeEnforce, "staging": api.ModeAudit, "dev": api.ModeOff, "claimbridge": api.ModeEnforce, "kube-system": api.ModeEnforce}),
		Features:   feasibility.DefaultFeatures(),
	}
	if fleet != "" {
		f.inv.Fleet = informertest.ExampleFleet(t, fleet)
	}
	f.handler = &PodHandler{
		Decoder:   admission.NewDecoder(clientgoscheme.Scheme),
		Policy:    translate.DefaultPolicy,
		Inventory: f.inv,
		Checker:   feasibility.NewChecker(feasibility.Options{}),
		Templates: APITemplates{Client: f.client},
		Namespace: "claimbridge",
		Report:    f.store,
		Metrics:   f.metrics,
		Recent:    &inventory.RecentTemplates{},
		Now:       func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) },
	}
	if mutate != nil {
		mutate(f)
	}
	return f
}

func request(t testing.TB, op admissionv1.Operation, pod *corev1.Pod, dryRun bool) admission.Request {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "uid-1",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: pod.Namespace,
		Name:      pod.Name,
		Operation: op,
		DryRun:    &dryRun,
		Object:    k8sruntime.RawExtension{Raw: raw},
	}}
}

// l4Pod asks for one L4 GPU the GFD way; the l4-inference fleet serves it.
func l4Pod(ns string) *corev1.Pod {
	return builders.MakePod("infer", ns).Container("server").Limit("nvidia.com/gpu", "1").
		NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj()
}

// applied returns the pod the response's patch makes of the request.
func applied(t *testing.T, req admission.Request, resp admission.Response) *corev1.Pod {
	t.Helper()
	patch, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(req.Object.Raw)
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(out, &pod); err != nil {
		t.Fatal(err)
	}
	return &pod
}

func templates(t *testing.T, f *fixture, ns string) []resourceapi.ResourceClaimTemplate {
	t.Helper()
	list, err := f.client.ResourceV1().ResourceClaimTemplates(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func TestHandler(t *testing.T) {
	want, err := translate.Pod(translate.Input{Pod: l4Pod("prod"), Policy: translate.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	otherSpec := want.Template.DeepCopy()
	otherSpec.Spec.Spec.Devices.Requests[0].Exactly.Count = 3

	cases := map[string]struct {
		fleet        string
		mutate       func(*fixture)
		op           admissionv1.Operation
		pod          *corev1.Pod
		raw          []byte
		dryRun       bool
		wantPatched  bool // translated (a patch of the decision's annotations alone is not)
		wantTemplate bool
		wantWarnings []string // substrings, in order
		wantNoWarn   bool
		wantMessage  string
		wantMetric   []string // mode, outcome, reason
	}{
		"enforce and feasible: the pod is patched and the template created": {
			fleet: "l4-inference", op: admissionv1.Create, pod: l4Pod("prod"),
			wantPatched: true, wantTemplate: true,
			wantWarnings: []string{"claimbridge: Translated: uses ResourceClaimTemplate " + want.Template.Name + " (FitsNow, e.g. on l4-inference-0"},
			wantMetric:   []string{"enforce", "Translate", "Translated"},
		},
		"audit: only the decision's annotations change, the would-be change as a warning, nothing created": {
			fleet: "l4-inference", op: admissionv1.Create, pod: l4Pod("staging"),
			wantWarnings: []string{"claimbridge (audit): Translated: would use ResourceClaimTemplate " + want.Template.Name},
			wantMetric:   []string{"audit", "Translate", "Translated"},
		},
		"dry run: the patch is computed, nothing is created": {
			fleet: "l4-inference", op: admissionv1.Create, pod: l4Pod("prod"), dryRun: true,
			wantPatched: true, wantWarnings: []string{"would use (dry run"},
			wantMetric: []string{"enforce", "Translate", "Translated"},
		},
		"not a CREATE": {
			fleet: "l4-inference", op: admissionv1.Update, pod: l4Pod("prod"), wantNoWarn: true,
			wantMessage: "operation UPDATE", wantMetric: []string{"off", "Skip", "NotCreate"},
		},
		"namespace without the label is never mutated": {
			fleet: "l4-inference", op: admissionv1.Create, pod: l4Pod("dev"), wantNoWarn: true,
			wantMessage: "not opted in", wantMetric: []string{"off", "Skip", "NamespaceNotOptedIn"},
		},
		"claimbridge's own namespace is excluded whatever its label": {
			fleet: "l4-inference", op: admissionv1.Create, pod: l4Pod("claimbridge"), wantNoWarn: true,
			wantMessage: "excluded", wantMetric: []string{"off", "Skip", "ExcludedNamespace"},
		},
		"kube-system is excluded whatever its label": {
			fleet: "l4-inference", op: admissionv1.Create, pod: l4Pod("kube-system"), wantNoWarn: true,
			wantMessage: "excluded",
		},
		"a namespace newer than the cache is read once": {
			fleet: "l4-inference", op: admissionv1.Create, pod: l4Pod("fresh"),
			mutate: func(f *fixture) {
				f.handler.LookupNamespace = func(_ context.Context, name string) (*corev1.Namespace, error) {
					return namespaces(map[string]api.Mode{name: api.ModeEnforce})[name], nil
				}
			},
			wantPatched: true, wantTemplate: true, wantWarnings: []string{"uses ResourceClaimTemplate"},
		},
		"opted-out pod": {
			// The device plugin's nodes serve it: nothing to say (on a fleet
			// without them it would be LegacyUnservable, unservable_test.go).
			fleet: "legacy-gfd", op: admissionv1.Create, wantNoWarn: true,
			pod:        builders.MakePod("p", "prod").Container("c").Limit("nvidia.com/gpu", "1").Annotation(api.AnnotationSkip, "true").Obj(),
			wantMetric: []string{"enforce", "Skip", "OptedOut"},
		},
		"already translated pod (reinvocation)": {
			fleet: "l4-inference", op: admissionv1.Create, pod: want.Pod, wantNoWarn: true,
			wantMetric: []string{"enforce", "Skip", "AlreadyTranslated"},
		},
		"infeasible: no DRA node serves it, the pod stays legacy with the reason": {
			fleet: "legacy-gfd", op: admissionv1.Create, pod: l4Pod("prod"),
			wantWarnings: []string{"claimbridge: Infeasible: kept as submitted; no DRA node passes the pod's node selector, affinity and taints"},
			wantMetric:   []string{"enforce", "KeepLegacy", "Infeasible"},
		},
		"inventory not synced: Unknown, the pod stays legacy": {
			fleet: "", op: admissionv1.Create, pod: l4Pod("prod"),
			wantWarnings: []string{"Infeasible: kept as submitted; wait for the webhook's inventory to sync"},
		},
		"invalid pod: request differs from limit": {
			fleet: "l4-inference", op: admissionv1.Create,
			pod:          builders.MakePod("p", "prod").Container("c").Limit("nvidia.com/gpu", "2").Request("nvidia.com/gpu", "1").Obj(),
			wantWarnings: []string{"RequestLimitMismatch: kept as submitted"},
			wantMetric:   []string{"enforce", "KeepLegacy", "RequestLimitMismatch"},
		},
		"undecodable object is admitted unchanged with a warning": {
			fleet: "l4-inference", op: admissionv1.Create, pod: l4Pod("prod"), raw: []byte(`{"spec": {"containers": 7}}`),
			wantWarnings: []string{"cannot decode the pod"}, wantMetric: []string{"enforce", "Error", "DecodeError"},
		},
		"template already in the cache with the same spec: no API call": {
			fleet: "l4-inference", op: admissionv1.Create, pod: l4Pod("prod"),
			mutate:      func(f *fixture) { f.inv.Existing = []*resourceapi.ResourceClaimTemplate{want.Template} },
			wantPatched: true, wantWarnings: []string{"uses ResourceClaimTemplate"},
		},
		"template created meanwhile by another replica: AlreadyExists is success": {
			fleet: "l4-inference", op: admissionv1.Create, pod: l4Pod("prod"),
			mutate: func(f *fixture) {
				f.client = fake.NewClientset(want.Template)
				f.handler.Templates = APITemplates{Client: f.client}
			},
			wantPatched: true, wantTemplate: true, wantWarnings: []string{"uses ResourceClaimTemplate"},
		},
		"name collision with another spec: the pod stays legacy": {
			fleet: "l4-inference", op: admissionv1.Create, pod: l4Pod("prod"),
			mutate: func(f *fixture) {
				f.client = fake.NewClientset(otherSpec)
				f.handler.Templates = APITemplates{Client: f.client}
			},
			wantTemplate: true, wantWarnings: []string{"TemplateConflict: kept as submitted"},
			wantMetric: []string{"enforce", "KeepLegacy", "TemplateConflict"},
		},
		"a template of that name not made by claimbridge is a conflict": {
			fleet: "l4-inference", op: admissionv1.Create, pod: l4Pod("prod"),
			mutate: func(f *fixture) {
				foreign := want.Template.DeepCopy()
				foreign.Labels = nil
				f.client = fake.NewClientset(foreign)
				f.handler.Templates = APITemplates{Client: f.client}
			},
			wantTemplate: true, wantWarnings: []string{"TemplateConflict"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.fleet, tc.mutate)
			req := request(t, tc.op, tc.pod, tc.dryRun)
			if tc.raw != nil {
				req.Object.Raw = tc.raw
			}
			resp := f.handler.Handle(t.Context(), req)
			if !resp.Allowed {
				t.Fatalf("pod denied: %+v", resp.Result)
			}
			if got := mutated(t, req, resp); got != tc.wantPatched {
				t.Fatalf("patched = %v, want %v (patches %v, warnings %q)", got, tc.wantPatched, resp.Patches, resp.Warnings)
			}
			if tc.wantPatched {
				if diff := cmp.Diff(want.Pod.Spec, applied(t, req, resp).Spec); diff != "" {
					t.Errorf("patched pod differs from the translation (-want,+got):\n%s", diff)
				}
			}
			if got := len(templates(t, f, tc.pod.Namespace)) > 0; got != tc.wantTemplate {
				t.Errorf("template exists = %v, want %v", got, tc.wantTemplate)
			}
			if tc.wantNoWarn && len(resp.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", resp.Warnings)
			}
			for i, w := range tc.wantWarnings {
				if i >= len(resp.Warnings) || !strings.Contains(resp.Warnings[i], w) {
					t.Errorf("warning %d: want it to contain %q, got %q", i, w, resp.Warnings)
				}
			}
			for _, w := range resp.Warnings {
				if utf8.RuneCountInString(w) > explain.MaxWarningRunes || strings.Contains(w, "\n") {
					t.Errorf("warning is not one short line: %q", w)
				}
			}
			if tc.wantMessage != "" && (resp.Result == nil || !strings.Contains(resp.Result.Message, tc.wantMessage)) {
				t.Errorf("message %v, want it to contain %q", resp.Result, tc.wantMessage)
			}
			if tc.wantMetric != nil {
				if got := testutil.ToFloat64(f.metrics.Admissions.WithLabelValues(tc.wantMetric...)); got != 1 {
					t.Errorf("claimbridge_admissions_total%v = %v, want 1", tc.wantMetric, got)
				}
			}
		})
	}
}

func TestHandlerReportsDecisionsPerNamespace(t *testing.T) {
	f := newFixture(t, "l4-inference", nil)
	f.handler.Handle(t.Context(), request(t, admissionv1.Create, l4Pod("prod"), false))
	f.handler.Handle(t.Context(), request(t, admissionv1.Create, l4Pod("staging"), false))
	f.handler.Handle(t.Context(), request(t, admissionv1.Create, l4Pod("prod"), true)) // dry runs are not reported
	rep := f.store.Report(t.Context(), "prod", "p")
	if rep.Summary.Total != 1 || rep.Items[0].Outcome != reason.OutcomeTranslate || rep.Items[0].Verdict != "FitsNow" {
		t.Fatalf("prod report: %+v", rep)
	}
	if all := f.store.Report(t.Context(), "", "p"); all.Summary.Total != 2 {
		t.Errorf("all namespaces: %d rows, want 2", all.Summary.Total)
	}
}

func TestHandlerRemembersTemplatesForRecreation(t *testing.T) {
	f := newFixture(t, "l4-inference", nil)
	resp := f.handler.Handle(t.Context(), request(t, admissionv1.Create, l4Pod("prod"), false))
	pod := applied(t, request(t, admissionv1.Create, l4Pod("prod"), false), resp)
	name := pod.Annotations[api.AnnotationTemplate]
	spec, ok := f.handler.Recent.Spec(name)
	if !ok || translate.TemplateName(&spec.Spec) != name {
		t.Fatalf("spec of %s not remembered", name)
	}
}

// Admission records no Event for a pod it admits (the leader's
// ExplainController puts one on the pod); a denied pod, which never
// exists, gets a Denied Event in its namespace, at most one per namespace
// and reason per interval.
func TestOnlyDenialsAreEventsAtAdmission(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f := newFixture(t, "l4-inference", func(f *fixture) {
		f.handler.Recorder = rec
		f.handler.Now = func() time.Time { return now }
		namespaceLabel("prod", api.LabelOnUnservable, "Deny")(f)
	})
	f.handler.Handle(t.Context(), request(t, admissionv1.Create, l4Pod("prod"), false))
	f.handler.Handle(t.Context(), request(t, admissionv1.Create, l4Pod("staging"), false))
	if got := len(rec.Events); got != 0 {
		t.Fatalf("%d events for admitted pods, want none: %q", got, <-rec.Events)
	}
	shared := builders.MakePod("shared", "prod").Container("c").Limit("nvidia.com/gpu.shared", "1").Obj()
	for range 3 {
		if resp := f.handler.Handle(t.Context(), request(t, admissionv1.Create, shared, false)); resp.Allowed {
			t.Fatalf("pod admitted, want it denied: %q", resp.Warnings)
		}
	}
	if got := len(rec.Events); got != 1 {
		t.Fatalf("%d events for 3 denials, want 1", got)
	}
	if got, want := <-rec.Events, "Warning Denied pod prod/shared (enforce mode): no node offers nvidia.com/gpu.shared"; !strings.HasPrefix(got, want) {
		t.Errorf("event %q, want it to start with %q", got, want)
	}
	now = now.Add(11 * time.Second)
	f.handler.Handle(t.Context(), request(t, admissionv1.Create, shared, false))
	if got := len(rec.Events); got != 1 {
		t.Errorf("%d events after the interval, want 1", got)
	}
}
