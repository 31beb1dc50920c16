// Package policyreport writes claimbridge's live audit where the policy
// ecosystem looks for results: one report named claimbridge in every
// opted-in namespace, one result per workload, as a
// wgpolicyk8s.io/v1alpha2 PolicyReport (what Kyverno, Kubewarden and Trivy
// write and Policy Reporter reads) or an openreports.io/v1alpha1 Report
// (the API those reports move to). Results is pure: rows in, results out;
// the Writer is the leader's runnable that keeps the reports in step with
// the live report, and rebuilds them from it after a restart.
package policyreport

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	openreportsv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/report"
)

// API is the kind of report written.
type API string

// APIs.
const (
	// APIWGPolicy: wgpolicyk8s.io/v1alpha2 PolicyReport.
	APIWGPolicy API = "wgpolicyk8s"
	// APIOpenReports: openreports.io/v1alpha1 Report.
	APIOpenReports API = "openreports"
	// APIOff: no reports.
	APIOff API = "off"
)

// APIs lists the values of the serve flag.
var APIs = []API{APIWGPolicy, APIOpenReports, APIOff}

// OpenReportsGVR is the resource of the openreports.io Reports.
var OpenReportsGVR = schema.GroupVersionResource{Group: "openreports.io", Version: "v1alpha1", Resource: "reports"}

// GVR is the API's resource.
func (a API) GVR() schema.GroupVersionResource {
	if a == APIOpenReports {
		return OpenReportsGVR
	}
	return WGPolicyGVR
}

// kind is the API's kind.
func (a API) kind() string {
	if a == APIOpenReports {
		return "Report"
	}
	return "PolicyReport"
}

// DefaultInterval is how often at most the reports are brought up to date.
const DefaultInterval = 15 * time.Second

// DefaultMaxResults is the default bound of one report's results (about
// 1 KiB each).
const DefaultMaxResults = 1000

// Source gives a namespace's live report: the webhook's ReportStore.
type Source interface {
	Report(ctx context.Context, namespace, policy string) *report.Report
}

// Writer keeps the reports: every Interval it compares what each opted-in
// namespace's report should say with what it says and writes only the
// namespaces that changed; it deletes its reports in namespaces that opted
// out, and never writes in kube-system or claimbridge's own namespace.
// While the API's CRD is not served it writes nothing and says so once,
// and starts when the CRD appears. Run it on the leader only.
type Writer struct {
	// API to write. Required; APIOff returns at once.
	API API
	// Client lists the namespaces and asks discovery whether the CRD is
	// served. Required.
	Client kubernetes.Interface
	// Dynamic reads and writes the reports. Required.
	Dynamic dynamic.Interface
	// Source of the rows. Required.
	Source Source
	// Policy names the policy in force (the live report's policy). Default "".
	Policy func() string
	// Namespace is claimbridge's own namespace: never written. Required.
	Namespace string
	// Interval between two passes. Default DefaultInterval.
	Interval time.Duration
	// Ready says the source holds what it will hold (its caches synced):
	// the first pass waits for it, so that a restart does not write
	// reports emptier than they are. Default: ready.
	Ready func() bool
	// StrandedAfter: a translated pod still waiting for its devices this
	// long after its admission makes its workload's result fail (serve's
	// --stranded-after, after which the strand controller says so with a
	// Warning Event). Default 0: a waiting pod is translated, a pass.
	StrandedAfter time.Duration
	// Now stamps new results and times the waits. Default time.Now.
	Now func() time.Time
	// MaxResults bounds the results of one report, so that it stays well
	// within what the API server stores for an object: past it, the
	// results that need attention most (fail, warn, pass, then skip) are
	// kept. Default DefaultMaxResults.
	MaxResults int
	// Log of the writer. Default: discard.
	Log logr.Logger

	served *bool
}

