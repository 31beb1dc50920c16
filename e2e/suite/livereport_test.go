package suite

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/testing/browser"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/reportpage"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// The live report of a Deployment of three replicas, a pod in an audit
// namespace and two pods the chart's matchConditions keep from the webhook,
// read back from the page a browser shows: one row per workload, Migrated
// apart from Ready now, and the pods the webhook never saw counted.
func TestLiveReportCountsWorkloadsMigratedReadyNowAndUnseenPods(t *testing.T) {
	chromium := browser.ForTest(t)
	ns, fl := setup(t, "enforce", "mixed")
	auditNS := tc.Namespace(t, "live-report-audit-", map[string]string{cluster.ModeLabel: "audit"})
	l4 := builders.MakePod("", "").Container("server").Limit("nvidia.com/gpu", "1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj()
	if _, err := client.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "trainer"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "trainer"}}, Spec: l4.Spec}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create(t, builders.MakePod("infer", auditNS).Container("server").Limit("nvidia.com/gpu", "1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj())
	create(t, builders.MakePod("pinned", ns).Container("c").Limit("nvidia.com/gpu", "1").NodeName(fl[0].NodeName("legacy-gfd-0")).Obj())
	create(t, builders.MakePod("for-volcano", ns).Container("c").Limit("nvidia.com/gpu", "2").SchedulerName("volcano").Obj())

	type row struct {
		Status   decisions.Status
		Replicas int32
		Code     reason.Code
		Unseen   bool
	}
	rowsOf := func(rep report.Report) map[string]row {
		out := map[string]row{}
		for _, r := range rep.Items {
			got := row{Status: r.Status, Replicas: ptr.Deref(r.Replicas, 1), Unseen: r.Unseen}
			if r.Unseen && r.Decisive != nil {
				got.Code = r.Decisive.Code
			}
			out[r.Kind+"/"+r.Name] = got
		}
		return out
	}
	want := map[string]row{
		"Deployment/trainer": {Status: decisions.StatusMigrated, Replicas: 3},
		"Pod/pinned":         {Status: decisions.StatusSkipped, Replicas: 1, Code: translate.ReasonNodeNamePreset, Unseen: true},
		"Pod/for-volcano":    {Status: decisions.StatusSkipped, Replicas: 1, Code: translate.ReasonSchedulerNotListed, Unseen: true},
	}
	var rep report.Report
	eventually(t, "the trainer's three replicas migrated, in one row", func(context.Context) (bool, error) {
		rep = liveReport(t, ns)
		return cmp.Equal(want, rowsOf(rep)), nil
	})
	for _, r := range rep.Items {
		if r.Status == decisions.StatusMigrated && len(r.BoundTo) == 0 {
			t.Errorf("the Migrated row names no node its pods run on")
		}
	}
	eventually(t, "the audit namespace's pod ready to move", func(context.Context) (bool, error) {
		got := rowsOf(liveReport(t, auditNS))
		return cmp.Equal(map[string]row{"Pod/infer": {Status: decisions.StatusReadyNow, Replicas: 1}}, got), nil
	})

	reportURL := metricsURL + "/report?namespace=" + ns
	_, js := get(t, reportURL+"&format=json")
	served, err := report.Read(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "_output"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	reportpage.CheckInBrowser(t, chromium, reportURL+"&format=html", served, filepath.Join(dir, "live-report-webhook"))
	dom, err := chromium.DumpDOM(t.Context(), reportURL+"&format=html", 1280, 900)
	if err != nil {
		t.Fatal(err)
	}
	p, err := reportpage.Parse(dom)
	if err != nil {
		t.Fatal(err)
	}
	kpi := func(key string) string {
		ns := p.All(reportpage.WithAttr("data-kpi", key))
		if len(ns) != 1 {
			t.Errorf("%d elements with data-kpi=%s", len(ns), key)
			return ""
		}
		return strings.TrimSpace(reportpage.Text(ns[0]))
	}
	// Three workloads of five pods; the trainer's three devices migrated;
	// the two pods kept away with their three devices counted.
	for key, want := range map[string]string{"workloads": "3", "migrated": "1", "migrated-devices": "3", "now": "0", "unseen-pods": "2", "unseen-devices": "3", "devices": "6"} {
		if got := kpi(key); got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
	if sub := reportpage.Text(p.All(reportpage.WithAttr("data-kpi", "workloads"))[0].Parent); !strings.Contains(sub, "5 pods") {
		t.Errorf("the workloads figure says %q, want 5 pods", sub)
	}
	objects, _ := p.Rows()
	if slices.Index(objects, ns+"/Deployment/trainer") < 0 {
		t.Errorf("the table lists %q, without the trainer's row", objects)
	}
}
