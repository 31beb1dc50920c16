package suite

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/e2e/binary"
	"github.com/claimbridge/claimbridge/e2e/chart"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/policyreport"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

// TestPolicyReportsPerNamespaceSurviveARestart installs the PolicyReport CRD
// the chart ships (reports.installCRD) and runs `claimbridge serve` from the
// image with its default --policy-reports, as the chart's ServiceAccount with
// the chart's RBAC, leader of a Lease of its own (the suite's server writes no
// reports). An enforce namespace holds two workloads: a Deployment of two L4
// pods, translated, and a pod asking for an A100 40GB that only device-plugin
// nodes have, kept. The namespace gets one PolicyReport with one result per
// workload (the kept pod runs on a device-plugin node, so it is a warn,
// not a fail: its migration needs a decision); the webhook is restarted (a new process, its report store empty)
// after the report's results were wiped, and writes the same results again,
// from the pods' decision annotations.
func TestPolicyReportsPerNamespaceSurviveARestart(t *testing.T) {
	ctx := t.Context()
	ns, _ := setup(t, "enforce", "mixed")
	installReportsCRD(t)

	const release = "claimbridge-reports"
	installChartRBAC(t, release, map[string]any{
		"fullnameOverride": release,
		"tls":              map[string]any{"mode": "cert-manager"},
		"leaderElection":   map[string]any{"id": release},
	})

	pod := builders.MakePod("trainer", ns).Container("trainer").Limit("nvidia.com/gpu", "1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj()
	labels := map[string]string{"app": "trainer"}
	pod.Labels = labels
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create(t, builders.MakePod("eval", ns).Container("eval").Limit("nvidia.com/gpu", "2").NodeSelector("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB").Obj())
	eventually(t, "the Deployment's two pods are bound", func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=trainer"})
		if err != nil {
			return false, err
		}
		n := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n == 2, nil
	})

	writer := startReportWriter(t, release)
	reports := dynamicClient(t).Resource(policyreport.WGPolicyGVR)
	var first policyreport.PolicyReport
	eventually(t, "one PolicyReport in the namespace with a result per workload", func(ctx context.Context) (bool, error) {
		r, ok, err := getPolicyReport(ctx, reports, ns)
		if !ok || err != nil {
			return false, err
		}
		first = r
		return len(r.Results) == 2, nil
	})
	if y, err := yaml.Marshal(first.Results); err == nil {
		t.Logf("kubectl -n %s get policyreport claimbridge: results\n%s", ns, y)
	}
	want := []resultSummary{
		{Subject: "apps/v1 Deployment " + ns + "/trainer", Result: "pass", Status: "Migrated", Decision: "Translated", Replicas: "2"},
		{Subject: "v1 Pod " + ns + "/eval", Result: "warn", Status: "Blocked", Decision: "KeptLegacy"},
	}
	if diff := cmp.Diff(want, summarize(first)); diff != "" {
		t.Errorf("results (-want,+got):\n%s", diff)
	}
	if first.Summary.Pass != 1 || first.Summary.Warn != 1 || first.Labels[policyreport.ManagedByLabel] != "claimbridge" {
		t.Errorf("summary %+v, labels %v", first.Summary, first.Labels)
	}
	for _, r := range first.Results {
		if r.Source != "claimbridge" || r.Policy != "claimbridge" || r.Rule == "" || r.Description == "" || r.Timestamp.Seconds == 0 {
			t.Errorf("result %+v lacks its source, policy, rule, message or time", r)
		}
	}
	for _, other := range []string{ownNamespace, metav1.NamespaceSystem} {
		if _, ok, _ := getPolicyReport(ctx, reports, other); ok {
			t.Errorf("a report in %s", other)
		}
	}

	// The webhook stops; the report stays. Its results are wiped while it
	// is down, and the new process writes them again from the pods.
	writer.Process().Stop()
	u, err := reports.Namespace(ns).Get(ctx, policyreport.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the report is gone after the webhook stopped: %v", err)
	}
	unstructured.RemoveNestedField(u.Object, "results")
	unstructured.RemoveNestedField(u.Object, "summary")
	if _, err := reports.Namespace(ns).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := writer.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { writer.Process().Stop() })
	var rebuilt policyreport.PolicyReport
	eventually(t, "the restarted webhook writes the results again", func(ctx context.Context) (bool, error) {
		r, ok, err := getPolicyReport(ctx, reports, ns)
		if !ok || err != nil {
			return false, err
		}
		rebuilt = r
		return len(r.Results) == 2, nil
	})
	if diff := cmp.Diff(first.Results, rebuilt.Results, cmp.Transformer("noTime", func(r policyreport.PolicyReportResult) policyreport.PolicyReportResult {
		r.Timestamp = metav1.Timestamp{}
		return r
	})); diff != "" {
		t.Errorf("results after the restart (-before,+after):\n%s", diff)
	}
	if rebuilt.Summary != first.Summary {
		t.Errorf("summary after the restart %+v, before %+v", rebuilt.Summary, first.Summary)
	}

	// The namespace opts out: its report goes.
	nsObj, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(nsObj.Labels, cluster.ModeLabel)
	if _, err := client.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the report of a namespace that opted out is deleted", func(ctx context.Context) (bool, error) {
		_, ok, err := getPolicyReport(ctx, reports, ns)
		return !ok && err == nil, nil
	})
}

