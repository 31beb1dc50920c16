package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/informertest"
	"github.com/claimbridge/claimbridge/metrics"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// explainPod is a pod of a namespace, created at t, with a decision when
// decision is not empty.
func explainPod(name, ns string, created time.Time, w *builders.PodWrapper, decision string, code reason.Code, msg string) *corev1.Pod {
	p := w.Obj()
	p.Name, p.Namespace, p.UID = name, ns, types.UID("uid-"+name)
	p.CreationTimestamp = metav1.NewTime(created)
	p.Status.Phase = corev1.PodPending
	if decision != "" {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[api.AnnotationDecision], p.Annotations[api.AnnotationReason] = decision, string(code)
		if msg != "" {
			p.Annotations[api.AnnotationDecisionMessage] = msg
		}
	}
	return p
}

func gpu(n string) *builders.PodWrapper {
	return builders.MakePod("", "").Container("app").Limit("nvidia.com/gpu", n)
}

func TestEveryPodExplainsItselfOnceWithinItsShapesLimit(t *testing.T) {
	started := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	now := started.Add(10 * time.Second)
	after := started.Add(time.Second)
	rs := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "train-7c9", UID: "rs-uid", Controller: new(true)}
	kept := "Infeasible: no DRA node has the nvidia.com/gpu the pod asks for (model, count or attributes) — add DRA nodes that do, or relax the node labels or the count — NeverFits (NoMatchingDevices): 2 nodes publish no DRA devices"
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{api.LabelMode: "enforce"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "staging", Labels: map[string]string{api.LabelMode: "audit"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "claimbridge", Labels: map[string]string{api.LabelMode: "enforce"}}},
		explainPod("infer", "prod", after, gpu("1").Annotation(api.AnnotationTemplate, "claimbridge-5b1c"), api.DecisionTranslated, translate.ReasonTranslated, ""),
		explainPod("audit", "staging", after, gpu("1"), api.DecisionWouldTranslate, translate.ReasonTranslated,
			"Translated: audit mode: would use ResourceClaimTemplate claimbridge-5b1c (FitsNow, e.g. on l4-0; kube-scheduler picks the node: gpu)"),
		explainPod("opted-out", "prod", after, gpu("1").Annotation(api.AnnotationSkip, "true"), api.DecisionSkipped, translate.ReasonOptedOut, ""),
		explainPod("pinned", "prod", after, gpu("2").NodeName("l4-0"), "", "", ""),
		explainPod("volcano", "prod", after, gpu("1").SchedulerName("volcano"), "", "", ""),
		explainPod("before", "staging", started.Add(-time.Hour), gpu("4"), "", "", ""),
		explainPod("skip-unseen", "prod", after, gpu("1").Annotation(api.AnnotationSkip, "true"), "", "", ""),
		explainPod("decided-long-ago", "prod", started.Add(-time.Hour), gpu("1"), api.DecisionKeptLegacy, "Infeasible", kept),
		explainPod("not-opted-in", "dev", after, gpu("1"), "", "", ""),
		explainPod("own", "claimbridge", after, gpu("1"), "", "", ""),
		explainPod("cpu", "prod", after, builders.MakePod("", "").Container("app").Request("cpu", "1"), "", "", ""),
	}
	for i := range 8 {
		p := explainPod(fmt.Sprintf("train-7c9-%d", i), "prod", after.Add(time.Second+time.Duration(i)*time.Millisecond), gpu("1"), api.DecisionKeptLegacy, "Infeasible", kept)
		p.OwnerReferences = []metav1.OwnerReference{rs}
		objs = append(objs, p)
	}
	inv, client := informertest.Start(t, objs...)
	rec := &refRecorder{}
	m := metrics.NewMetrics()
	c := &ExplainController{Inventory: inv, Policy: translate.DefaultPolicy, Recorder: rec, Namespace: "claimbridge", Started: started,
		UndecidedPods: m.UndecidedPods, UndecidedDevices: m.UndecidedDevices, Burst: 3, Refill: time.Minute,
		Now: func() time.Time { return now }}
	c.Reconcile(t.Context())

	// In creation order, then by namespace and name; the owner's last.
	want := []string{
		"Warning Undecided NotSeenByWebhook: no decision recorded: created before the namespace opted in or before claimbridge ran, or while the webhook could not be reached (failurePolicy Ignore) — create the pod again",
		"Normal Translated Translated: nothing to do: the pod uses a ResourceClaimTemplate; ResourceClaimTemplate claimbridge-5b1c",
		"Normal Skipped OptedOut: nothing to do; remove the annotation claimbridge.io/skip",
		`Warning Undecided NodeNamePreset: bound to node "l4-0" at creation: the webhook's matchConditions do not send pods that no scheduler places — let a scheduler place the pod`,
		"Normal Undecided OptedOut: the pod opted out with the annotation claimbridge.io/skip — nothing to do",
		`Warning Undecided SchedulerNotListed: scheduler "volcano" is not one the policy lists: the webhook's matchConditions do not send its pods — if the pod's scheduler allocates DRA claims`,
		"Normal AuditWouldTranslate Translated: audit mode: would use ResourceClaimTemplate claimbridge-5b1c (FitsNow, e.g. on l4-0; kube-scheduler picks the node: gpu)",
		"Warning KeptLegacy " + kept,
		"Warning KeptLegacy " + kept,
		"Warning KeptLegacy " + kept,
		"Warning KeptLegacy 8 pods: KeptLegacy " + kept + " (e.g. pod train-7c9-0)",
	}
	wantObjects := []string{"Pod staging/before", "Pod prod/infer", "Pod prod/opted-out", "Pod prod/pinned", "Pod prod/skip-unseen", "Pod prod/volcano",
		"Pod staging/audit", "Pod prod/train-7c9-0", "Pod prod/train-7c9-1", "Pod prod/train-7c9-2", "ReplicaSet prod/train-7c9 rs-uid"}
	got := rec.drain()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) || !strings.Contains(got[i], wantObjects[i]) {
			t.Errorf("event %d:\n%q\nwant it to start with\n%q\nand be about %s", i, got[i], want[i], wantObjects[i])
		}
	}
	for code, n := range map[string]float64{"NodeNamePreset": 1, "SchedulerNotListed": 1, "NotSeenByWebhook": 1, "OptedOut": 1} {
		if got := testutil.ToFloat64(m.UndecidedPods.WithLabelValues(code)); got != n {
			t.Errorf("claimbridge_undecided_pods{reason=%s} = %g, want %g", code, got, n)
		}
	}
	if got := testutil.CollectAndCount(m.UndecidedPods); got != 4 {
		t.Errorf("claimbridge_undecided_pods has %d series, want 4", got)
	}
	for k, n := range map[[2]string]float64{{"NodeNamePreset", "nvidia.com/gpu"}: 2, {"NotSeenByWebhook", "nvidia.com/gpu"}: 4} {
		if got := testutil.ToFloat64(m.UndecidedDevices.WithLabelValues(k[0], k[1])); got != n {
			t.Errorf("claimbridge_undecided_devices%v = %g, want %g", k, got, n)
		}
	}

	// Nothing is told twice, and no owner Event without new pods.
	now = now.Add(15 * time.Second)
	c.Reconcile(t.Context())
	if got := rec.drain(); len(got) != 0 {
		t.Errorf("told again:\n%s", strings.Join(got, "\n"))
	}

	// A minute later the shape has a token again: the next replica gets
	// its Event; the one after it only counts on the owner.
	now = now.Add(time.Minute)
	for i := 8; i < 10; i++ {
		p := explainPod(fmt.Sprintf("train-7c9-%d", i), "prod", now, gpu("1"), api.DecisionKeptLegacy, "Infeasible", kept)
		p.OwnerReferences = []metav1.OwnerReference{rs}
		if _, err := client.CoreV1().Pods("prod").Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The pinned pod is gone: no longer counted.
	if err := client.CoreV1().Pods("prod").Delete(t.Context(), "pinned", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		names := map[string]bool{}
		for _, p := range inv.Pods("") {
			names[p.Name] = true
		}
		return names["train-7c9-8"] && names["train-7c9-9"] && !names["pinned"], nil
	}); err != nil {
		t.Fatal("the cache did not see the new pods")
	}
	c.Reconcile(t.Context())
	got = rec.drain()
	want = []string{"Warning KeptLegacy " + kept, "Warning KeptLegacy 2 pods: KeptLegacy " + kept + " (e.g. pod train-7c9-8)"}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("event %d: %q, want it to start with %q", i, got[i], want[i])
		}
	}
	if !strings.Contains(got[0], "Pod prod/train-7c9-8") {
		t.Errorf("event on %q, want train-7c9-8", got[0])
	}
	if got := testutil.CollectAndCount(m.UndecidedPods); got != 3 {
		t.Errorf("claimbridge_undecided_pods has %d series after the pinned pod went, want 3", got)
	}
}