// Start runs passes until ctx ends.
func (w *Writer) Start(ctx context.Context) error {
	if w.API == APIOff || w.API == "" {
		w.Log.Info("reports off (--policy-reports=off): no PolicyReports are written")
		return nil
	}
	if w.Client == nil || w.Dynamic == nil || w.Source == nil || w.Namespace == "" {
		return errors.New("policy reports: Client, Dynamic, Source and Namespace are required")
	}
	interval := w.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	tick := time.NewTicker(min(interval, 200*time.Millisecond))
	defer tick.Stop()
	for w.Ready != nil && !w.Ready() {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	tick.Reset(interval)
	for {
		if err := w.Sync(ctx); err != nil && ctx.Err() == nil {
			w.Log.Error(err, "writing reports", "api", w.API)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Sync brings every report up to date once.
func (w *Writer) Sync(ctx context.Context) error {
	served, err := w.crdServed()
	if err != nil {
		return err
	}
	if w.served == nil || *w.served != served {
		gvr := w.API.GVR()
		if served {
			w.Log.Info("writing reports", "api", w.API, "resource", gvr.Resource+"."+gvr.Group+"/"+gvr.Version)
		} else {
			w.Log.Info("reports off until their CRD is installed: the API server does not serve it (chart: reports.installCRD=true, or install Kyverno, Policy Reporter or the openreports CRDs)",
				"api", w.API, "resource", gvr.Resource+"."+gvr.Group+"/"+gvr.Version)
		}
		w.served = &served
	}
	if !served {
		return nil
	}
	namespaces, err := w.namespaces(ctx)
	if err != nil {
		return err
	}
	res := w.Dynamic.Resource(w.API.GVR())
	list, err := res.Namespace(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: ManagedByLabel + "=" + managedBy})
	if err != nil {
		return fmt.Errorf("list reports: %w", err)
	}
	existing := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		if u := &list.Items[i]; u.GetName() == Name {
			existing[u.GetNamespace()] = u
		}
	}
	policy := ""
	if w.Policy != nil {
		policy = w.Policy()
	}
	var errs []error
	for _, ns := range namespaces {
		if err := w.write(ctx, ns, policy, existing[ns]); err != nil {
			errs = append(errs, err)
		}
		delete(existing, ns)
	}
	for _, ns := range slices.Sorted(func(yield func(string) bool) {
		for ns := range existing {
			if !yield(ns) {
				return
			}
		}
	}) {
		uid := existing[ns].GetUID()
		err := res.Namespace(ns).Delete(ctx, Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete the report of namespace %s: %w", ns, err))
			continue
		}
		w.Log.Info("deleted the report of a namespace that opted out", "namespace", ns)
	}
	return errors.Join(errs...)
}

// crdServed asks discovery whether the API's resource is served.
func (w *Writer) crdServed() (bool, error) {
	gvr := w.API.GVR()
	list, err := w.Client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", gvr.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

// namespaces lists the opted-in namespaces claimbridge may write in, sorted.
func (w *Writer) namespaces(ctx context.Context) ([]string, error) {
	list, err := w.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{
		LabelSelector: api.LabelMode + " in (" + string(api.ModeEnforce) + "," + string(api.ModeAudit) + ")",
	})
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	var out []string
	for _, ns := range list.Items {
		if ns.Name == metav1.NamespaceSystem || ns.Name == w.Namespace || ns.DeletionTimestamp != nil {
			continue
		}
		out = append(out, ns.Name)
	}
	slices.Sort(out)
	return out, nil
}

// write creates or updates a namespace's report when what it says changed.
func (w *Writer) write(ctx context.Context, ns, policy string, have *unstructured.Unstructured) error {
	maxResults := w.MaxResults
	if maxResults <= 0 {
		maxResults = DefaultMaxResults
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	results := Bound(Results(w.Source.Report(ctx, ns, policy), w.StrandedAfter, now()), maxResults)
	var old []PolicyReportResult
	if have != nil {
		var cur PolicyReport
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(have.Object, &cur); err == nil {
			old = cur.Results
		}
	}
	Stamp(results, old, now())
	if have != nil && sameResults(old, results) {
		return nil
	}
	obj, err := w.object(ns, results)
	if err != nil {
		return err
	}
	res := w.Dynamic.Resource(w.API.GVR()).Namespace(ns)
	if have == nil {
		_, err = res.Create(ctx, obj, metav1.CreateOptions{FieldManager: managedBy})
		if err != nil {
			return fmt.Errorf("create the report of namespace %s: %w", ns, err)
		}
		return nil
	}
	obj.SetResourceVersion(have.GetResourceVersion())
	if _, err = res.Update(ctx, obj, metav1.UpdateOptions{FieldManager: managedBy}); err != nil {
		return fmt.Errorf("update the report of namespace %s: %w", ns, err)
	}
	return nil
}

// Stamp gives each result the timestamp of the same result in old (same
// subject, same everything but the time), else now: a result's time is
// when it was first found.
func Stamp(results, old []PolicyReportResult, now time.Time) {
	stamp := metav1.Timestamp{Seconds: now.Unix()}
	for i := range results {
		results[i].Timestamp = stamp
		for _, o := range old {
			if equalResult(o, results[i]) {
				results[i].Timestamp = o.Timestamp
				break
			}
		}
	}
}

// equalResult compares two results but their timestamps.
func equalResult(a, b PolicyReportResult) bool {
	a.Timestamp, b.Timestamp = metav1.Timestamp{}, metav1.Timestamp{}
	return reflect.DeepEqual(a, b)
}

// sameResults says whether a report's results are already these.
func sameResults(have, want []PolicyReportResult) bool {
	return slices.EqualFunc(have, want, func(a, b PolicyReportResult) bool { return reflect.DeepEqual(a, b) })
}

// object is the report of a namespace in the Writer's API.
func (w *Writer) object(ns string, results []PolicyReportResult) (*unstructured.Unstructured, error) {
	gvr := w.API.GVR()
	meta := metav1.ObjectMeta{Name: Name, Namespace: ns, Labels: map[string]string{ManagedByLabel: managedBy}}
	tm := metav1.TypeMeta{APIVersion: gvr.GroupVersion().String(), Kind: w.API.kind()}
	var obj any
	switch w.API {
	case APIOpenReports:
		obj = OpenReport(tm, meta, results)
	default:
		obj = &PolicyReport{TypeMeta: tm, ObjectMeta: meta, Summary: Summarize(results), Results: results}
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("encode the report of namespace %s: %w", ns, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// OpenReport is the openreports.io/v1alpha1 Report of the results: the same
// fields under the same JSON names, and the source on the report too.
func OpenReport(tm metav1.TypeMeta, meta metav1.ObjectMeta, results []PolicyReportResult) *openreportsv1alpha1.Report {
	s := Summarize(results)
	r := &openreportsv1alpha1.Report{
		TypeMeta: tm, ObjectMeta: meta, Source: SourceName,
		Summary: openreportsv1alpha1.ReportSummary{Pass: s.Pass, Fail: s.Fail, Warn: s.Warn, Error: s.Error, Skip: s.Skip},
	}
	for _, x := range results {
		r.Results = append(r.Results, openreportsv1alpha1.ReportResult{
			Source: x.Source, Policy: x.Policy, Rule: x.Rule, Category: x.Category,
			Severity: openreportsv1alpha1.ResultSeverity(x.Severity), Timestamp: x.Timestamp,
			Result: openreportsv1alpha1.Result(x.Result), Scored: x.Scored, Subjects: x.Subjects,
			ResourceSelector: x.SubjectSelector, Description: x.Description, Properties: x.Properties,
		})
	}
	return r
}

// ParseAPI reads the serve flag's value.
func ParseAPI(s string) (API, error) {
	for _, a := range APIs {
		if string(a) == s {
			return a, nil
		}
	}
	names := make([]string, len(APIs))
	for i, a := range APIs {
		names[i] = string(a)
	}
	return "", fmt.Errorf("--policy-reports must be one of %s", strings.Join(names, ", "))
}

// Bound keeps at most n results, those that need attention most (fail,
// warn, pass, skip; in their order within each), in their order.
func Bound(results []PolicyReportResult, n int) []PolicyReportResult {
	if len(results) <= n {
		return results
	}
	order := map[PolicyResult]int{ResultFail: 0, ResultError: 1, ResultWarn: 2, ResultPass: 3, ResultSkip: 4}
	idx := make([]int, len(results))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return order[results[a].Result] - order[results[b].Result] })
	keep := idx[:n]
	slices.Sort(keep)
	out := make([]PolicyReportResult, 0, n)
	for _, i := range keep {
		out = append(out, results[i])
	}
	return out
}
