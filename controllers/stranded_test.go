package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/informertest"
	"github.com/claimbridge/claimbridge/metrics"
	"github.com/claimbridge/claimbridge/translate"
)

// TestUnservablePodsGetAnEventOnThemAndTheirOwner: the leader's controller
// finds the pods of opted-in namespaces that do not run and that no node
// can serve — unbound and Pending, or bound at creation to a node that
// does not offer what they ask for (after the switch to DRA, a pod with
// spec.nodeName whose node lost the device plugin), whose kubelet refuses
// them — and puts one LegacyUnservable Warning on each and one on their
// owner (the ReplicaSet of a Deployment's pods), counts them in the gauge,
// tells nothing twice, and leaves alone running pods, pods that ask for
// what nodes offer, namespaces not opted in and its own namespace.
func TestUnservablePodsGetAnEventOnThemAndTheirOwner(t *testing.T) {
	fleet := informertest.ExampleFleet(t, "l4-inference")
	rs := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7c9", UID: "rs-uid", Controller: new(true)}
	pending := func(name, ns string, w *builders.PodWrapper) *corev1.Pod {
		p := w.Obj()
		p.Name, p.Namespace, p.UID = name, ns, types.UID("uid-"+name)
		p.Status.Phase = corev1.PodPending
		return p
	}
	shared := func() *builders.PodWrapper {
		return builders.MakePod("", "").Container("app").Limit("nvidia.com/gpu.shared", "1")
	}
	running := func(name, ns string, w *builders.PodWrapper) *corev1.Pod {
		p := pending(name, ns, w)
		p.Status.Phase = corev1.PodRunning
		return p
	}
	owned := func(p *corev1.Pod) *corev1.Pod {
		p.OwnerReferences = []metav1.OwnerReference{rs}
		return p
	}
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{api.LabelMode: "enforce"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "claimbridge", Labels: map[string]string{api.LabelMode: "enforce"}}},
		owned(pending("web-7c9-a", "prod", shared())),
		owned(pending("web-7c9-b", "prod", shared())),
		pending("solo", "prod", builders.MakePod("", "").Container("app").Limit("nvidia.com/gpu", "1")),
		pending("bound", "prod", shared().NodeName("l4-inference-0")),
		running("runs", "prod", shared().NodeName("l4-inference-1")),
		pending("cpu-only", "prod", builders.MakePod("", "").Container("app").Request("cpu", "1")),
		pending("not-opted-in", "dev", shared()),
		pending("own", "claimbridge", shared()),
	}
	inv, client := informertest.Start(t, append(objs, informertest.Objects(fleet)...)...)

	rec := record.NewFakeRecorder(100)
	rec.IncludeObject = true
	m := metrics.NewMetrics()
	c := &StrandController{Client: client, Inventory: inv, Policy: translate.DefaultPolicy, Recorder: rec, Namespace: "claimbridge",
		Stranded: m.StrandedPods, Unservable: m.UnservablePending}
	c.Reconcile(t.Context())
	gone := "Warning LegacyUnservable no node offers nvidia.com/gpu.shared any more (DRA replaced the device plugin); this pod stays Pending: make the pod translatable"
	// In creation order, then by name (the fake's pods have no time).
	want := []string{
		"Warning LegacyUnservable no node offers nvidia.com/gpu.shared any more (DRA replaced the device plugin); the kubelet of l4-inference-0 will refuse this pod",
		"Warning LegacyUnservable no node offers nvidia.com/gpu any more (DRA replaced the device plugin); this pod stays Pending",
		gone,
		"Warning LegacyUnservable pod web-7c9-a: no node offers nvidia.com/gpu.shared any more",
		gone,
	}
	wantKinds := []string{"kind=Pod,", "kind=Pod,", "kind=Pod,", "kind=ReplicaSet,", "kind=Pod,"}
	got := drain(rec)
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) || !strings.Contains(got[i], wantKinds[i]) {
			t.Errorf("event %d: %q, want it to start with %q and be about %s", i, got[i], want[i], wantKinds[i])
		}
	}
	if n := testutil.ToFloat64(m.UnservablePending); n != 4 {
		t.Errorf("claimbridge_unservable_pods = %g, want 4", n)
	}

	c.Reconcile(t.Context())
	if got := drain(rec); len(got) != 0 {
		t.Errorf("told again: %q", got)
	}

	// Runs at last (a node with the resource came back, the kubelet
	// admitted it): no longer counted.
	p, err := client.CoreV1().Pods("prod").Get(t.Context(), "solo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.NodeName, p.Status.Phase = "l4-inference-0", corev1.PodRunning
	if _, err := client.CoreV1().Pods("prod").Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		c.Reconcile(ctx)
		return testutil.ToFloat64(m.UnservablePending) == 3, nil
	}); err != nil {
		t.Errorf("claimbridge_unservable_pods = %g after the pod was bound, want 3", testutil.ToFloat64(m.UnservablePending))
	}
	if got := drain(rec); len(got) != 0 {
		t.Errorf("told again: %q", got)
	}
}

