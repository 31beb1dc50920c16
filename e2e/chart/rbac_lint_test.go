package chart

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	rbacv1 "k8s.io/api/rbac/v1"
)

var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection", "escalate", "bind", "impersonate", "*"}

func TestRBACIsLeastPrivilege(t *testing.T) {
	cases := map[string]struct {
		values string
		// wantNamed are the namespaced (Role) objects writable by name: "resource/name".
		wantNamed []string
		// wantCreate are the kinds the Role may create (create cannot be limited by name).
		wantCreate []string
		// wantWebhookWrite is whether the ClusterRole may update the chart's own configuration.
		wantWebhookWrite bool
		// wantPodDelete is whether the ClusterRole may delete pods (controller.repair).
		wantPodDelete bool
		// wantReviews is whether the ClusterRole may create TokenReviews and
		// SubjectAccessReviews (metrics.secure: who reads /metrics and /report).
		wantReviews bool
		// wantReports is the "group/resource" of the reports the ClusterRole may write
		// (reports.api); empty: none.
		wantReports string
		// noPlatform: platform.detect is off, so the ClusterRole lists no DaemonSet,
		// Deployment or NodePool.
		noPlatform bool
	}{
		"platform detection off: nothing of apps or karpenter.sh": {
			values:           "platform: {detect: false}",
			wantNamed:        []string{"leases/claimbridge", "leases/claimbridge-admission", "secrets/claimbridge-ca"},
			wantCreate:       []string{"leases", "secrets"},
			wantWebhookWrite: true,
			wantReviews:      true,
			wantReports:      "wgpolicyk8s.io/policyreports",
			noPlatform:       true,
		},
		"self-managed mode": {
			values:           "",
			wantNamed:        []string{"leases/claimbridge", "leases/claimbridge-admission", "secrets/claimbridge-ca"},
			wantCreate:       []string{"leases", "secrets"},
			wantWebhookWrite: true,
			wantReviews:      true,
			wantReports:      "wgpolicyk8s.io/policyreports",
		},
		"repair of stranded pods may delete pods, nothing more": {
			values:           "controller: {repair: true}",
			wantNamed:        []string{"leases/claimbridge", "leases/claimbridge-admission", "secrets/claimbridge-ca"},
			wantCreate:       []string{"leases", "secrets"},
			wantWebhookWrite: true,
			wantPodDelete:    true,
			wantReviews:      true,
			wantReports:      "wgpolicyk8s.io/policyreports",
		},
		"cert-manager mode needs no Secret and no webhook access": {
			values:      "tls: {mode: cert-manager}",
			wantNamed:   []string{"leases/claimbridge", "leases/claimbridge-admission"},
			wantCreate:  []string{"leases"},
			wantReviews: true,
			wantReports: "wgpolicyk8s.io/policyreports",
		},
		"metrics without authentication need no reviews": {
			values:           "metrics: {secure: false}",
			wantNamed:        []string{"leases/claimbridge", "leases/claimbridge-admission", "secrets/claimbridge-ca"},
			wantCreate:       []string{"leases", "secrets"},
			wantWebhookWrite: true,
			wantReports:      "wgpolicyk8s.io/policyreports",
		},
		"openreports: the Reports instead of the PolicyReports": {
			values:           "reports: {api: openreports}",
			wantNamed:        []string{"leases/claimbridge", "leases/claimbridge-admission", "secrets/claimbridge-ca"},
			wantCreate:       []string{"leases", "secrets"},
			wantWebhookWrite: true,
			wantReviews:      true,
			wantReports:      "openreports.io/reports",
		},
		"the rehearsal's page: get its ConfigMap by name, nothing more": {
			values:           "rehearsal: {enabled: true}",
			wantNamed:        []string{"configmaps/claimbridge-rehearsal", "leases/claimbridge", "leases/claimbridge-admission", "secrets/claimbridge-ca"},
			wantCreate:       []string{"leases", "secrets"},
			wantWebhookWrite: true,
			wantReviews:      true,
			wantReports:      "wgpolicyk8s.io/policyreports",
		},
		"reports off: no access to any report": {
			values:           "reports: {api: \"off\"}",
			wantNamed:        []string{"leases/claimbridge", "leases/claimbridge-admission", "secrets/claimbridge-ca"},
			wantCreate:       []string{"leases", "secrets"},
			wantWebhookWrite: true,
			wantReviews:      true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := render(t, tc.values)
			cr := decodeOne[rbacv1.ClusterRole](t, r, "ClusterRole", "claimbridge")
			role := decodeOne[rbacv1.Role](t, r, "Role", "claimbridge")
			for _, rules := range [][]rbacv1.PolicyRule{cr.Rules, role.Rules} {
				for _, rule := range rules {
					for _, field := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs, rule.ResourceNames} {
						if slices.Contains(field, "*") {
							t.Errorf("wildcard in rule %+v", rule)
						}
					}
					if len(rule.NonResourceURLs) > 0 {
						t.Errorf("non-resource URLs in rule %+v", rule)
					}
				}
			}

			// Cluster-wide writes: only ResourceClaimTemplates and Events, plus the chart's own
			// MutatingWebhookConfiguration by name.
			webhookWrite, podDelete, reviews, reports := false, false, map[string]bool{}, ""
			for _, rule := range cr.Rules {
				writes := slices.ContainsFunc(rule.Verbs, func(v string) bool { return slices.Contains(writeVerbs, v) })
				if !writes {
					continue
				}
				if slices.Contains(rule.Verbs, "escalate") || slices.Contains(rule.Verbs, "bind") || slices.Contains(rule.Verbs, "impersonate") {
					t.Errorf("privilege verbs in %+v", rule)
				}
				switch {
				case slices.Equal(rule.Resources, []string{"resourceclaimtemplates"}) && slices.Equal(rule.APIGroups, []string{"resource.k8s.io"}):
					if diff := cmp.Diff([]string{"get", "list", "watch", "create", "delete"}, rule.Verbs); diff != "" {
						t.Errorf("ResourceClaimTemplate verbs (-want,+got):\n%s", diff)
					}
				case slices.Equal(rule.Resources, []string{"policyreports"}) && slices.Equal(rule.APIGroups, []string{"wgpolicyk8s.io"}),
					slices.Equal(rule.Resources, []string{"reports"}) && slices.Equal(rule.APIGroups, []string{"openreports.io"}):
					// The live audit per namespace: list its reports, write them, delete those of
					// namespaces that opted out; no get, watch or patch.
					if diff := cmp.Diff([]string{"list", "create", "update", "delete"}, rule.Verbs); diff != "" {
						t.Errorf("report verbs (-want,+got):\n%s", diff)
					}
					reports = rule.APIGroups[0] + "/" + rule.Resources[0]
				case slices.Equal(rule.Resources, []string{"events"}):
					if diff := cmp.Diff([]string{"create", "patch"}, rule.Verbs); diff != "" {
						t.Errorf("Event verbs (-want,+got):\n%s", diff)
					}
				case slices.Equal(rule.Resources, []string{"mutatingwebhookconfigurations"}) && slices.Equal(rule.ResourceNames, []string{"claimbridge"}):
					webhookWrite = true
				case slices.Equal(rule.Resources, []string{"pods"}) && slices.Equal(rule.APIGroups, []string{""}) && slices.Equal(rule.Verbs, []string{"delete"}):
					podDelete = true
				case slices.Equal(rule.Verbs, []string{"create"}) && len(rule.Resources) == 1 &&
					(slices.Equal(rule.APIGroups, []string{"authentication.k8s.io"}) && rule.Resources[0] == "tokenreviews" ||
						slices.Equal(rule.APIGroups, []string{"authorization.k8s.io"}) && rule.Resources[0] == "subjectaccessreviews"):
					reviews[rule.Resources[0]] = true
				default:
					t.Errorf("cluster-wide write outside ResourceClaimTemplates and Events: %+v", rule)
				}
			}
			if reports != tc.wantReports {
				t.Errorf("may write reports %q, want %q", reports, tc.wantReports)
			}
			if podDelete != tc.wantPodDelete {
				t.Errorf("may delete pods = %v, want %v (only with controller.repair)", podDelete, tc.wantPodDelete)
			}
			if got := reviews["tokenreviews"] && reviews["subjectaccessreviews"]; got != tc.wantReviews || len(reviews) == 1 {
				t.Errorf("may create TokenReviews and SubjectAccessReviews = %v, want %v (only with metrics.secure)", reviews, tc.wantReviews)
			}
			if webhookWrite != tc.wantWebhookWrite {
				t.Errorf("may write its MutatingWebhookConfiguration = %v, want %v", webhookWrite, tc.wantWebhookWrite)
			}
			for _, rule := range cr.Rules {
				if slices.Contains(rule.Resources, "secrets") || slices.Contains(rule.Resources, "mutatingwebhookconfigurations") && len(rule.ResourceNames) == 0 {
					t.Errorf("cluster-wide access to secrets or to every webhook configuration: %+v", rule)
				}
			}
			var reads []string
			for _, rule := range cr.Rules {
				if slices.Equal(rule.Verbs, []string{"get", "list", "watch"}) {
					reads = append(reads, rule.Resources...)
				}
			}
			slices.Sort(reads)
			wantReads := []string{"deviceclasses", "devicetaintrules", "namespaces", "nodes", "pods", "resourceclaims", "resourcequotas", "resourceslices"}
			if diff := cmp.Diff(wantReads, reads); diff != "" {
				t.Errorf("read-only resources (-want,+got):\n%s", diff)
			}
			// Platform detection lists the drivers' and autoscalers' workloads and
			// Karpenter's NodePools: list only, never get or watch (no object is kept).
			var lists []string
			for _, rule := range cr.Rules {
				if slices.Equal(rule.Verbs, []string{"list"}) {
					for _, g := range rule.APIGroups {
						for _, res := range rule.Resources {
							lists = append(lists, g+"/"+res)
						}
					}
				}
			}
			slices.Sort(lists)
			wantLists := []string{"apps/daemonsets", "apps/deployments", "karpenter.sh/nodepools"}
			if tc.noPlatform {
				wantLists = nil
			}
			if diff := cmp.Diff(wantLists, lists, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("list-only resources (-want,+got):\n%s", diff)
			}

			// In the release namespace: create by kind, everything else by name.
			var named, create []string
			for _, rule := range role.Rules {
				if len(rule.ResourceNames) == 0 {
					if !slices.Equal(rule.Verbs, []string{"create"}) {
						t.Errorf("namespaced rule without resourceNames grants more than create: %+v", rule)
					}
					create = append(create, rule.Resources...)
					continue
				}
				for _, res := range rule.Resources {
					for _, n := range rule.ResourceNames {
						named = append(named, res+"/"+n)
					}
				}
			}
			slices.Sort(named)
			slices.Sort(create)
			if diff := cmp.Diff(tc.wantNamed, named); diff != "" {
				t.Errorf("objects writable by name (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCreate, create); diff != "" {
				t.Errorf("kinds created (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestHelmLint(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	kv, err := common.ParseKubeVersion(KubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]map[string]any{
		"default values":    nil,
		"cert-manager mode": {"tls": map[string]any{"mode": "cert-manager"}},
		"every optional resource": {
			"metrics":          map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
			"networkPolicy":    map[string]any{"enabled": true},
			"policy":           map[string]any{"profiles": []any{"nvidia"}},
			"reports":          map[string]any{"installCRD": true},
			"grafanaDashboard": map[string]any{"enabled": true},
		},
		"openreports with its CRD": {"reports": map[string]any{"api": "openreports", "installCRD": true}},
	}
	for name, values := range cases {
		t.Run(name, func(t *testing.T) {
			linter := lint.RunAll(dir, values, DefaultNamespace, lint.WithKubeVersion(kv))
			for _, m := range linter.Messages {
				t.Log(m.Error())
			}
			if linter.HighestSeverity >= support.WarningSev {
				t.Errorf("helm lint reports warnings or errors")
			}
		})
	}
}

// TestEveryValueIsDocumented checks the "# --" comment above every leaf of values.yaml and
// that the chart README lists every leaf.
func TestEveryValueIsDocumented(t *testing.T) {
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile(`^(\s*)([A-Za-z][A-Za-z0-9]*):(.*)$`)
	type frame struct {
		indent  int
		name    string
		covered bool // documented as a whole: its children need no comment of their own
	}
	var stack []frame
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	for i, line := range lines {
		m := key.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent, name, rest := len(m[1]), m[2], strings.TrimSpace(m[3])
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		var path []string
		covered := false
		for _, fr := range stack {
			path = append(path, fr.name)
			covered = covered || fr.covered
		}
		if covered {
			stack = append(stack, frame{indent: indent, name: name, covered: true})
			continue
		}
		path = append(path, name)
		full := strings.Join(path, ".")
		leaf := rest != ""
		if !leaf && i+1 < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "#") {
			next := key.FindStringSubmatch(lines[i+1])
			// A block value (resources:, podSecurityContext:) documented as a whole is a leaf.
			if next == nil || len(next[1]) <= indent {
				leaf = true
			}
		}
		documented := false
		for j := i - 1; j >= 0; j-- {
			prev := strings.TrimSpace(lines[j])
			if !strings.HasPrefix(prev, "#") {
				break
			}
			if strings.HasPrefix(prev, "# --") {
				documented = true
				break
			}
		}
		if documented {
			if !strings.Contains(string(readme), "`"+full+"`") {
				t.Errorf("README.md does not list `%s`", full)
			}
			stack = append(stack, frame{indent: indent, name: name, covered: true})
			continue
		}
		if leaf {
			t.Errorf("values.yaml:%d: %s has no \"# --\" comment", i+1, full)
		}
		stack = append(stack, frame{indent: indent, name: name})
	}
}
