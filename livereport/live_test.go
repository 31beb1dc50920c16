package livereport

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/informertest"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/metrics"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// The cluster of the live report's tests: in prod (enforce) a Deployment
// of three translated replicas (two bound, one Pending), a StatefulSet
// kept legacy and a pod bound at creation that the webhook never saw; in
// staging (audit) a Deployment that would move and a Job run by another
// scheduler; in dev (not opted in), a pod that is not counted.
var (
	liveStarted = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	liveNow     = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
)

func at(minutes int) metav1.Time {
	return metav1.NewTime(liveStarted.Add(time.Duration(minutes) * time.Minute))
}

// replicaSetPod is a pod of a Deployment's ReplicaSet, as the ReplicaSet
// controller creates it.
func replicaSetPod(w *builders.PodWrapper, deployment, hash, suffix string, created metav1.Time) *corev1.Pod {
	p := w.Label("pod-template-hash", hash).Obj()
	p.GenerateName = deployment + "-" + hash + "-"
	p.Name = p.GenerateName + suffix
	p.CreationTimestamp = created
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: deployment + "-" + hash, UID: types.UID("rs-" + deployment), Controller: ptr.To(true)}}
	return p
}

func ownedPod(w *builders.PodWrapper, apiVersion, kind, owner, name string, created metav1.Time) *corev1.Pod {
	p := w.Obj()
	p.Name, p.CreationTimestamp = name, created
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner, UID: types.UID("uid-" + owner), Controller: ptr.To(true)}}
	return p
}

// decided is a pod as admission left it: its decision and reason.
func decided(ns, decision string, reason reason.Code) *builders.PodWrapper {
	return builders.MakePod("", ns).Annotation(api.AnnotationDecision, decision).Annotation(api.AnnotationReason, string(reason))
}

// translated is a translated pod: no extended resource left, a claim from
// the template.
func translated(ns, template string) *builders.PodWrapper {
	w := decided(ns, api.DecisionTranslated, translate.ReasonTranslated).Annotation(api.AnnotationTemplate, template).Container("train")
	return w
}

func withClaim(p *corev1.Pod, template string) *corev1.Pod {
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}}
	return p
}

func liveObjects() []runtime.Object {
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "claimbridge-abc", Namespace: "prod", Labels: map[string]string{api.LabelManagedBy: api.ManagedByValue}},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			{Name: "train-gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2}},
		}}}},
	}
	bound := func(p *corev1.Pod, node string) *corev1.Pod {
		p.Spec.NodeName = node
		p.Status.Phase = corev1.PodRunning
		return p
	}
	pinned := builders.MakePod("pinned", "prod").Container("app").Limit("nvidia.com/gpu", "1").NodeName("legacy-gfd-0").Obj()
	pinned.CreationTimestamp = at(60) // after the webhook started: bound at creation
	cpu := builders.MakePod("cpu-only", "prod").Container("app").Request("cpu", "1").Obj()
	offPod := builders.MakePod("notebook", "dev").Container("app").Limit("nvidia.com/gpu", "1").Obj()
	done := bound(withClaim(replicaSetPod(translated("prod", "claimbridge-abc"), "trainer", "5d8f7", "old", at(1)), "claimbridge-abc"), "dgx-h100-0")
	done.Status.Phase = corev1.PodSucceeded
	return []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{api.LabelMode: "enforce"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "staging", Labels: map[string]string{api.LabelMode: "audit"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}},
		tmpl,
		bound(withClaim(replicaSetPod(translated("prod", "claimbridge-abc"), "trainer", "5d8f7", "aaaaa", at(10)), "claimbridge-abc"), "dgx-h100-1"),
		bound(withClaim(replicaSetPod(translated("prod", "claimbridge-abc"), "trainer", "5d8f7", "bbbbb", at(11)), "claimbridge-abc"), "dgx-h100-0"),
		withClaim(replicaSetPod(translated("prod", "claimbridge-abc"), "trainer", "5d8f7", "ccccc", at(12)), "claimbridge-abc"),
		done,
		bound(ownedPod(decided("prod", api.DecisionKeptLegacy, decide.ReasonInfeasible).
			Annotation(api.AnnotationDecisionMessage, "Infeasible: NeverFits (NoMatchingDevices): no DRA node publishes NVIDIA-A100-SXM4-40GB").
			Container("db").Limit("nvidia.com/gpu", "1"), "apps/v1", "StatefulSet", "db", "db-0", at(5)), "legacy-gfd-1"),
		pinned,
		cpu,
		bound(replicaSetPod(decided("staging", api.DecisionWouldTranslate, translate.ReasonTranslated).Container("embed").Limit("nvidia.com/gpu", "1"), "embed", "6b7c8", "xxxxx", at(20)), "legacy-gfd-0"),
		bound(replicaSetPod(decided("staging", api.DecisionWouldTranslate, translate.ReasonTranslated).Container("embed").Limit("nvidia.com/gpu", "1"), "embed", "6b7c8", "yyyyy", at(21)), "legacy-gfd-1"),
		bound(ownedPod(builders.MakePod("", "staging").Container("eval").Limit("nvidia.com/gpu", "2").SchedulerName("volcano"), "batch/v1", "Job", "eval", "eval-0", at(30)), "legacy-gfd-0"),
		bound(ownedPod(builders.MakePod("", "staging").Container("eval").Limit("nvidia.com/gpu", "2").SchedulerName("volcano"), "batch/v1", "Job", "eval", "eval-1", at(30)), "legacy-gfd-1"),
		offPod,
	}
}

