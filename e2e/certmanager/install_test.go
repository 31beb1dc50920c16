package certmanager_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/claimbridge/claimbridge/e2e/chart"
	"github.com/claimbridge/claimbridge/e2e/image"
)

// TestThePackagedChartInstallsWithTheDefaultImageAsAServerSideDryRun renders the archive
// `helm package` makes (as `helm template` does), then installs it with `helm install
// --dry-run=server` against the control plane — with cert-manager's CRDs served, so that the
// Issuers and Certificates are checked against cert-manager's schemas — and submits every
// rendered object as a server-side dry-run create: kube-apiserver validates and admits each
// one, and nothing is created.
func TestThePackagedChartInstallsWithTheDefaultImageAsAServerSideDryRun(t *testing.T) {
	tc.DumpLogsOnFailure(t)
	appVersion, err := image.ChartAppVersion(rootDir)
	if err != nil {
		t.Fatal(err)
	}
	wantImage := image.Repository + ":" + appVersion

	tmpl, err := chart.Render(t.Context(), nil, chart.Options{Chart: packaged})
	if err != nil {
		t.Fatalf("helm template of the packaged chart: %v", err)
	}
	if got := deploymentImage(t, tmpl); got != wantImage {
		t.Errorf("helm template: image %q, want %q", got, wantImage)
	}

	dc, err := discovery.NewDiscoveryClientForConfig(tc.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	cases := map[string]map[string]any{
		"self-managed TLS (the default values)": nil,
		"cert-manager TLS":                      {"tls": map[string]any{"mode": "cert-manager"}},
	}
	for name, values := range cases {
		t.Run(name, func(t *testing.T) {
			ns := tc.Namespace(t, "dryrun-", nil)
			release := ns // a release, and so cluster-scoped names, of its own
			r, err := chart.Install(t.Context(), values, chart.Options{Chart: packaged, Release: release, Namespace: ns, Kubeconfig: tc.Kubeconfig}, chart.InstallDryRun)
			if err != nil {
				t.Fatalf("helm install --dry-run=server: %v", err)
			}
			if got := deploymentImage(t, r); got != wantImage {
				t.Errorf("image %q, want %q", got, wantImage)
			}
			kinds := map[string]bool{}
			for _, o := range r.Objects {
				kinds[o.GetKind()] = true
				m, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
				if err != nil {
					t.Errorf("%s %s: the cluster does not serve it: %v", o.GetKind(), o.GetName(), err)
					continue
				}
				res := dyn.Resource(m.Resource)
				var createErr error
				if m.Scope.Name() == meta.RESTScopeNameNamespace {
					_, createErr = res.Namespace(ns).Create(t.Context(), o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				} else {
					_, createErr = res.Create(t.Context(), o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				}
				if createErr != nil {
					t.Errorf("server-side dry run of %s %s: %v", o.GetKind(), o.GetName(), createErr)
				}
			}
			if values != nil && (!kinds["Certificate"] || !kinds["Issuer"]) {
				t.Errorf("cert-manager mode rendered no Certificate or Issuer: %v", r.Kinds())
			}
			// Nothing was created: no release record, no objects.
			secrets, err := tc.Client().CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm"})
			if err != nil {
				t.Fatal(err)
			}
			deployments, err := tc.Client().AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(secrets.Items)+len(deployments.Items) != 0 {
				t.Errorf("the dry run created %d release secrets and %d Deployments", len(secrets.Items), len(deployments.Items))
			}
			t.Logf("helm install --dry-run=server: %d objects (%s) accepted by kube-apiserver, image %s", len(r.Objects), strings.Join(r.Kinds(), ", "), wantImage)
		})
	}
}

func deploymentImage(t *testing.T, r *chart.Rendered) string {
	t.Helper()
	found := r.Find("Deployment", "")
	if len(found) != 1 {
		t.Fatalf("%d Deployments rendered, want 1", len(found))
	}
	d := &appsv1.Deployment{}
	if err := chart.Decode(found[0], d); err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}
