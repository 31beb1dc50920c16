package decide_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// TestPodsAnOperatorMadeAreTranslatedAsAnyPod: the operators that size a
// workload from a template's device limit (KubeRay, Kubeflow Trainer, the
// training operator's MPIJob, KServe; the operator table of
// docs/reference/workloads.md) read it
// from the object, before they make the pods. A pod as the operator makes
// it already carries the count in its command or environment, so the
// webhook translates it like any pod, and translation leaves the command
// and environment as they are. (Offline, the object itself is translated:
// internal/offline and internal/podtemplates keep the count there.)
func TestPodsAnOperatorMadeAreTranslatedAsAnyPod(t *testing.T) {
	with := func(p *corev1.Pod, env []corev1.EnvVar, args ...string) *corev1.Pod {
		p.Spec.Containers[0].Env, p.Spec.Containers[0].Args = env, args
		return p
	}
	cases := map[string]*corev1.Pod{
		"a KubeRay worker, --num-gpus in its command": with(builders.MakePod("llm-gpu-worker-x7k2p", "ml").
			Label("ray.io/node-type", "worker").Label("ray.io/cluster", "llm").
			Container("ray-worker").Limit("nvidia.com/gpu", "2").Obj(), nil,
			"ulimit -n 65536; ray start --address=llm-head-svc:6379 --block --num-gpus=2"),
		"a KubeRay TPU worker, TPU in --resources": with(builders.MakePod("tpu-group-worker-0", "ml").
			Label("ray.io/node-type", "worker").
			Container("ray-worker").Limit("google.com/tpu", "4").Obj(), nil,
			`ray start --address=h:6379 --block --resources='{"TPU":4}'`),
		"a Kubeflow Trainer node, PET_NPROC_PER_NODE set from its GPUs": with(builders.MakePod("finetune-node-0-0", "research").
			Label("jobset.sigs.k8s.io/jobset-name", "finetune").
			Container("node").Limit("nvidia.com/gpu", "4").Obj(),
			[]corev1.EnvVar{{Name: "PET_NPROC_PER_NODE", Value: "auto"}, {Name: "PET_NNODES", Value: "2"}}),
		"an MPIJob v1 launcher with a GPU, its GPUs left visible": with(builders.MakePod("tensorflow-mnist-launcher", "ml").
			Label("training.kubeflow.org/replica-type", "launcher").
			Container("mpi").Limit("nvidia.com/gpu", "1").Obj(),
			[]corev1.EnvVar{{Name: "OMPI_MCA_orte_default_hostfile", Value: "/etc/mpi/hostfile"}}, "mpirun", "-np", "3"),
	}
	for name, pod := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: pod, Policy: translate.DefaultPolicy()})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != reason.OutcomeTranslate {
				t.Fatalf("outcome %s (%s: %s), want Translate", d.Outcome, d.Decisive.Code, d.Decisive.Message)
			}
			got := d.Translation.Pod.Spec.Containers[0]
			if !slices.Equal(got.Args, pod.Spec.Containers[0].Args) || !slices.Equal(got.Env, pod.Spec.Containers[0].Env) {
				t.Errorf("translation changed the command or environment that carry the count: %v %v", got.Args, got.Env)
			}
		})
	}
}

// TestLeaderWorkerSetTPUPodsStayAsSubmitted: the exception — a pod a
// LeaderWorkerSet made that asks for TPUs is read by LeaderWorkerSet's own
// pod webhook, after claimbridge's, for its TPU environment: it stays as
// submitted. Its GPU pods, and TPU pods of anything else, are translated.
func TestLeaderWorkerSetTPUPodsStayAsSubmitted(t *testing.T) {
	lws := func(resource, n string) *corev1.Pod {
		return builders.MakePod("vllm-0-1", "serving").Label("leaderworkerset.sigs.k8s.io/name", "vllm").
			Label("leaderworkerset.sigs.k8s.io/worker-index", "1").Container("worker").Limit(resource, n).Obj()
	}
	cases := map[string]struct {
		pod         *corev1.Pod
		wantOutcome reason.Outcome
		wantReason  reason.Code
	}{
		"a LeaderWorkerSet pod asking for TPUs stays": {pod: lws("google.com/tpu", "4"), wantOutcome: reason.OutcomeKeepLegacy, wantReason: decide.ReasonOperatorReadsLimit},
		"a LeaderWorkerSet pod asking for GPUs":       {pod: lws("nvidia.com/gpu", "8"), wantOutcome: reason.OutcomeTranslate},
		"a TPU pod of a JobSet":                       {pod: builders.MakePod("maxtext-0", "ml").Label("jobset.sigs.k8s.io/jobset-name", "maxtext").Container("w").Limit("google.com/tpu", "4").Obj(), wantOutcome: reason.OutcomeTranslate},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: tc.pod, Policy: translate.DefaultPolicy()})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.wantOutcome {
				t.Fatalf("outcome %s (%s: %s), want %s", d.Outcome, d.Decisive.Code, d.Decisive.Message, tc.wantOutcome)
			}
			if tc.wantReason != "" && d.Decisive.Code != tc.wantReason {
				t.Errorf("decisive %s, want %s", d.Decisive.Code, tc.wantReason)
			}
			if tc.wantOutcome == reason.OutcomeKeepLegacy && slices.ContainsFunc(d.Reasons, func(r reason.Reason) bool { return r.Code == translate.ReasonTranslated }) {
				t.Errorf("a kept pod still says Translated: %v", d.Reasons)
			}
		})
	}
}