// admittedRows are the rows admission recorded for some of the pods: the
// trainer's and the embed's (by generateName), the db's (which names the
// template its translation would have had).
func admittedRows() map[string][]decisions.Row {
	feasible := reason.Reason{Code: decide.ReasonFeasible, Severity: reason.SeverityInfo, Message: "FitsNow on node a100-mig-0"}
	return map[string][]decisions.Row{
		"prod": {
			{Kind: "Pod", Namespace: "prod", Name: "trainer-5d8f7-*", Outcome: reason.OutcomeTranslate, Verdict: "FitsNow", VerdictCode: "Fits", Node: "dgx-h100-0",
				Template: "claimbridge-abc", Alternatives: []string{"train-gpu"}, DevicesRequested: map[string]int64{"nvidia.com/gpu": 2}, Hardware: "nvidia.com/gpu, any model",
				Decisive: &reason.Reason{Code: decide.ReasonFeasible, Severity: reason.SeverityInfo, Message: "FitsNow on node dgx-h100-0"},
				Reasons:  []reason.Reason{{Code: decide.ReasonFeasible, Severity: reason.SeverityInfo, Message: "FitsNow on node dgx-h100-0"}}},
			{Kind: "Pod", Namespace: "prod", Name: "db-0", Outcome: reason.OutcomeKeepLegacy, Verdict: "NeverFits", VerdictCode: "NoMatchingDevices", Template: "claimbridge-never",
				DevicesRequested: map[string]int64{"nvidia.com/gpu": 1}, Hardware: "NVIDIA-A100-SXM4-40GB",
				Decisive: &reason.Reason{Code: decide.ReasonInfeasible, Severity: reason.SeverityWarning, Message: "NeverFits (NoMatchingDevices): no DRA node publishes NVIDIA-A100-SXM4-40GB"}},
		},
		"staging": {
			{Kind: "Pod", Namespace: "staging", Name: "embed-6b7c8-*", Outcome: reason.OutcomeTranslate, Verdict: "FitsNow", VerdictCode: "Fits", Node: "a100-mig-0",
				Template: "claimbridge-def", DevicesRequested: map[string]int64{"nvidia.com/gpu": 1}, Hardware: "nvidia.com/gpu, any model",
				Placement: &decisions.Placement{Result: decisions.PlacementEqual, Nodes: 10, Legacy: 6, Translated: 6},
				Decisive:  &feasible, Reasons: []reason.Reason{feasible}},
		},
	}
}

func newLiveStore(inv *inventory.Inventory, withAdmissions bool) *ReportStore {
	s := &ReportStore{Live: inv, Pending: inv, Policy: translate.DefaultPolicy, Started: liveStarted, OwnNamespace: "claimbridge",
		Now: func() time.Time { return liveNow }}
	if withAdmissions {
		for ns, rows := range admittedRows() {
			for _, r := range rows {
				s.Add(ns, r, liveNow)
			}
		}
	}
	return s
}

// liveRow is what the tests compare of a row.
type liveRow struct {
	Object   string
	Status   decisions.Status
	Replicas int32
	Devices  int64
	Template string
	BoundTo  []string
	Code     reason.Code
	Unseen   bool
}

