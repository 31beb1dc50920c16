package chart

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestReportsCRDIsInstalledWhenAsked(t *testing.T) {
	cases := map[string]struct {
		values      string
		wantCRD     string
		wantVersion string
		wantView    []string // group/resource the view role grants
	}{
		"PolicyReports without their CRD (Kyverno or Policy Reporter installs it)": {
			values: "", wantView: []string{"wgpolicyk8s.io/policyreports"},
		},
		"PolicyReports with their CRD": {
			values: "reports: {installCRD: true}", wantCRD: "policyreports.wgpolicyk8s.io", wantVersion: "v1alpha2",
			wantView: []string{"wgpolicyk8s.io/policyreports"},
		},
		"openreports Reports with their CRD": {
			values: "reports: {api: openreports, installCRD: true}", wantCRD: "reports.openreports.io", wantVersion: "v1alpha1",
			wantView: []string{"openreports.io/reports"},
		},
		"reports off: no CRD and no view role, even when asked": {
			values: "reports: {api: \"off\", installCRD: true}",
		},
		"no view role when not aggregated": {
			values: "reports: {aggregateToView: false}",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := render(t, tc.values)
			crds := r.Find("CustomResourceDefinition", "")
			if tc.wantCRD == "" {
				if len(crds) != 0 {
					t.Fatalf("%d CRDs rendered, want none", len(crds))
				}
			} else {
				crd := decodeOne[apiextensionsv1.CustomResourceDefinition](t, r, "CustomResourceDefinition", tc.wantCRD)
				if crd.Annotations["helm.sh/resource-policy"] != "keep" {
					t.Errorf("the CRD is deleted on uninstall, with every other tool's reports: annotations %v", crd.Annotations)
				}
				if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
					t.Errorf("scope %s, want Namespaced", crd.Spec.Scope)
				}
				served := false
				for _, v := range crd.Spec.Versions {
					served = served || v.Name == tc.wantVersion && v.Served
				}
				if !served {
					t.Errorf("the CRD does not serve %s", tc.wantVersion)
				}
			}
			var view []string
			if found := r.Find("ClusterRole", "claimbridge-reports-view"); len(found) == 1 {
				role := decodeOne[rbacv1.ClusterRole](t, r, "ClusterRole", "claimbridge-reports-view")
				for _, agg := range []string{"view", "edit", "admin"} {
					if role.Labels["rbac.authorization.k8s.io/aggregate-to-"+agg] != "true" {
						t.Errorf("not aggregated to %s: %v", agg, role.Labels)
					}
				}
				for _, rule := range role.Rules {
					if diff := cmp.Diff([]string{"get", "list", "watch"}, rule.Verbs); diff != "" {
						t.Errorf("view verbs (-want,+got):\n%s", diff)
					}
					view = append(view, rule.APIGroups[0]+"/"+rule.Resources[0])
				}
			}
			if diff := cmp.Diff(tc.wantView, view); diff != "" {
				t.Errorf("reports the view role grants (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestGrafanaDashboardConfigMap(t *testing.T) {
	cases := map[string]struct {
		values        string
		wantNamespace string
		wantLabels    map[string]string
	}{
		"the sidecar's usual label in the release namespace": {
			values: "grafanaDashboard: {enabled: true}", wantNamespace: "claimbridge-system",
			wantLabels: map[string]string{"grafana_dashboard": "1"},
		},
		"another label and Grafana's namespace": {
			values:        "grafanaDashboard: {enabled: true, namespace: monitoring, labels: {dashboards: claimbridge}}",
			wantNamespace: "monitoring",
			wantLabels:    map[string]string{"dashboards": "claimbridge"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := render(t, tc.values)
			cm := decodeOne[corev1.ConfigMap](t, r, "ConfigMap", "claimbridge-dashboard")
			if cm.Namespace != tc.wantNamespace {
				t.Errorf("namespace %q, want %q", cm.Namespace, tc.wantNamespace)
			}
			for k, v := range tc.wantLabels {
				if cm.Labels[k] != v {
					t.Errorf("label %s = %q, want %q (labels %v)", k, cm.Labels[k], v, cm.Labels)
				}
			}
			var dashboard struct {
				UID    string           `json:"uid"`
				Panels []dashboardPanel `json:"panels"`
			}
			if err := json.Unmarshal([]byte(cm.Data["claimbridge.json"]), &dashboard); err != nil {
				t.Fatalf("claimbridge.json: %v", err)
			}
			if dashboard.UID != "claimbridge" || len(dashboard.Panels) == 0 {
				t.Errorf("dashboard uid %q with %d panels", dashboard.UID, len(dashboard.Panels))
			}
			if !slices.ContainsFunc(dashboard.Panels, func(p dashboardPanel) bool { return p.Title == "Admission latency" }) {
				t.Error("no admission latency panel")
			}
		})
	}
	if len(render(t, "").Find("ConfigMap", "claimbridge-dashboard")) != 0 {
		t.Error("the dashboard is rendered by default")
	}
}

type dashboardPanel struct {
	Title string `json:"title"`
}