// TestABurstThatRunsIsNoFailure: on 16 DRA GPUs and 16 free device-plugin
// GPUs, a Deployment of 22 one-GPU pods ends with 16 translated on DRA and
// 6 kept on the device plugin that runs them (DRABusyLegacyFree), all 22
// bound. Nothing is wrong: the PolicyReport's result for the Deployment is
// a pass, its kept pods are Kept in the live report (not Blocked), and
// their Events are Normal, as the result's severity (info) says.
func TestABurstThatRunsIsNoFailure(t *testing.T) {
	ctx := t.Context()
	ns, fl := setup(t, "enforce", "dgx-h100", "legacy-gfd")
	dra, legacy := nodeNames(fl[:1]), nodeNames(fl[1:])
	installReportsCRD(t)
	const release = "claimbridge-burst-reports"
	installChartRBAC(t, release, map[string]any{
		"fullnameOverride": release,
		"tls":              map[string]any{"mode": "cert-manager"},
		"leaderElection":   map[string]any{"id": release},
	})
	tmpl := trainerTemplate("burst")
	tmpl.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("1")
	start := time.Now()
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "burst"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](22), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "burst"}},
			Template: tmpl},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	translated, onLegacy := settled(t, ns, "burst", 22, dra, legacy)
	if translated != 16 || onLegacy != 6 {
		t.Fatalf("%d translated and %d kept, want 16 and 6", translated, onLegacy)
	}

	startReportWriter(t, release)
	reports := dynamicClient(t).Resource(policyreport.WGPolicyGVR)
	var got policyreport.PolicyReport
	eventually(t, "the PolicyReport counts the Deployment's 22 pods", func(ctx context.Context) (bool, error) {
		r, ok, err := getPolicyReport(ctx, reports, ns)
		if !ok || err != nil {
			return false, err
		}
		got = r
		return len(r.Results) == 1 && r.Results[0].Properties["replicas"] == "22", nil
	})
	t.Logf("22 pods bound and their PolicyReport written in %s", time.Since(start).Round(time.Millisecond))
	if y, err := yaml.Marshal(got.Results); err == nil {
		t.Logf("kubectl -n %s get policyreport claimbridge: results\n%s", ns, y)
	}
	r := got.Results[0]
	if r.Result != policyreport.ResultPass || r.Severity != policyreport.SeverityInfo || got.Summary.Fail != 0 || got.Summary.Warn != 0 {
		t.Errorf("the burst's result is %s (severity %s), summary %+v; want a pass of severity info", r.Result, r.Severity, got.Summary)
	}
	if want := "6 Kept, 16 Migrated"; r.Properties["statuses"] != want || r.Rule != "DRABusyLegacyFree" {
		t.Errorf("rule %s, statuses %q; want DRABusyLegacyFree speaking for %q", r.Rule, r.Properties["statuses"], want)
	}

	rep, err := fetchReport(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rep.Items {
		if row.Status == decisions.StatusBlocked {
			t.Errorf("a row of the live report is Blocked: %s %s (%d pods): %s", row.Kind, row.Name, row.Pods(), row.Headline())
		}
	}

	// 5 Events per pod shape, then the ReplicaSet's counts the others.
	var kept []corev1.Event
	eventually(t, "the KeptLegacy Events of the kept pods and their ReplicaSet", func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=KeptLegacy"})
		if err != nil {
			return false, err
		}
		kept = list.Items
		pods, owners := 0, 0
		for _, e := range kept {
			switch e.InvolvedObject.Kind {
			case "Pod":
				pods++
			case "ReplicaSet":
				owners++
			}
		}
		return pods >= 5 && owners >= 1, nil
	})
	for _, e := range kept {
		if e.Type != corev1.EventTypeNormal || !strings.Contains(e.Message, "DRABusyLegacyFree: nothing to do") {
			t.Errorf("%s %s: %s %s %q, want a Normal Event that says there is nothing to do", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
		}
	}
}