func liveRowsOf(rep *report.Report) []liveRow {
	var out []liveRow
	for _, r := range rep.Items {
		lr := liveRow{Object: r.Namespace + "/" + r.Kind + "/" + r.Name, Status: r.Status, Replicas: ptr.Deref(r.Replicas, 1), Devices: r.Demand(),
			Template: r.Template, BoundTo: r.BoundTo, Unseen: r.Unseen}
		if r.Decisive != nil {
			lr.Code = r.Decisive.Code
		}
		out = append(out, lr)
	}
	return out
}

func TestLiveReportCountsWorkloadsWithTheirStatus(t *testing.T) {
	inv := start(t, liveObjects())
	want := []liveRow{
		{Object: "prod/Deployment/trainer", Status: decisions.StatusMigrated, Replicas: 2, Devices: 4, Template: "claimbridge-abc", BoundTo: []string{"dgx-h100-0", "dgx-h100-1"}, Code: decide.ReasonFeasible},
		{Object: "prod/Deployment/trainer", Status: decisions.StatusWaiting, Replicas: 1, Devices: 2, Template: "claimbridge-abc", Code: decide.ReasonFeasible},
		{Object: "prod/Pod/pinned", Status: decisions.StatusSkipped, Replicas: 1, Devices: 1, Code: translate.ReasonNodeNamePreset, Unseen: true},
		{Object: "prod/StatefulSet/db", Status: decisions.StatusBlocked, Replicas: 1, Devices: 1, Code: decide.ReasonInfeasible},
		{Object: "staging/Deployment/embed", Status: decisions.StatusReadyNow, Replicas: 2, Devices: 2, Template: "claimbridge-def", Code: decide.ReasonFeasible},
		{Object: "staging/Job/eval", Status: decisions.StatusSkipped, Replicas: 2, Devices: 4, Code: translate.ReasonSchedulerNotListed, Unseen: true},
	}
	rep := newLiveStore(inv, true).Report(t.Context(), "", "default")
	if diff := cmp.Diff(want, liveRowsOf(rep)); diff != "" {
		t.Errorf("rows (-want,+got):\n%s", diff)
	}
	byStatus := map[decisions.Status]decisions.Row{}
	for _, r := range rep.Items {
		byStatus[r.Status] = r.Row
	}
	if r := byStatus[decisions.StatusReadyNow]; r.Decisive.Message != "FitsNow: could run on 6 nodes, e.g. a100-mig-0" {
		t.Errorf("a Ready-now row's verdict reads %q, want it said as advice with the number of nodes", r.Decisive.Message)
	}
	if r := byStatus[decisions.StatusMigrated]; r.Decisive.Message != "FitsNow at admission; its pods run on dgx-h100-0, dgx-h100-1" {
		t.Errorf("a Migrated row's verdict reads %q, want it to name the nodes its pods are bound to", r.Decisive.Message)
	}
	if r := byStatus[decisions.StatusWaiting]; r.Waiting != "35h48m0s" {
		t.Errorf("the Waiting row waits for %q, want 35h48m0s (since the pod's creation)", r.Waiting)
	}

	t.Run("after a restart the rows are the same, from the pods' annotations", func(t *testing.T) {
		restarted := newLiveStore(inv, false).Report(t.Context(), "", "default")
		for _, r := range restarted.Items {
			if r.Name == "db" && r.Decisive.Message != "NeverFits (NoMatchingDevices): no DRA node publishes NVIDIA-A100-SXM4-40GB" {
				t.Errorf("the kept db says %q, not the account its pod carries", r.Decisive.Message)
			}
		}
		got := liveRowsOf(restarted)
		// Without the admission's rows the translated pods count the
		// devices of their template's requests, and reasons are the
		// annotations'; a pod that would move has no verdict, hence no
		// would-be template.
		want := slices.Clone(want)
		want[0].Code, want[1].Code = translate.ReasonTranslated, translate.ReasonTranslated
		want[4].Code, want[4].Template = translate.ReasonTranslated, ""
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("rows (-want,+got):\n%s", diff)
		}
	})
	t.Run("one namespace", func(t *testing.T) {
		got := newLiveStore(inv, true).Report(t.Context(), "staging", "default")
		if diff := cmp.Diff(want[4:], liveRowsOf(got)); diff != "" {
			t.Errorf("rows (-want,+got):\n%s", diff)
		}
		if got.Progress == nil || got.Progress.DRA != 0 || got.Progress.DevicePlugin != 6 {
			t.Errorf("staging's progress: %+v, want 0 DRA, 6 device plugin", got.Progress)
		}
	})
}

