package policyreport

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	openreportsv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

func row(ns, name string, outcome reason.Outcome, reasons ...reason.Reason) report.Row {
	return report.Row{Row: decisions.Row{Kind: "Pod", Namespace: ns, Name: name, Outcome: outcome, Reasons: reasons, DevicesRequested: map[string]int64{"nvidia.com/gpu": 2}}}
}

func TestResults(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	translated := reason.Reason{Code: translate.ReasonTranslated, Severity: reason.SeverityInfo, Message: "translated"}
	blocked := reason.Reason{Code: decide.ReasonInfeasible, Severity: reason.SeverityWarning, Message: "no DRA device fits"}
	migrated := row("ns", "a-migrated", reason.OutcomeTranslate, translated)
	migrated.Admission, migrated.Template, migrated.Node = "uid-1", "claimbridge-abc", "node-1"
	ready := row("ns", "b-ready", reason.OutcomeTranslate, translated)
	ready.Template = "claimbridge-abc"
	waiting := row("ns", "c-waiting", reason.OutcomeTranslate, translated)
	waiting.Admission, waiting.WaitingSince, waiting.Waiting = "uid-2", &metav1.Time{Time: now.Add(-3 * time.Second)}, "3s"
	stuck := row("ns", "c-waiting-long", reason.OutcomeTranslate, translated)
	stuck.Admission, stuck.WaitingSince, stuck.Waiting = "uid-3", &metav1.Time{Time: now.Add(-3 * time.Minute)}, "3m0s"
	kept := row("ns", "d-blocked", reason.OutcomeKeepLegacy, blocked)
	kept.Template = "claimbridge-never"
	unservable := row("ns", "d-unservable", reason.OutcomeKeepLegacy, reason.Reason{Code: explain.ReasonLegacyUnservable, Severity: reason.SeverityWarning, Message: "no node offers nvidia.com/gpu any more"})
	unservable.Status = decisions.StatusBlocked
	busy := row("ns", "d-kept", reason.OutcomeKeepLegacy, reason.Reason{Code: decide.ReasonDRABusyLegacyFree, Severity: reason.SeverityInfo, Message: "the device plugin runs it now"})
	busy.Status = decisions.StatusKept
	skipped := report.Row{Row: decisions.Row{Kind: "Pod", Namespace: "ns", Name: "e-skipped", Outcome: reason.OutcomeSkip}}
	pinned := row("ns", "e-pinned", reason.OutcomeSkip, reason.Reason{Code: translate.ReasonNodeNamePreset, Severity: reason.SeverityWarning, Message: "bound at creation"})
	pinned.Status, pinned.Unseen = decisions.StatusSkipped, true
	two, one, six, sixteen := int32(2), int32(1), int32(6), int32(16)
	trainerMigrated := row("ns", "trainer", reason.OutcomeTranslate, translated)
	trainerMigrated.Kind, trainerMigrated.Status, trainerMigrated.Replicas, trainerMigrated.BoundTo = "Deployment", decisions.StatusMigrated, &two, []string{"n1", "n2"}
	trainerMigrated.Template = "claimbridge-t"
	trainerWaiting := row("ns", "trainer", reason.OutcomeTranslate, translated)
	trainerWaiting.Kind, trainerWaiting.Status, trainerWaiting.Replicas, trainerWaiting.Waiting = "Deployment", decisions.StatusWaiting, &one, "5s"
	trainerWaiting.Template = "claimbridge-t"
	// A burst: 16 pods on DRA, 6 kept on the device plugin that runs them.
	burstMigrated := row("ns", "burst", reason.OutcomeTranslate, translated)
	burstMigrated.Kind, burstMigrated.Status, burstMigrated.Replicas, burstMigrated.BoundTo = "Deployment", decisions.StatusMigrated, &sixteen, []string{"dra-0"}
	burstKept := row("ns", "burst", reason.OutcomeKeepLegacy, reason.Reason{Code: decide.ReasonDRABusyLegacyFree, Severity: reason.SeverityInfo, Message: "the device plugin runs it now"})
	burstKept.Kind, burstKept.Status, burstKept.Replicas, burstKept.BoundTo = "Deployment", decisions.StatusKept, &six, []string{"legacy-0"}

	rep := report.New("live", "default", []report.Row{skipped, pinned, kept, unservable, busy, waiting, stuck, ready, migrated, trainerMigrated, trainerWaiting, burstMigrated, burstKept})
	rep.Reasons = explain.Reasons()
	got := Results(rep, 2*time.Minute, now)

	catalog := explain.Reasons()
	busyMsg := "DRABusyLegacyFree: the device plugin runs it now" + remedyOf(catalog, decide.ReasonDRABusyLegacyFree)
	want := []PolicyReportResult{
		{Rule: "DRABusyLegacyFree", Severity: SeverityInfo, Result: ResultPass,
			Subjects:    []corev1.ObjectReference{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "burst"}},
			Description: busyMsg,
			Properties: map[string]string{"decision": "KeptLegacy", "status": "Kept", "statuses": "6 Kept, 16 Migrated", "devices": "2× nvidia.com/gpu",
				"replicas": "22", "node": "dra-0,legacy-0"}},
		{Rule: "Translated", Severity: SeverityInfo, Result: ResultPass,
			Subjects:    []corev1.ObjectReference{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "trainer"}},
			Description: "Translated: translated" + remedyOf(catalog, translate.ReasonTranslated),
			Properties: map[string]string{"decision": "Translated", "status": "Waiting", "statuses": "1 Waiting, 2 Migrated", "devices": "2× nvidia.com/gpu",
				"replicas": "3", "node": "n1,n2", "template": "claimbridge-t", "waiting": "5s"}},
		{Rule: "Translated", Severity: SeverityInfo, Result: ResultPass,
			Subjects:    []corev1.ObjectReference{{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "a-migrated"}},
			Description: "Translated: translated" + remedyOf(catalog, translate.ReasonTranslated),
			Properties:  map[string]string{"decision": "Translated", "status": "Migrated", "devices": "2× nvidia.com/gpu", "template": "claimbridge-abc", "advice": "could run on node-1 (first node found)"}},
		{Rule: "Translated", Severity: SeverityInfo, Result: ResultWarn,
			Subjects:    []corev1.ObjectReference{{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "b-ready"}},
			Description: "Translated: translated" + remedyOf(catalog, translate.ReasonTranslated),
			Properties:  map[string]string{"decision": "WouldTranslate", "status": "ReadyNow", "devices": "2× nvidia.com/gpu"}},
		{Rule: "Translated", Severity: SeverityInfo, Result: ResultPass,
			Subjects:    []corev1.ObjectReference{{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "c-waiting"}},
			Description: "Translated: translated" + remedyOf(catalog, translate.ReasonTranslated),
			Properties:  map[string]string{"decision": "Translated", "status": "Waiting", "devices": "2× nvidia.com/gpu", "waiting": "3s"}},
		{Rule: "Translated", Severity: SeverityHigh, Result: ResultFail,
			Subjects:    []corev1.ObjectReference{{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "c-waiting-long"}},
			Description: "Translated: translated" + remedyOf(catalog, translate.ReasonTranslated),
			Properties:  map[string]string{"decision": "Translated", "status": "Waiting", "devices": "2× nvidia.com/gpu", "waiting": "3m0s"}},
		{Rule: "Infeasible", Severity: SeverityMedium, Result: ResultWarn,
			Subjects:    []corev1.ObjectReference{{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "d-blocked"}},
			Description: "Infeasible: no DRA device fits" + remedyOf(catalog, decide.ReasonInfeasible),
			Properties:  map[string]string{"decision": "KeptLegacy", "status": "Blocked", "devices": "2× nvidia.com/gpu"}},
		{Rule: "DRABusyLegacyFree", Severity: SeverityInfo, Result: ResultPass,
			Subjects:    []corev1.ObjectReference{{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "d-kept"}},
			Description: busyMsg,
			Properties:  map[string]string{"decision": "KeptLegacy", "status": "Kept", "devices": "2× nvidia.com/gpu"}},
		{Rule: "LegacyUnservable", Severity: SeverityHigh, Result: ResultFail,
			Subjects:    []corev1.ObjectReference{{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "d-unservable"}},
			Description: "LegacyUnservable: no node offers nvidia.com/gpu any more" + remedyOf(catalog, explain.ReasonLegacyUnservable),
			Properties:  map[string]string{"decision": "KeptLegacy", "status": "Blocked", "devices": "2× nvidia.com/gpu"}},
		{Rule: "NodeNamePreset", Severity: SeverityMedium, Result: ResultWarn,
			Subjects:    []corev1.ObjectReference{{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "e-pinned"}},
			Description: "NodeNamePreset: bound at creation" + remedyOf(catalog, translate.ReasonNodeNamePreset),
			Properties:  map[string]string{"decision": "Skipped", "status": "Skipped", "devices": "2× nvidia.com/gpu"}},
		{Rule: "Skip", Severity: SeverityInfo, Result: ResultSkip,
			Subjects:    []corev1.ObjectReference{{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "e-skipped"}},
			Description: "Skipped (decision Skipped)",
			Properties:  map[string]string{"decision": "Skipped", "status": "Skipped"}},
	}
	for i := range want {
		want[i].Source, want[i].Policy, want[i].Category = "claimbridge", "claimbridge", "DRA migration"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(PolicyReportSummary{Pass: 5, Warn: 3, Fail: 2, Skip: 1}, Summarize(got)); diff != "" {
		t.Errorf("summary (-want,+got):\n%s", diff)
	}
}