// drain returns the events recorded so far.
func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// A scale-up after the switch tells a few pods of the shape and the owner,
// not every pod: the pods' Events share the shape's token bucket.
func TestUnservableEventsOnPodsAreLimitedPerShape(t *testing.T) {
	fleet := informertest.ExampleFleet(t, "l4-inference")
	rs := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7c9", UID: "rs-uid", Controller: new(true)}
	objs := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{api.LabelMode: "enforce"}}}}
	const replicas = DefaultExplainBurst + 3
	for i := range replicas {
		p := builders.MakePod("", "").Container("app").Limit("nvidia.com/gpu.shared", "1").Obj()
		p.Name, p.Namespace, p.UID = fmt.Sprintf("web-7c9-%d", i), "prod", types.UID(fmt.Sprintf("uid-%d", i))
		p.Status.Phase = corev1.PodPending
		p.OwnerReferences = []metav1.OwnerReference{rs}
		objs = append(objs, p)
	}
	for _, n := range fleet.Nodes {
		objs = append(objs, n)
	}
	for _, s := range fleet.Slices {
		objs = append(objs, s)
	}
	inv, _ := informertest.Start(t, objs...)
	rec := record.NewFakeRecorder(100)
	rec.IncludeObject = true
	m := metrics.NewMetrics()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	c := &StrandController{Inventory: inv, Policy: translate.DefaultPolicy, Recorder: rec, Namespace: "claimbridge",
		Stranded: m.StrandedPods, Unservable: m.UnservablePending, Now: func() time.Time { return now }}
	c.Reconcile(t.Context())
	pods, owners := 0, 0
	for _, e := range drain(rec) {
		switch {
		case strings.Contains(e, "kind=Pod,"):
			pods++
		case strings.Contains(e, "kind=ReplicaSet,"):
			owners++
		}
	}
	if pods != DefaultExplainBurst || owners != 1 {
		t.Errorf("%d pod Events and %d owner Events, want %d and 1", pods, owners, DefaultExplainBurst)
	}
	if n := testutil.ToFloat64(m.UnservablePending); n != replicas {
		t.Errorf("claimbridge_unservable_pods = %g, want %d: the limit is on Events, not on the count", n, replicas)
	}
	// The pods over the limit are not told later either: their owner was.
	now = now.Add(time.Hour)
	c.Reconcile(t.Context())
	if got := drain(rec); len(got) != 0 {
		t.Errorf("told again: %q", got)
	}
}