func TestLiveReportSummaryCountsWorkloadsAndPods(t *testing.T) {
	rep := newLiveStore(start(t, liveObjects()), true).Report(t.Context(), "", "default")
	var pods int64
	for _, r := range rep.Items {
		pods += r.Pods()
	}
	// Six rows (one per workload and status) of nine pods: a Deployment of
	// three replicas is not three workloads.
	if len(rep.Items) != 6 || pods != 9 {
		t.Errorf("%d rows of %d pods, want 6 of 9", len(rep.Items), pods)
	}
}

func TestLiveReportProgressIsSampledAndBounded(t *testing.T) {
	inv := start(t, liveObjects())
	m := metrics.NewMetrics()
	s := newLiveStore(inv, true)
	s.ProgressSamples, s.MigrationDevices = 2, m.MigrationDevices
	for i := range 3 {
		s.Sample(liveNow.Add(time.Duration(i) * time.Minute))
	}
	// Bound: the trainer's two migrated pods (2 devices each) on DRA; the
	// db (1), the pinned pod (1), the embed's two (1 each) and the eval's
	// two (2 each) on the device plugin. The Pending trainer, the finished
	// one and the pod in dev do not count.
	if dra, dp := testutil.ToFloat64(m.MigrationDevices.WithLabelValues("dra")), testutil.ToFloat64(m.MigrationDevices.WithLabelValues("device-plugin")); dra != 4 || dp != 8 {
		t.Errorf("claimbridge_migration_devices: dra %g, device-plugin %g; want 4 and 8", dra, dp)
	}
	rep := s.Report(t.Context(), "", "default")
	p := rep.Progress
	if p == nil || p.DRA != 4 || p.DevicePlugin != 8 || p.Share() != 33 {
		t.Fatalf("progress %+v, want 4 DRA, 8 device plugin (33%%)", p)
	}
	if len(p.History) != 2 || !p.History[1].Time.Time.Equal(liveNow.Add(2*time.Minute)) {
		t.Errorf("history %+v, want the last 2 samples", p.History)
	}
	// A namespace has its own, shorter, history.
	staging := s.Report(t.Context(), "staging", "default").Progress
	if staging == nil || len(staging.History) != 3 || staging.History[2].DevicePlugin != 6 || staging.History[2].DRA != 0 {
		t.Errorf("staging's progress %+v, want 3 samples of 0 DRA, 6 device plugin", staging)
	}
}

func TestKeptLegacyLiveRowsNameNoTemplate(t *testing.T) {
	rep := newLiveStore(start(t, liveObjects()), true).Report(t.Context(), "prod", "default")
	for _, r := range rep.Items {
		if r.Outcome != reason.OutcomeTranslate && r.Template != "" {
			t.Errorf("%s/%s (%s) names template %q, which does not exist", r.Kind, r.Name, r.Status, r.Template)
		}
	}
}

func TestWorkloadOf(t *testing.T) {
	ctrl := func(apiVersion, kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, Controller: ptr.To(true)}}
	}
	tests := map[string]struct {
		pod                *corev1.Pod
		wantKind, wantName string
	}{
		"a ReplicaSet's pod with the hash label is its Deployment's": {
			pod:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f7-abc", Labels: map[string]string{"pod-template-hash": "5d8f7"}, OwnerReferences: ctrl("apps/v1", "ReplicaSet", "web-5d8f7")}},
			wantKind: "Deployment", wantName: "web",
		},
		"a ReplicaSet's pod without it is the ReplicaSet's": {
			pod:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", OwnerReferences: ctrl("apps/v1", "ReplicaSet", "web")}},
			wantKind: "ReplicaSet", wantName: "web",
		},
		"a Job's pod is the Job's": {
			pod:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "eval-0", OwnerReferences: ctrl("batch/v1", "Job", "eval")}},
			wantKind: "Job", wantName: "eval",
		},
		"a custom resource's pod is the resource's": {
			pod:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ray-worker-0", OwnerReferences: ctrl("ray.io/v1", "RayCluster", "ray")}},
			wantKind: "RayCluster", wantName: "ray",
		},
		"an owner that is not the controller does not group": {
			pod:      &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "solo", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "c"}}}},
			wantKind: "Pod", wantName: "solo",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			kind, name := WorkloadOf(tc.pod)
			if kind != tc.wantKind || name != tc.wantName {
				t.Errorf("WorkloadOf = %s/%s, want %s/%s", kind, name, tc.wantKind, tc.wantName)
			}
		})
	}
}