// resultSummary is what the test compares of a result.
type resultSummary struct {
	Subject, Result, Status, Decision, Replicas string
}

func summarize(r policyreport.PolicyReport) []resultSummary {
	var out []resultSummary
	for _, res := range r.Results {
		s := resultSummary{Result: string(res.Result), Status: res.Properties["status"], Decision: res.Properties["decision"], Replicas: res.Properties["replicas"]}
		if s.Replicas == "1" {
			s.Replicas = ""
		}
		for _, ref := range res.Subjects {
			s.Subject = ref.APIVersion + " " + ref.Kind + " " + ref.Namespace + "/" + ref.Name
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b resultSummary) int { return strings.Compare(a.Subject, b.Subject) })
	return out
}

func dynamicClient(t *testing.T) *dynamic.DynamicClient {
	t.Helper()
	d, err := dynamic.NewForConfig(tc.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// getPolicyReport reads claimbridge's report of a namespace; ok is false
// when there is none.
func getPolicyReport(ctx context.Context, reports dynamic.NamespaceableResourceInterface, ns string) (policyreport.PolicyReport, bool, error) {
	var r policyreport.PolicyReport
	u, err := reports.Namespace(ns).Get(ctx, policyreport.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
	}
	err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r)
	return r, err == nil, err
}

// installReportsCRD creates the PolicyReport CRD the chart renders with
// reports.installCRD and waits until kube-apiserver serves it; it is removed
// (with every report) at the end of the test.
func installReportsCRD(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	r, err := chart.Render(ctx, map[string]any{"reports": map[string]any{"installCRD": true}}, chart.Options{Namespace: ownNamespace})
	if err != nil {
		t.Fatal(err)
	}
	found := r.Find("CustomResourceDefinition", "policyreports.wgpolicyk8s.io")
	if len(found) != 1 {
		t.Fatalf("the chart renders %d PolicyReport CRDs", len(found))
	}
	crds := dynamicClient(t).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd := found[0].DeepCopy()
	crd.SetResourceVersion("")
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cluster.PollTimeout)
		defer cancel()
		_ = crds.Delete(ctx, crd.GetName(), metav1.DeleteOptions{})
	})
	eventually(t, "kube-apiserver serves wgpolicyk8s.io/v1alpha2 policyreports", func(context.Context) (bool, error) {
		list, err := client.Discovery().ServerResourcesForGroupVersion(policyreport.WGPolicyGVR.GroupVersion().String())
		if err != nil {
			return false, nil
		}
		return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "policyreports" }), nil
	})
}

// startReportWriter runs `claimbridge serve` from the image as the chart's
// ServiceAccount sa, leader of the Lease sa (no MutatingWebhookConfiguration
// points at it: the suite's server admits the pods), writing PolicyReports
// (the default) every second.
func startReportWriter(t *testing.T, sa string) *binary.Server {
	t.Helper()
	srv, _, _ := serveAs(t, sa, "policyreports-", "--leader-election-id", sa, "--policy-reports-interval", "1s")
	t.Cleanup(func() { srv.Process().Stop() })
	return srv
}