// A translated pod that waits for its DRA devices past --stranded-after
// with no device-plugin node to run it instead — or in a namespace that
// chose whenDRABusy: Wait while the device plugin has room — gets a
// DRABusyWaiting Warning, on the pod and its owner, once; a pod that has
// not waited that long, or that the device plugin could run (stranded,
// told StrandedPod), does not.
func TestAPodWaitingForDRAPastStrandedAfterGetsAWarning(t *testing.T) {
	created := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	now := created.Add(3 * time.Minute)
	legacy := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "legacy-0"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("4"),
	}}}
	rs := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "train-7c9", UID: "rs-uid", Controller: new(true)}
	waiting := func(name, ns, resource string, at time.Time) *corev1.Pod {
		submitted, err := explain.EncodeSubmitted(builders.MakePod("", "").Container("app").Limit(resource, "1").Obj())
		if err != nil {
			t.Fatal(err)
		}
		p := builders.MakePod(name, ns).Container("app").
			Annotation(api.AnnotationDecision, api.DecisionTranslated).Annotation(api.AnnotationReason, string(decide.ReasonDRABusyWaiting)).
			Annotation(api.AnnotationAdmission, "adm-"+name).Annotation(api.AnnotationTemplate, "claimbridge-abc").
			Annotation(api.AnnotationSubmitted, submitted).Obj()
		p.UID, p.CreationTimestamp, p.Status.Phase = types.UID("uid-"+name), metav1.NewTime(at), corev1.PodPending
		if strings.HasPrefix(name, rs.Name) {
			p.OwnerReferences = []metav1.OwnerReference{rs}
		}
		return p
	}
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{api.LabelMode: "enforce"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "drain", Labels: map[string]string{api.LabelMode: "enforce", api.LabelWhenDRABusy: "Wait"}}},
		legacy,
		waiting("train-7c9-a", "prod", "nvidia.com/gpu.shared", created), // no node offers it as submitted
		waiting("train-7c9-b", "prod", "nvidia.com/gpu.shared", now.Add(-time.Minute)),
		waiting("stranded", "prod", "nvidia.com/gpu", created), // legacy-0 runs it: StrandedPod
		waiting("drained", "drain", "nvidia.com/gpu", created), // legacy-0 could, the namespace waits
	}
	inv, _ := informertest.Start(t, append(objs, informertest.Objects(informertest.ExampleFleet(t, "l4-inference"))...)...)
	rec := &refRecorder{}
	c := &StrandController{Inventory: inv, Policy: translate.DefaultPolicy, Recorder: rec, Namespace: "claimbridge", After: 2 * time.Minute,
		Now: func() time.Time { return now }}
	c.Reconcile(t.Context())
	got := rec.drain()
	want := map[string]string{
		"Warning DRABusyWaiting translated pod train-7c9-a has waited 3m0s for DRA devices (in use, or held for other pods); no device-plugin node has room for it as submitted either: free or add DRA devices": "@Pod prod/train-7c9-a",
		"Warning DRABusyWaiting translated pod train-7c9-a has waited 3m0s":                                            "@ReplicaSet prod/train-7c9",
		"Warning StrandedPod translated pod stranded has waited 3m0s for DRA devices while the device plugin has room": "@Pod prod/stranded",
		"Warning DRABusyWaiting translated pod drained has waited 3m0s for DRA devices (in use, or held for other pods); its namespace chose whenDRABusy: Wait, although the device plugin has room for it on 1 node(s), e.g. legacy-0": "@Pod drain/drained",
	}
	for prefix, about := range want {
		if !slices.ContainsFunc(got, func(e string) bool { return strings.HasPrefix(e, prefix) && strings.Contains(e, about) }) {
			t.Errorf("no Event %q about %s in:\n%s", prefix, about, strings.Join(got, "\n"))
		}
	}
	if slices.ContainsFunc(got, func(e string) bool { return strings.Contains(e, "train-7c9-b") }) {
		t.Errorf("a pod that has waited less than --stranded-after was told:\n%s", strings.Join(got, "\n"))
	}
	c.Reconcile(t.Context())
	if again := rec.drain(); len(again) != 0 {
		t.Errorf("told again: %q", again)
	}
}