func TestLiveReportRowsOfAdmissionsTheCacheDoesNotShow(t *testing.T) {
	// A pod of the cache that carries no decision (admitted by a version
	// that did not annotate) takes it from the admission's row; an
	// admission whose pod the cache does not show yet is a row of its own
	// for NotCachedFor, then it is gone.
	legacy := builders.MakePod("legacy", "prod").Container("app").Limit("nvidia.com/gpu", "1").Obj()
	legacy.CreationTimestamp = at(2)
	inv := start(t, append(liveObjects(), legacy))
	s := newLiveStore(inv, true)
	kept := &reason.Reason{Code: decide.ReasonInfeasible, Severity: reason.SeverityWarning, Message: "NeverFits"}
	s.Add("prod", decisions.Row{Kind: "Pod", Namespace: "prod", Name: "legacy", Outcome: reason.OutcomeKeepLegacy, Template: "claimbridge-never", Decisive: kept,
		DevicesRequested: map[string]int64{"nvidia.com/gpu": 1}}, liveNow)
	s.Add("staging", decisions.Row{Kind: "Pod", Namespace: "staging", Name: "fresh", Outcome: reason.OutcomeTranslate, Verdict: "FitsNow", Node: "l4-0",
		DevicesRequested: map[string]int64{"nvidia.com/gpu": 1}}, liveNow.Add(-time.Second))
	s.Add("staging", decisions.Row{Kind: "Pod", Namespace: "staging", Name: "gone", Outcome: reason.OutcomeTranslate, Verdict: "FitsNow", Node: "l4-0",
		DevicesRequested: map[string]int64{"nvidia.com/gpu": 1}}, liveNow.Add(-time.Hour))
	// Two more admissions of the embed's template, as a burst makes them:
	// its two cached pods stand for all of them.
	for range 2 {
		s.Add("staging", admittedRows()["staging"][0], liveNow.Add(-2*time.Second))
	}
	got := map[string]liveRow{}
	for _, r := range liveRowsOf(s.Report(t.Context(), "", "default")) {
		got[r.Object] = r
	}
	if r, ok := got["staging/Pod/embed-6b7c8-*"]; ok {
		t.Errorf("admissions of a template whose pods the cache shows are a row of their own beside its workload: %+v", r)
	}
	want := map[string]liveRow{
		"prod/Pod/legacy":   {Object: "prod/Pod/legacy", Status: decisions.StatusBlocked, Replicas: 1, Devices: 1, Code: decide.ReasonInfeasible},
		"staging/Pod/fresh": {Object: "staging/Pod/fresh", Status: decisions.StatusReadyNow, Replicas: 1, Devices: 1},
	}
	for k, w := range want {
		if diff := cmp.Diff(w, got[k]); diff != "" {
			t.Errorf("%s (-want,+got):\n%s", k, diff)
		}
	}
	if _, ok := got["staging/Pod/gone"]; ok {
		t.Errorf("an admission of an hour ago whose pod is not in the cache is still a row")
	}
}

// start runs the informer-backed inventory over objs until the test ends,
// synced.
func start(t *testing.T, objs []runtime.Object) *inventory.Inventory {
	t.Helper()
	inv, _ := informertest.Start(t, objs...)
	return inv
}

// After the switch to DRA a pod bound at creation to a node that no longer
// offers what it asks for is Blocked with LegacyUnservable, and its
// devices are served by no one: not counted as the device plugin's.
func TestLiveReportPutsAPodNoNodeServesWhereItIs(t *testing.T) {
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{api.LabelMode: "enforce"}}},
	}
	pinned := builders.MakePod("pinned", "prod").Container("app").Limit("nvidia.com/gpu", "2").NodeName("l4-inference-0").Obj()
	pinned.CreationTimestamp, pinned.Status.Phase = at(60), corev1.PodPending
	objs = append(objs, pinned)
	objs = append(objs, informertest.Objects(informertest.ExampleFleet(t, "l4-inference"))...)
	inv := start(t, objs)
	m := metrics.NewMetrics()
	s := newLiveStore(inv, false)
	s.Fleet, s.MigrationDevices = inv, m.MigrationDevices
	rep := s.Report(t.Context(), "", "default")
	rows := liveRowsOf(rep)
	want := []liveRow{{Object: "prod/Pod/pinned", Status: decisions.StatusBlocked, Replicas: 1, Devices: 2, Code: explain.ReasonLegacyUnservable, Unseen: true}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want,+got):\n%s", diff)
	}
	// Why the webhook never saw it stays among the reasons.
	var codes []reason.Code
	for _, r := range rep.Items[0].Reasons {
		codes = append(codes, r.Code)
	}
	if want := []reason.Code{translate.ReasonNodeNamePreset, explain.ReasonLegacyUnservable}; !slices.Equal(codes, want) {
		t.Errorf("reasons %v, want %v", codes, want)
	}
	if p := rep.Progress; p == nil || p.DevicePlugin != 0 || p.Unservable != 2 {
		t.Errorf("progress %+v, want its 2 devices served by no one, none by the device plugin", p)
	}
	s.Sample(liveNow)
	if got := testutil.ToFloat64(m.MigrationDevices.WithLabelValues("none")); got != 2 {
		t.Errorf(`claimbridge_migration_devices{served_by="none"} = %g, want 2`, got)
	}
}