// The informer's events tell a pod at once, before the next full pass.
func TestAPodIsToldWhenTheInformerSeesIt(t *testing.T) {
	inv, client := informertest.Start(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{api.LabelMode: "enforce"}}})
	rec := record.NewFakeRecorder(10)
	c := &ExplainController{Inventory: inv, Policy: translate.DefaultPolicy, Recorder: rec, Namespace: "claimbridge", Interval: time.Hour}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	p := explainPod("kept", "prod", time.Now(), gpu("1"), api.DecisionKeptLegacy, translate.ReasonNodeNamePreset, "")
	if _, err := client.CoreV1().Pods("prod").Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-rec.Events:
		if want := "Warning KeptLegacy NodeNamePreset: let a scheduler place the pod"; !strings.HasPrefix(got, want) {
			t.Errorf("event %q, want it to start with %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no Event within 10s of the pod's creation")
	}
}

func TestTokenBucket(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	b := &bucket{tokens: 2, at: t0}
	var got []bool
	for _, at := range []time.Duration{0, 0, 0, 30 * time.Second, 60 * time.Second, 60 * time.Second, 10 * time.Minute, 10 * time.Minute, 10 * time.Minute} {
		got = append(got, b.take(t0.Add(at), 2, time.Minute))
	}
	want := []bool{true, true, false, false, true, false, true, true, false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tokens taken (-want,+got):\n%s", diff)
	}
	if !b.full(t0.Add(time.Hour), 2, time.Minute) {
		t.Error("a bucket left alone for an hour is not full")
	}
}

