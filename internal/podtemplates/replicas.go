package podtemplates

import (
	"math"
	"strconv"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// replicaRule counts the pods a template stands for at once, as the
// operator that makes them counts them, from the object as written (with
// the defaults the operator's API gives absent fields).
type replicaRule func(t *Template) *int32

// up is the node n steps above the template along its pattern: up(0) is
// the template, up(1) the mapping that holds it.
func (t *Template) up(n int) *yaml.Node {
	if i := len(t.chain) - 1 - n; i >= 0 && i < len(t.chain) {
		return t.chain[i]
	}
	return nil
}

// field is the node at keys below n, or nil.
func field(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		n = lookup(n, k)
	}
	return n
}

// intAt reads a whole number at keys below n; def when absent, null or not
// a number.
func intAt(n *yaml.Node, def int64, keys ...string) int64 {
	v := scalar(field(n, keys...))
	if v == "" {
		return def
	}
	i, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return def
	}
	return i
}

func count(n int64) *int32 {
	c := int32(min(max(n, 0), math.MaxInt32))
	return &c
}

// one: the template stands for one pod (a Ray head).
func one(*Template) *int32 { return count(1) }

// replicaSpecReplicas: a Kubeflow job's replicas of one replica type
// (spec.<kind>ReplicaSpecs.<type>.replicas). The training operator defaults
// it to 1 (kubeflow/training-operator v1.9.0,
// pkg/apis/kubeflow.org/v1/{pytorch,tensorflow,xgboost,paddlepaddle,jax}_defaults.go,
// setDefaultReplicas), an MPIJob's Launcher to 1 and its Worker to 0
// (pkg/apis/kubeflow.org/v1/mpi_defaults.go; kubeflow/mpi-operator
// pkg/apis/kubeflow/v2beta1/default.go, setDefaultsTypeLauncher and
// setDefaultsTypeWorker). The controller makes that many pods of the type.
func replicaSpecReplicas(t *Template) *int32 {
	def := int64(1)
	if len(t.at) >= 2 && t.at[len(t.at)-2] == "Worker" && scalar(lookup(t.obj, "kind")) == "MPIJob" {
		def = 0
	}
	return count(intAt(t.up(1), def, "replicas"))
}

// jobPods is how many pods a Job (its spec at n) runs at once: parallelism
// (default 1), no more than its completions when they are set, as the Job
// controller starts them (kubernetes pkg/controller/job/job_controller.go,
// manageJob).
func jobPods(spec *yaml.Node) int64 {
	n := intAt(spec, 1, "parallelism")
	if c := field(spec, "completions"); scalar(c) != "" {
		n = min(n, intAt(spec, n, "completions"))
	}
	return n
}

// jobSetReplicas: a JobSet makes replicas (default 1) Jobs of each
// replicated job (kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go,
// ReplicatedJob.Replicas), each running its pods at once.
func jobSetReplicas(t *Template) *int32 {
	rj := t.up(3) // spec.replicatedJobs[i] ← template ← spec ← template
	return count(intAt(rj, 1, "replicas") * jobPods(t.up(1)))
}

// trainerReplicas: Kubeflow Trainer counts the pods of a runtime's
// replicated job as its Job's parallelism (default 1), and those of the
// trainer's job (label trainer.kubeflow.org/trainjob-ancestor-step: trainer)
// as the runtime's mlPolicy.numNodes (default 1) when it has an mlPolicy;
// it does not read the replicated job's replicas (kubeflow/trainer
// pkg/runtime/core/trainingruntime.go, TrainingRuntime.newRuntimeInfo). A
// TrainJob's spec.trainer.numNodes overrides it per job.
func trainerReplicas(t *Template) *int32 {
	rj := t.up(3)
	n := intAt(t.up(1), 1, "parallelism")
	if trainerAncestor(rj) && field(t.obj, "spec", "mlPolicy") != nil {
		n = intAt(t.obj, 1, "spec", "mlPolicy", "numNodes")
	}
	return count(n)
}

// trainerAncestor: the replicated job is the trainer's.
func trainerAncestor(rj *yaml.Node) bool {
	return scalar(field(rj, "template", "metadata", "labels", "trainer.kubeflow.org/trainjob-ancestor-step")) == "trainer"
}

// lwsReplicas: a LeaderWorkerSet makes spec.replicas groups (default 1) of
// leaderWorkerTemplate.size pods (default 1): the leader, from leaderTemplate
// or, without one, from workerTemplate
// (kubernetes-sigs/lws pkg/controllers/leaderworkerset_controller.go,
// constructLeaderStatefulSetApplyConfiguration), and size-1 workers from
// workerTemplate (pkg/controllers/pod_controller.go,
// constructWorkerStatefulSetApplyConfiguration).
func lwsReplicas(t *Template) *int32 {
	groups := intAt(t.obj, 1, "spec", "replicas")
	lwt := t.up(1)
	size := intAt(lwt, 1, "size")
	if t.at[len(t.at)-1] == "leaderTemplate" {
		return count(groups)
	}
	if leader := field(lwt, "leaderTemplate"); leader != nil && !isNull(leader) {
		return count(groups * max(size-1, 0))
	}
	return count(groups * size)
}

// rayWorkerReplicas: KubeRay runs replicas (CRD default 0) of a worker
// group, raised to minReplicas (default 0) and capped by maxReplicas
// (default 2147483647), times numOfHosts (default 1); none while the group
// is suspended (ray-project/kuberay
// ray-operator/controllers/ray/utils/util.go, GetWorkerGroupDesiredReplicas;
// the defaults in ray-operator/apis/ray/v1/raycluster_types.go).
func rayWorkerReplicas(t *Template) *int32 {
	g := t.up(1)
	if scalar(field(g, "suspend")) == "true" {
		return count(0)
	}
	lo, hi := intAt(g, 0, "minReplicas"), intAt(g, math.MaxInt32, "maxReplicas")
	var n int64
	switch r := field(g, "replicas"); {
	case scalar(r) == "" || intAt(g, 0, "replicas") < lo:
		n = lo
	case intAt(g, 0, "replicas") > hi:
		n = hi
	default:
		n = intAt(g, 0, "replicas")
	}
	return count(n * intAt(g, 1, "numOfHosts"))
}

// volcanoReplicas: a Volcano Job makes tasks[i].replicas pods of a task
// (no default: 0) (volcano-sh/volcano
// staging/src/volcano.sh/apis/pkg/apis/batch/v1alpha1/job.go,
// TaskSpec.Replicas; pkg/controllers/job/job_controller_actions.go,
// syncJob).
func volcanoReplicas(t *Template) *int32 {
	return count(intAt(t.up(1), 0, "replicas"))
}