// The same decision says the same in the pod's Event and in its
// workload's PolicyReport result: a Warning Event is a medium or high
// severity, a Normal one info.
func TestEventTypeAndSeverityAgree(t *testing.T) {
	for _, code := range explain.Reasons().Codes() {
		for _, decision := range []string{api.DecisionTranslated, api.DecisionWouldTranslate, api.DecisionKeptLegacy, api.DecisionSkipped, ""} {
			for _, served := range []bool{true, false} {
				j := explain.Judge(decision, code, served)
				sev := severityOf(j)
				if (j.EventType() == corev1.EventTypeWarning) != (sev == SeverityMedium || sev == SeverityHigh) {
					t.Errorf("%s %q served=%v: Event %s, severity %s", code, decision, served, j.EventType(), sev)
				}
				if j.Result == explain.ResultFail && !j.Warning {
					t.Errorf("%s %q served=%v: fails with a Normal Event", code, decision, served)
				}
			}
		}
	}
}

func remedyOf(c reason.Catalog, code reason.Code) string {
	if r := c.Remedy(code); r != "" {
		return " — " + r
	}
	return ""
}

// source is a live report per namespace.
type source map[string][]report.Row

func (s source) Report(_ context.Context, ns, policy string) *report.Report {
	return report.New("live", policy, s[ns])
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func served(gv schema.GroupVersion, resource string) *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: gv.String(), APIResources: []metav1.APIResource{{Name: resource, Namespaced: true}}}
}