// refRecorder records Events with the object they are about:
// "<type> <reason> <message> @<kind> <namespace>/<name> <uid>".
type refRecorder struct{ events []string }

var _ record.EventRecorder = &refRecorder{}

func (r *refRecorder) Event(obj runtime.Object, typ, reason, message string) {
	ref, ok := obj.(*corev1.ObjectReference)
	if !ok {
		r.events = append(r.events, fmt.Sprintf("%s %s %s @%T", typ, reason, message, obj))
		return
	}
	r.events = append(r.events, fmt.Sprintf("%s %s %s @%s %s/%s %s", typ, reason, message, ref.Kind, ref.Namespace, ref.Name, ref.UID))
}

func (r *refRecorder) Eventf(obj runtime.Object, typ, reason, format string, args ...any) {
	r.Event(obj, typ, reason, fmt.Sprintf(format, args...))
}

func (r *refRecorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, typ, reason, format string, args ...any) {
	r.Eventf(obj, typ, reason, format, args...)
}

func (r *refRecorder) drain() []string {
	out := r.events
	r.events = nil
	return out
}

// After the switch to DRA a pod bound at creation to a node that no longer
// offers what it asks for is not told that it stays on the device plugin:
// the strand controller tells it LegacyUnservable. A pod bound where the
// resource is offered is told Undecided as before.
func TestAnUndecidedPodNoNodeCanServeIsLeftToTheStrandController(t *testing.T) {
	started := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	after := started.Add(time.Second)
	legacy := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "legacy-0"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("4"),
	}}}
	objs := append([]runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{api.LabelMode: "enforce"}}},
		legacy,
		explainPod("switched", "prod", after, gpu("1").NodeName("l4-inference-0"), "", "", ""),
		explainPod("legacy", "prod", after, gpu("1").NodeName("legacy-0"), "", "", ""),
	}, informertest.Objects(informertest.ExampleFleet(t, "l4-inference"))...)
	inv, _ := informertest.Start(t, objs...)
	rec := &refRecorder{}
	c := &ExplainController{Inventory: inv, Policy: translate.DefaultPolicy, Recorder: rec, Namespace: "claimbridge", Started: started,
		Now: func() time.Time { return after.Add(time.Second) }}
	c.Reconcile(t.Context())
	got := rec.drain()
	if len(got) != 1 || !strings.Contains(got[0], "Pod prod/legacy") || !strings.Contains(got[0], "Undecided NodeNamePreset") {
		t.Errorf("events %q, want the Undecided Event of the pod on the legacy node only", got)
	}
}

