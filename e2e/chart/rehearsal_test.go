package chart

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/claimbridge/claimbridge/e2e/image"
)

// TestTheRehearsalJob renders rehearsal.enabled: a Job of the rehearsal image that reads the
// cluster and writes only its page's ConfigMap, which the webhook serves; off by default.
func TestTheRehearsalJob(t *testing.T) {
	off := render(t, "")
	for _, kind := range []string{"Job", "ConfigMap"} {
		for _, o := range off.Objects {
			if o.GetKind() == kind && strings.Contains(o.GetName(), "rehearsal") {
				t.Errorf("rehearsal.enabled is false, yet %s %s is rendered", kind, o.GetName())
			}
		}
	}
	if args := decodeOne[appsv1.Deployment](t, off, "Deployment", "claimbridge").Spec.Template.Spec.Containers[0].Args; slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--rehearsal-configmap") }) {
		t.Errorf("the webhook serves a rehearsal that no Job publishes: %v", args)
	}

	r := render(t, `
rehearsal:
  enabled: true
  namespaces: [research, lab]
  extraArgs: [--settle=20s]
policy: {profiles: [nvidia]}
`)
	const name = "claimbridge-rehearsal"
	job := decodeOne[batchv1.Job](t, r, "Job", name+"-1")
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	want := []string{"rehearse", "--in-cluster", "--publish=claimbridge-system/" + name, "--namespace=research", "--namespace=lab", "--policy=/etc/claimbridge/policy.yaml", "--settle=20s"}
	if diff := cmp.Diff(want, c.Args); diff != "" {
		t.Errorf("the Job's arguments (-want,+got):\n%s", diff)
	}
	if wantImage := image.RehearsalRepository + ":"; !strings.HasPrefix(c.Image, wantImage) {
		t.Errorf("the Job's image %q, want the rehearsal image %s<appVersion>", c.Image, wantImage)
	}
	if pod.ServiceAccountName != name || pod.RestartPolicy != corev1.RestartPolicyNever || job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 {
		t.Errorf("the Job runs as %q, restart %q, backoffLimit %v: want %s, Never, 0", pod.ServiceAccountName, pod.RestartPolicy, job.Spec.BackoffLimit, name)
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem ||
		!slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" }) {
		t.Errorf("the rehearsal runs on a read-only root with /tmp writable: %+v, %+v", c.SecurityContext, c.VolumeMounts)
	}
	// Neither the webhook's Service nor its PodDisruptionBudget selects the Job's pod.
	svc := decodeOne[corev1.Service](t, r, "Service", "claimbridge")
	if labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(job.Spec.Template.Labels)) {
		t.Errorf("the webhook's Service selects the rehearsal's pod (%v)", job.Spec.Template.Labels)
	}

	// It may read, never write, cluster-wide, and never a Secret.
	cr := decodeOne[rbacv1.ClusterRole](t, r, "ClusterRole", name)
	for _, rule := range cr.Rules {
		if !slices.Equal(rule.Verbs, []string{"list"}) || slices.Contains(rule.Resources, "secrets") || slices.Contains(rule.Resources, "*") {
			t.Errorf("the rehearsal's ClusterRole grants more than list: %+v", rule)
		}
	}
	// In the release namespace: get and update its ConfigMap, by name; the chart creates it.
	role := decodeOne[rbacv1.Role](t, r, "Role", name)
	if diff := cmp.Diff([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{name}, Verbs: []string{"get", "update"}}}, role.Rules); diff != "" {
		t.Errorf("the rehearsal's Role (-want,+got):\n%s", diff)
	}
	decodeOne[corev1.ConfigMap](t, r, "ConfigMap", name)
	if sa := decodeOne[corev1.ServiceAccount](t, r, "ServiceAccount", name); sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("the ServiceAccount mounts its token in every pod; only the Job's should")
	}

	// The webhook serves the page, and whoever reads /report reads /rehearsal.
	args := decodeOne[appsv1.Deployment](t, r, "Deployment", "claimbridge").Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--rehearsal-configmap="+name) {
		t.Errorf("the webhook does not serve the rehearsal's page: %v", args)
	}
	reader := decodeOne[rbacv1.ClusterRole](t, r, "ClusterRole", "claimbridge-metrics-reader")
	if !slices.Contains(reader.Rules[0].NonResourceURLs, "/rehearsal") {
		t.Errorf("the metrics reader may not read /rehearsal: %+v", reader.Rules)
	}
}