type fixture struct {
	writer  *Writer
	dynamic *dynamicfake.FakeDynamicClient
	disc    *fakediscovery.FakeDiscovery
	src     source
}

func newFixture(reports API, existing ...runtime.Object) *fixture {
	enforce, audit := map[string]string{api.LabelMode: "enforce"}, map[string]string{api.LabelMode: "audit"}
	client := fake.NewClientset(
		namespace("team-a", enforce), namespace("team-b", audit), namespace("plain", nil),
		namespace("kube-system", enforce), namespace("claimbridge-system", enforce), namespace("gone", nil),
	)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		WGPolicyGVR: "PolicyReportList", OpenReportsGVR: "ReportList",
	}, existing...)
	src := source{
		"team-a": {row("team-a", "train", reason.OutcomeKeepLegacy, reason.Reason{Code: decide.ReasonInfeasible, Severity: reason.SeverityWarning, Message: "no fit"})},
		"team-b": {row("team-b", "infer", reason.OutcomeTranslate)},
		"plain":  {row("plain", "x", reason.OutcomeTranslate)},
	}
	clock := time.Unix(1000, 0)
	return &fixture{
		writer: &Writer{API: reports, Client: client, Dynamic: dyn, Source: src, Namespace: "claimbridge-system",
			Now: func() time.Time { return clock }},
		dynamic: dyn, disc: client.Discovery().(*fakediscovery.FakeDiscovery), src: src,
	}
}

func (f *fixture) reports(t *testing.T, gvr schema.GroupVersionResource) map[string]*unstructured.Unstructured {
	t.Helper()
	list, err := f.dynamic.Resource(gvr).Namespace("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		out[list.Items[i].GetNamespace()+"/"+list.Items[i].GetName()] = &list.Items[i]
	}
	return out
}

func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.dynamic.Actions() {
		if a.GetVerb() != "list" {
			out = append(out, a.GetVerb()+" "+a.GetNamespace())
		}
	}
	f.dynamic.ClearActions()
	return out
}