// A pod kept on the device plugin that runs there for a reason that asks
// nothing of anyone (DRA was busy and the device plugin had room) is told
// with a Normal Event; a pod kept for a reason that needs a decision, or
// kept for any reason where no node offers what it asks for, with a
// Warning — as explain.Judge says, and as its PolicyReport result does.
func TestAKeptPodIsAWarningOnlyWhenSomeoneMustAct(t *testing.T) {
	started := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	after := started.Add(time.Second)
	legacy := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "legacy-0"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("4"),
	}}}
	busy := "DRABusyLegacyFree: nothing to do: the pod runs now on the device plugin"
	objs := append([]runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{api.LabelMode: "enforce"}}},
		legacy,
		explainPod("a-busy", "prod", after, gpu("1"), api.DecisionKeptLegacy, "DRABusyLegacyFree", busy),
		explainPod("b-untranslatable", "prod", after, gpu("1"), api.DecisionKeptLegacy, translate.ReasonNodeLabelUntranslatable, ""),
		explainPod("c-busy-gone", "prod", after, builders.MakePod("", "").Container("app").Limit("nvidia.com/gpu.shared", "1"), api.DecisionKeptLegacy, "DRABusyLegacyFree", busy),
	}, informertest.Objects(informertest.ExampleFleet(t, "l4-inference"))...)
	inv, _ := informertest.Start(t, objs...)
	rec := &refRecorder{}
	c := &ExplainController{Inventory: inv, Policy: translate.DefaultPolicy, Recorder: rec, Namespace: "claimbridge", Started: started,
		Now: func() time.Time { return after.Add(time.Second) }}
	c.Reconcile(t.Context())
	want := []string{
		"Normal KeptLegacy " + busy,
		"Warning KeptLegacy NodeLabelUntranslatable: add a nodeLabels rule",
		"Warning KeptLegacy " + busy,
	}
	got := rec.drain()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("event %d:\n%q\nwant it to start with\n%q", i, got[i], want[i])
		}
	}
}

// TestAnOwnersEventCountsFitsNowApartFromFitsWhenFree: the translated pods
// of one ReplicaSet, 4 admitted FitsNow and 2 FitsWhenFree (they wait for
// DRA devices), are two Events on the owner, each with its own count and
// verdict: never "6 pods: … (FitsNow …)".
func TestAnOwnersEventCountsFitsNowApartFromFitsWhenFree(t *testing.T) {
	started := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	now := started.Add(10 * time.Second)
	rs := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "serve-5d8", UID: "rs-uid", Controller: new(true)}
	objs := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{api.LabelMode: "enforce"}}}}
	for i := range 6 {
		verdict := "FitsNow, e.g. on l4-0; kube-scheduler picks the node: gpu"
		if i >= 4 {
			verdict = "FitsWhenFree: gpu"
		}
		msg := "Translated: uses ResourceClaimTemplate claimbridge-5b1c (" + verdict + ")"
		p := explainPod(fmt.Sprintf("serve-5d8-%d", i), "prod", started.Add(time.Second+time.Duration(i)*time.Millisecond), gpu("1"), api.DecisionTranslated, translate.ReasonTranslated, msg)
		p.OwnerReferences = []metav1.OwnerReference{rs}
		objs = append(objs, p)
	}
	inv, _ := informertest.Start(t, objs...)
	rec := &refRecorder{}
	m := metrics.NewMetrics()
	c := &ExplainController{Inventory: inv, Policy: translate.DefaultPolicy, Recorder: rec, Namespace: "claimbridge", Started: started,
		UndecidedPods: m.UndecidedPods, UndecidedDevices: m.UndecidedDevices, Burst: 10, Refill: time.Minute, Now: func() time.Time { return now }}
	c.Reconcile(t.Context())
	var owner []string
	for _, e := range rec.drain() {
		if strings.Contains(e, "ReplicaSet prod/serve-5d8") {
			owner = append(owner, e)
		}
	}
	if len(owner) != 2 {
		t.Fatalf("%d Events on the owner, want 2 (FitsNow, FitsWhenFree):\n%s", len(owner), strings.Join(owner, "\n"))
	}
	for _, want := range []string{"4 pods: Translated Translated: uses ResourceClaimTemplate claimbridge-5b1c (FitsNow", "2 pods: Translated Translated: uses ResourceClaimTemplate claimbridge-5b1c (FitsWhenFree"} {
		if !strings.Contains(strings.Join(owner, "\n"), want) {
			t.Errorf("no owner Event says %q:\n%s", want, strings.Join(owner, "\n"))
		}
	}
}