// A burst: pods of one Deployment translated and bound, and pods kept on
// the device plugin that runs them because DRA was busy
// (DRABusyLegacyFree). The kept pods are Kept, not Blocked: the page's
// Blocked means someone must act. Where no node offers what a kept pod
// asks for, it is Blocked with LegacyUnservable whatever its reason.
func TestLiveReportKeepsPodsTheDevicePluginRunsOutOfBlocked(t *testing.T) {
	legacy := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "legacy-0"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("8"),
	}}}
	bound := func(p *corev1.Pod, node string) *corev1.Pod {
		p.Spec.NodeName, p.Status.Phase = node, corev1.PodRunning
		return p
	}
	busy := func() *builders.PodWrapper {
		return decided("prod", api.DecisionKeptLegacy, decide.ReasonDRABusyLegacyFree)
	}
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{api.LabelMode: "enforce"}}},
		legacy,
		bound(replicaSetPod(translated("prod", "claimbridge-abc").Container("app"), "burst", "5d8f7", "aaaaa", at(10)), "l4-inference-0"),
		bound(replicaSetPod(busy().Container("app").Limit("nvidia.com/gpu", "1"), "burst", "5d8f7", "bbbbb", at(10)), "legacy-0"),
		bound(replicaSetPod(busy().Container("app").Limit("nvidia.com/gpu", "1"), "burst", "5d8f7", "ccccc", at(10)), "legacy-0"),
		ownedPod(busy().Container("app").Limit("nvidia.com/gpu.shared", "1"), "batch/v1", "Job", "shared", "shared-0", at(11)),
	}
	objs = append(objs, informertest.Objects(informertest.ExampleFleet(t, "l4-inference"))...)
	inv := start(t, objs)
	s := newLiveStore(inv, false)
	s.Fleet = inv
	s.Add("prod", decisions.Row{Kind: "Pod", Namespace: "prod", Name: "fresh", Outcome: reason.OutcomeKeepLegacy,
		Decisive:         &reason.Reason{Code: decide.ReasonDRABusyLegacyFree, Severity: reason.SeverityInfo, Message: "the device plugin runs it now"},
		DevicesRequested: map[string]int64{"nvidia.com/gpu": 1}}, liveNow.Add(-time.Second))
	rep := s.Report(t.Context(), "", "default")
	want := []liveRow{
		{Object: "prod/Deployment/burst", Status: decisions.StatusKept, Replicas: 2, Devices: 2, BoundTo: []string{"legacy-0"}, Code: decide.ReasonDRABusyLegacyFree},
		{Object: "prod/Deployment/burst", Status: decisions.StatusMigrated, Replicas: 1, Template: "claimbridge-abc", BoundTo: []string{"l4-inference-0"}, Code: translate.ReasonTranslated},
		{Object: "prod/Job/shared", Status: decisions.StatusBlocked, Replicas: 1, Devices: 1, Code: explain.ReasonLegacyUnservable},
		{Object: "prod/Pod/fresh", Status: decisions.StatusKept, Replicas: 1, Devices: 1, Code: decide.ReasonDRABusyLegacyFree},
	}
	if diff := cmp.Diff(want, liveRowsOf(rep)); diff != "" {
		t.Errorf("rows (-want,+got):\n%s", diff)
	}
	if p := rep.Progress; p == nil || p.DevicePlugin != 2 {
		t.Errorf("progress %+v, want the 2 devices of the kept pods served by the device plugin", p)
	}
}