// TestMultiHostTPUWorkersStayAsSubmitted: GKE gives the slice environment
// (TPU_WORKER_ID, TPU_WORKER_HOSTNAMES) only to the pods of an Indexed Job
// with a subdomain that ask for google.com/tpu, and its Ray add-on only to
// the TPU workers of a multi-host group: such pods, as the webhook sees
// them, stay as submitted (MultiHostTPUEnvironment). A pod of an Indexed
// Job without a subdomain, a single-host Ray worker, a GPU pod and a pod
// that sets the variables itself are translated.
func TestMultiHostTPUWorkersStayAsSubmitted(t *testing.T) {
	indexed := func(resource, n string) *builders.PodWrapper {
		return builders.MakePod("slice-job-3-x2k9p", "training").Label("batch.kubernetes.io/job-name", "slice-job").
			Annotation("batch.kubernetes.io/job-completion-index", "3").Container("jax").Limit(resource, n)
	}
	withSubdomain := func(p *corev1.Pod) *corev1.Pod { p.Spec.Subdomain = "slice-headless"; return p }
	withEnv := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TPU_WORKER_ID", Value: "3"}, {Name: "TPU_WORKER_HOSTNAMES", Value: "a,b,c,d"}}
		return p
	}
	ray := func(topology string) *corev1.Pod {
		return builders.MakePod("tpu-group-worker-0", "ml").Label("ray.io/node-type", "worker").
			NodeSelector("cloud.google.com/gke-tpu-topology", topology).Container("ray-worker").Limit("google.com/tpu", "4").Obj()
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want reason.Outcome
	}{
		"a TPU pod of an Indexed Job with a subdomain stays":  {pod: withSubdomain(indexed("google.com/tpu", "4").Obj()), want: reason.OutcomeKeepLegacy},
		"a TPU pod of an Indexed Job without a subdomain":     {pod: indexed("google.com/tpu", "4").Obj(), want: reason.OutcomeTranslate},
		"a GPU pod of an Indexed Job with a subdomain":        {pod: withSubdomain(indexed("nvidia.com/gpu", "8").Obj()), want: reason.OutcomeTranslate},
		"a TPU pod that sets the slice's variables itself":    {pod: withEnv(withSubdomain(indexed("google.com/tpu", "4").Obj())), want: reason.OutcomeTranslate},
		"a Ray TPU worker of a 4x4 slice, 4 chips, stays":     {pod: ray("4x4"), want: reason.OutcomeKeepLegacy},
		"a Ray TPU worker of a 2x2 slice, the host's 4 chips": {pod: ray("2x2"), want: reason.OutcomeTranslate},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: tc.pod, Policy: translate.DefaultPolicy()})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.want {
				t.Fatalf("outcome %s (%s: %s), want %s", d.Outcome, d.Decisive.Code, d.Decisive.Message, tc.want)
			}
			if tc.want == reason.OutcomeKeepLegacy {
				if d.Decisive.Code != decide.ReasonMultiHostTPUEnvironment {
					t.Errorf("decisive %s, want %s", d.Decisive.Code, decide.ReasonMultiHostTPUEnvironment)
				}
				e, ok := decide.Reasons().Lookup(d.Decisive.Code)
				if !ok || e.Outcome != reason.OutcomeKeepLegacy || e.Severity != d.Decisive.Severity {
					t.Errorf("catalog entry %+v (found %v) does not match the reason %+v", e, ok, d.Decisive)
				}
			}
		})
	}
}
