package webhook

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

// TestTheWebhookNeverAddsAToleration: kube-apiserver runs its built-in
// mutating plugins, ExtendedResourceToleration among them, before
// MutatingAdmissionWebhook, so the pod the webhook sees already carries the
// tolerations its cluster gives. The webhook adds none, whatever the policy
// says about implicit tolerations: on a cluster with the plugin (GKE) the
// pod arrives with the toleration and keeps it, once; on a cluster without
// it a pod that tolerates nothing is not made to tolerate the taint of the
// nodes with its devices (the tainted TPU nodes stay out of its reach: it
// is kept as submitted, where the scheduler would leave it too).
func TestTheWebhookNeverAddsAToleration(t *testing.T) {
	tpuToleration := corev1.Toleration{Key: "google.com/tpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	tpu := func() *builders.PodWrapper {
		return builders.MakePod("jax", "prod").Container("jax").Limit("google.com/tpu", "8")
	}
	gke := policyOf(t, "", v1alpha1.DefaultProfileNames()...) // names gke and tpu: implicitTolerations on
	cases := map[string]struct {
		fleet           string
		mutate          func(*fixture)
		pod             *corev1.Pod
		wantPatched     bool
		wantTolerations []corev1.Toleration
		wantWarning     string
	}{
		"GKE: the plugin's toleration is on the pod as it arrives and stays, once (default policy)": {
			fleet: "tpu-v5e", pod: tpu().Toleration("google.com/tpu", corev1.TaintEffectNoSchedule).Obj(),
			wantPatched: true, wantTolerations: []corev1.Toleration{tpuToleration}, wantWarning: "Translated: uses ResourceClaimTemplate",
		},
		"GKE: the plugin's toleration is on the pod as it arrives and stays, once (a policy naming gke)": {
			fleet: "tpu-v5e", mutate: gke, pod: tpu().Toleration("google.com/tpu", corev1.TaintEffectNoSchedule).Obj(),
			wantPatched: true, wantTolerations: []corev1.Toleration{tpuToleration}, wantWarning: "Translated: uses ResourceClaimTemplate",
		},
		"no plugin: a TPU pod that tolerates nothing is not given a toleration (default policy)": {
			fleet: "tpu-v5e", pod: tpu().Obj(), wantWarning: "Infeasible: kept as submitted",
		},
		"no plugin: a TPU pod that tolerates nothing is not given a toleration (a policy naming gke)": {
			fleet: "tpu-v5e", mutate: gke, pod: tpu().Obj(), wantWarning: "Infeasible: kept as submitted",
		},
		"no plugin: a GPU pod translated onto untainted nodes gets no toleration (a policy naming gke)": {
			fleet: "l4-inference", mutate: gke, pod: builders.MakePod("infer", "prod").Container("server").Limit("nvidia.com/gpu", "1").Obj(),
			wantPatched: true, wantWarning: "Translated: uses ResourceClaimTemplate",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.fleet, tc.mutate)
			req := request(t, admissionv1.Create, tc.pod, false)
			resp := f.handler.Handle(t.Context(), req)
			if !resp.Allowed {
				t.Fatalf("pod denied: %+v", resp.Result)
			}
			if got := mutated(t, req, resp); got != tc.wantPatched {
				t.Fatalf("patched = %v, want %v (warnings %q)", got, tc.wantPatched, resp.Warnings)
			}
			if !strings.Contains(strings.Join(resp.Warnings, "\n"), tc.wantWarning) {
				t.Errorf("warnings %q, want one containing %q", resp.Warnings, tc.wantWarning)
			}
			for _, p := range resp.Patches {
				if strings.HasPrefix(p.Path, "/spec/tolerations") {
					t.Errorf("the patch touches the tolerations: %s %s %v", p.Operation, p.Path, p.Value)
				}
			}
			if !tc.wantPatched {
				return
			}
			if diff := cmp.Diff(tc.wantTolerations, applied(t, req, resp).Spec.Tolerations); diff != "" {
				t.Errorf("tolerations of the admitted pod (-want,+got):\n%s", diff)
			}
		})
	}
}
