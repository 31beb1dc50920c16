package chart

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestMetricsReaderRole(t *testing.T) {
	cases := map[string]struct {
		values       string
		wantSubjects []rbacv1.Subject // nil: no binding
	}{
		"by default the role exists and nobody is bound to it": {values: ""},
		"metrics.readers are bound to the role": {
			values: "metrics: {readers: [{kind: ServiceAccount, name: prometheus-k8s, namespace: monitoring}, {kind: Group, name: sre, apiGroup: rbac.authorization.k8s.io}]}",
			wantSubjects: []rbacv1.Subject{
				{Kind: "ServiceAccount", Name: "prometheus-k8s", Namespace: "monitoring"},
				{Kind: "Group", Name: "sre", APIGroup: "rbac.authorization.k8s.io"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := render(t, tc.values)
			role := decodeOne[rbacv1.ClusterRole](t, r, "ClusterRole", "claimbridge-metrics-reader")
			want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", "/report", "/rehearsal"}, Verbs: []string{"get"}}}
			if diff := cmp.Diff(want, role.Rules); diff != "" {
				t.Errorf("reader rules (-want,+got):\n%s", diff)
			}
			bindings := r.Find("ClusterRoleBinding", "claimbridge-metrics-reader")
			if tc.wantSubjects == nil {
				if len(bindings) != 0 {
					t.Errorf("the reader role is bound without metrics.readers")
				}
				return
			}
			b := decodeOne[rbacv1.ClusterRoleBinding](t, r, "ClusterRoleBinding", "claimbridge-metrics-reader")
			if diff := cmp.Diff(rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "claimbridge-metrics-reader"}, b.RoleRef); diff != "" {
				t.Errorf("roleRef (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSubjects, b.Subjects); diff != "" {
				t.Errorf("subjects (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestMetricsWithoutAuthenticationIsExplicit(t *testing.T) {
	r := render(t, "metrics: {secure: false, readers: [{kind: User, name: alice}], serviceMonitor: {enabled: true}}")
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding"} {
		if len(r.Find(kind, "claimbridge-metrics-reader")) != 0 {
			t.Errorf("%s claimbridge-metrics-reader rendered without metrics.secure", kind)
		}
	}
	d := decodeOne[appsv1.Deployment](t, r, "Deployment", "claimbridge")
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--metrics-secure=false") {
		t.Errorf("args %v lack --metrics-secure=false", args)
	}
	endpoints := r.Find("ServiceMonitor", "claimbridge")[0].Object["spec"].(map[string]any)["endpoints"].([]any)
	if diff := cmp.Diff([]any{map[string]any{"port": "metrics", "path": "/metrics", "scheme": "http"}}, endpoints); diff != "" {
		t.Errorf("ServiceMonitor endpoints (-want,+got):\n%s", diff)
	}
	notes := r.Notes
	if !strings.Contains(notes, "WARNING: metrics.secure=false") {
		t.Errorf("NOTES.txt does not warn about plain HTTP:\n%s", notes)
	}
}

func TestServiceMonitorVerifiesTheWebhookCertificate(t *testing.T) {
	cases := map[string]struct {
		values        string
		wantTLSConfig map[string]any
	}{
		"self-managed: the CA Secret's bundle": {
			values: "metrics: {serviceMonitor: {enabled: true}}",
			wantTLSConfig: map[string]any{
				"ca":         map[string]any{"secret": map[string]any{"name": "claimbridge-ca", "key": "ca.crt"}},
				"serverName": "claimbridge.claimbridge-system.svc",
			},
		},
		"cert-manager: the Certificate's Secret": {
			values: "tls: {mode: cert-manager}\nmetrics: {serviceMonitor: {enabled: true}}",
			wantTLSConfig: map[string]any{
				"ca":         map[string]any{"secret": map[string]any{"name": "claimbridge-tls", "key": "ca.crt"}},
				"serverName": "claimbridge.claimbridge-system.svc",
			},
		},
		"a given tlsConfig replaces it": {
			values:        "metrics: {serviceMonitor: {enabled: true, tlsConfig: {insecureSkipVerify: true}}}",
			wantTLSConfig: map[string]any{"insecureSkipVerify": true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := render(t, tc.values)
			endpoint := r.Find("ServiceMonitor", "claimbridge")[0].Object["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
			if endpoint["scheme"] != "https" || endpoint["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
				t.Errorf("the scrape is not HTTPS with Prometheus' token: %v", endpoint)
			}
			if diff := cmp.Diff(tc.wantTLSConfig, endpoint["tlsConfig"]); diff != "" {
				t.Errorf("tlsConfig (-want,+got):\n%s", diff)
			}
		})
	}
}
