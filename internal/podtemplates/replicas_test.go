package podtemplates

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// findIn parses one object and locates its templates.
func findIn(t *testing.T, doc string) *Found {
	t.Helper()
	rn, err := yaml.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Find(rn.YNode())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// replicasByPath is the pods each template stands for; -1 for nil (the
// report reads the object, or counts one).
func replicasByPath(f *Found) map[string]int32 {
	out := map[string]int32{}
	for _, tm := range f.Templates {
		n := int32(-1)
		if tm.Replicas != nil {
			n = *tm.Replicas
		}
		out[tm.Path] = n
	}
	return out
}

const podTemplate = "template: {spec: {containers: [{name: c, image: x}]}}"

func TestReplicasAreThePodsATemplateStandsFor(t *testing.T) {
	cases := map[string]struct {
		doc  string
		want map[string]int32
	}{
		"PyTorchJob: each replica type's replicas, 1 by default": {
			doc:  "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec:\n  pytorchReplicaSpecs:\n    Master: {" + podTemplate + "}\n    Worker: {replicas: 7, " + podTemplate + "}\n",
			want: map[string]int32{"spec.pytorchReplicaSpecs.Master.template": 1, "spec.pytorchReplicaSpecs.Worker.template": 7},
		},
		"MPIJob: a Worker without replicas stands for none": {
			doc:  "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nspec:\n  mpiReplicaSpecs:\n    Launcher: {" + podTemplate + "}\n    Worker: {" + podTemplate + "}\n",
			want: map[string]int32{"spec.mpiReplicaSpecs.Launcher.template": 1, "spec.mpiReplicaSpecs.Worker.template": 0},
		},
		"JobSet: replicas × the Job's pods at once (parallelism, no more than completions)": {
			doc: "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nspec:\n  replicatedJobs:\n" +
				"  - {name: a, replicas: 4, template: {spec: {parallelism: 8, completions: 2, " + podTemplate + "}}}\n" +
				"  - {name: b, template: {spec: {parallelism: 3, " + podTemplate + "}}}\n" +
				"  - {name: c, replicas: 2, template: {spec: {" + podTemplate + "}}}\n",
			want: map[string]int32{"spec.replicatedJobs[0].template.spec.template": 8, "spec.replicatedJobs[1].template.spec.template": 3, "spec.replicatedJobs[2].template.spec.template": 2},
		},
		"TrainingRuntime: the trainer's job counts numNodes, others parallelism, never replicas": {
			doc: "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nspec:\n  mlPolicy: {numNodes: 4, torch: {}}\n  template:\n    spec:\n      replicatedJobs:\n" +
				"      - {name: dataset-initializer, replicas: 3, template: {spec: {" + podTemplate + "}}}\n" +
				"      - {name: node, template: {metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}, spec: {parallelism: 1, " + podTemplate + "}}}\n",
			want: map[string]int32{"spec.template.spec.replicatedJobs[0].template.spec.template": 1, "spec.template.spec.replicatedJobs[1].template.spec.template": 4},
		},
		"LeaderWorkerSet: leaders are the groups, workers groups × (size-1)": {
			doc:  "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nspec:\n  replicas: 3\n  leaderWorkerTemplate:\n    size: 4\n    leaderTemplate: {spec: {containers: [{name: l}]}}\n    workerTemplate: {spec: {containers: [{name: w}]}}\n",
			want: map[string]int32{"spec.leaderWorkerTemplate.leaderTemplate": 3, "spec.leaderWorkerTemplate.workerTemplate": 9},
		},
		"LeaderWorkerSet without a leaderTemplate: the workerTemplate makes every pod": {
			doc:  "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nspec:\n  leaderWorkerTemplate:\n    size: 4\n    workerTemplate: {spec: {containers: [{name: w}]}}\n",
			want: map[string]int32{"spec.leaderWorkerTemplate.workerTemplate": 4},
		},
		"RayCluster: head 1; workers within min and max, × numOfHosts; a suspended group none": {
			doc: "apiVersion: ray.io/v1\nkind: RayCluster\nspec:\n  headGroupSpec: {" + podTemplate + "}\n  workerGroupSpecs:\n" +
				"  - {groupName: a, replicas: 2, numOfHosts: 4, " + podTemplate + "}\n" +
				"  - {groupName: below-min, replicas: 1, minReplicas: 3, " + podTemplate + "}\n" +
				"  - {groupName: above-max, replicas: 9, maxReplicas: 5, " + podTemplate + "}\n" +
				"  - {groupName: absent, " + podTemplate + "}\n" +
				"  - {groupName: suspended, replicas: 2, suspend: true, " + podTemplate + "}\n",
			want: map[string]int32{"spec.headGroupSpec.template": 1, "spec.workerGroupSpecs[0].template": 8, "spec.workerGroupSpecs[1].template": 3,
				"spec.workerGroupSpecs[2].template": 5, "spec.workerGroupSpecs[3].template": 0, "spec.workerGroupSpecs[4].template": 0},
		},
		"RayJob: the cluster's groups; the submitter says nothing": {
			doc:  "apiVersion: ray.io/v1\nkind: RayJob\nspec:\n  submitterPodTemplate: {spec: {containers: [{name: s}]}}\n  rayClusterSpec:\n    headGroupSpec: {" + podTemplate + "}\n    workerGroupSpecs:\n    - {groupName: a, replicas: 6, " + podTemplate + "}\n",
			want: map[string]int32{"spec.rayClusterSpec.headGroupSpec.template": 1, "spec.rayClusterSpec.workerGroupSpecs[0].template": 6, "spec.submitterPodTemplate": -1},
		},
		"Volcano Job: a task's replicas, none by default": {
			doc:  "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nspec:\n  tasks:\n  - {name: a, replicas: 5, " + podTemplate + "}\n  - {name: b, " + podTemplate + "}\n",
			want: map[string]int32{"spec.tasks[0].template": 5, "spec.tasks[1].template": 0},
		},
		"AppWrapper: the wrapped object's own rule": {
			doc:  "apiVersion: workload.codeflare.dev/v1beta2\nkind: AppWrapper\nspec:\n  components:\n  - template:\n      apiVersion: kubeflow.org/v1\n      kind: PyTorchJob\n      spec:\n        pytorchReplicaSpecs:\n          Worker: {replicas: 5, " + podTemplate + "}\n",
			want: map[string]int32{"spec.components[0].template.spec.pytorchReplicaSpecs.Worker.template": 5},
		},
		"a Deployment: the report reads the typed object": {
			doc:  "apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: 3\n  " + podTemplate + "\n",
			want: map[string]int32{"spec.template": -1},
		},
		"Knative and shapes: nothing says": {
			doc:  "apiVersion: serving.knative.dev/v1\nkind: Service\nspec:\n  template: {spec: {containers: [{image: x}]}}\n",
			want: map[string]int32{"spec.template": -1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, replicasByPath(findIn(t, tc.doc))); diff != "" {
				t.Errorf("replicas by template (-want,+got):\n%s", diff)
			}
		})
	}
}