func TestWriterKeepsOneReportPerOptedInNamespace(t *testing.T) {
	stale := &unstructured.Unstructured{}
	stale.SetAPIVersion("wgpolicyk8s.io/v1alpha2")
	stale.SetKind("PolicyReport")
	stale.SetNamespace("gone")
	stale.SetName(Name)
	stale.SetLabels(map[string]string{ManagedByLabel: "claimbridge"})
	f := newFixture(APIWGPolicy, stale)

	// No CRD: nothing is written, nothing deleted.
	if err := f.writer.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := f.writes(); len(got) != 0 {
		t.Fatalf("wrote %v while the CRD is not served", got)
	}

	f.disc.Resources = []*metav1.APIResourceList{served(WGPolicyGVR.GroupVersion(), "policyreports")}
	if err := f.writer.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"create team-a", "create team-b", "delete gone"}, f.writes()); diff != "" {
		t.Errorf("writes (-want,+got):\n%s", diff)
	}
	reports := f.reports(t, WGPolicyGVR)
	if diff := cmp.Diff([]string{"team-a/claimbridge", "team-b/claimbridge"}, keys(reports)); diff != "" {
		t.Fatalf("reports (-want,+got):\n%s", diff)
	}
	var a PolicyReport
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(reports["team-a/claimbridge"].Object, &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Results) != 1 || a.Results[0].Result != ResultWarn || a.Results[0].Subjects[0].Name != "train" || a.Summary.Warn != 1 ||
		a.Results[0].Timestamp.Seconds != 1000 {
		t.Errorf("team-a's report: %+v", a)
	}

	// Nothing changed: nothing written.
	if err := f.writer.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := f.writes(); len(got) != 0 {
		t.Errorf("rewrote unchanged reports: %v", got)
	}

	// A second workload in team-a: one update, the first result keeps its time.
	f.src["team-a"] = append(f.src["team-a"], row("team-a", "serve", reason.OutcomeTranslate))
	f.writer.Now = func() time.Time { return time.Unix(2000, 0) }
	if err := f.writer.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"update team-a"}, f.writes()); diff != "" {
		t.Errorf("writes (-want,+got):\n%s", diff)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(f.reports(t, WGPolicyGVR)["team-a/claimbridge"].Object, &a); err != nil {
		t.Fatal(err)
	}
	var times []int64
	for _, r := range a.Results {
		times = append(times, r.Timestamp.Seconds)
	}
	if diff := cmp.Diff([]int64{2000, 1000}, times); diff != "" { // serve, then train
		t.Errorf("timestamps (-want,+got):\n%s", diff)
	}
}

func TestWriterWritesOpenReports(t *testing.T) {
	f := newFixture(APIOpenReports)
	f.disc.Resources = []*metav1.APIResourceList{served(OpenReportsGVR.GroupVersion(), "reports")}
	if err := f.writer.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	u := f.reports(t, OpenReportsGVR)["team-b/claimbridge"]
	if u == nil {
		t.Fatal("no Report in team-b")
	}
	var r openreportsv1alpha1.Report
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
		t.Fatal(err)
	}
	if r.Kind != "Report" || r.Source != "claimbridge" || len(r.Results) != 1 || r.Results[0].Result != "warn" || r.Summary.Warn != 1 ||
		r.Results[0].Subjects[0].Name != "infer" {
		t.Errorf("team-b's Report: %+v", r)
	}
}

func TestParseAPI(t *testing.T) {
	for _, s := range []string{"wgpolicyk8s", "openreports", "off"} {
		if _, err := ParseAPI(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := ParseAPI("kyverno"); err == nil {
		t.Error("kyverno accepted")
	}
}

func keys(m map[string]*unstructured.Unstructured) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestBoundKeepsWhatNeedsAttention(t *testing.T) {
	var in []PolicyReportResult
	for i, r := range []PolicyResult{ResultPass, ResultSkip, ResultFail, ResultWarn, ResultPass, ResultFail} {
		in = append(in, PolicyReportResult{Rule: strconv.Itoa(i), Result: r})
	}
	var got []string
	for _, r := range Bound(in, 3) {
		got = append(got, r.Rule+string(r.Result))
	}
	if diff := cmp.Diff([]string{"2fail", "3warn", "5fail"}, got); diff != "" {
		t.Errorf("kept (-want,+got):\n%s", diff)
	}
	if len(Bound(in, 10)) != len(in) {
		t.Error("results under the bound were dropped")
	}
}

func TestMessageSaysTheRemedyOnce(t *testing.T) {
	catalog := explain.Reasons()
	remedy := catalog.Remedy(decide.ReasonInfeasible)
	told := reason.Reason{Code: decide.ReasonInfeasible, Severity: reason.SeverityWarning, Message: "KeptLegacy at admission — " + remedy}
	rep := report.New("live", "default", []report.Row{row("ns", "eval", reason.OutcomeKeepLegacy, told)})
	got := Results(rep, 0, time.Time{})[0].Description
	if want := "Infeasible: " + told.Message; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
