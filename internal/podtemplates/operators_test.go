package podtemplates

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// stripped is the template's pod as translation leaves it, as far as
// operators read it: the named resources gone from every container.
func stripped(tm *Template, names ...corev1.ResourceName) *corev1.Pod {
	p := tm.Pod()
	for _, list := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range list {
			for _, n := range names {
				delete(list[i].Resources.Limits, n)
				delete(list[i].Resources.Requests, n)
			}
		}
	}
	return p
}

// TestOperatorsThatSizeFromTheDeviceLimit: where an operator reads the
// count translation removes, the count is written where it reads it
// first, or the template is kept; where it reads nothing translation
// changes, nothing happens.
func TestOperatorsThatSizeFromTheDeviceLimit(t *testing.T) {
	gpu, tpu := corev1.ResourceName("nvidia.com/gpu"), corev1.ResourceName("google.com/tpu")
	worker := func(group, limits string) string {
		return "apiVersion: ray.io/v1\nkind: RayCluster\nspec:\n  headGroupSpec: {template: {spec: {containers: [{name: h}]}}}\n  workerGroupSpecs:\n  - groupName: g\n" + group +
			"    template: {spec: {containers: [{name: w, resources: {limits: " + limits + "}}, {name: sidecar, resources: {limits: {amd.com/gpu: 1}}}]}}\n"
	}
	runtime := func(policy, limits string) string {
		return "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\nspec:\n  mlPolicy: " + policy + "\n  template:\n    spec:\n      replicatedJobs:\n" +
			"      - {name: node, template: {spec: {template: {spec: {containers: [{name: node, resources: {limits: " + limits + "}}]}}}}}\n"
	}
	cases := map[string]struct {
		doc        string
		template   int
		remove     []corev1.ResourceName
		wantWrites []Written
		wantKeep   string // a part of the reason
		wantYAML   string // a part of the object after Pin
	}{
		"KubeRay: --num-gpus from the Ray container is written": {
			doc: worker("    rayStartParams: {}\n", "{nvidia.com/gpu: 2}"), template: 1, remove: []corev1.ResourceName{gpu},
			wantWrites: []Written{{Field: "spec.workerGroupSpecs[0].rayStartParams.num-gpus", Value: "2"}},
			wantYAML:   `rayStartParams: {num-gpus: "2"}`,
		},
		"KubeRay: without rayStartParams, it is added": {
			doc: worker("", "{nvidia.com/mig-1g.10gb: 1}"), template: 1, remove: []corev1.ResourceName{"nvidia.com/mig-1g.10gb"},
			wantWrites: []Written{{Field: "spec.workerGroupSpecs[0].rayStartParams.num-gpus", Value: "1"}},
			wantYAML:   "rayStartParams:\n      num-gpus: \"1\"",
		},
		"KubeRay: an explicit num-gpus wins, nothing written": {
			doc: worker("    rayStartParams: {num-gpus: \"2\"}\n", "{nvidia.com/gpu: 2}"), template: 1, remove: []corev1.ResourceName{gpu},
		},
		"KubeRay: a GPU in the group's resources wins, nothing written": {
			doc: worker("    resources: {GPU: \"2\"}\n", "{nvidia.com/gpu: 2}"), template: 1, remove: []corev1.ResourceName{gpu},
		},
		"KubeRay: only the first container counts (a sidecar's GPU is not read)": {
			doc: worker("", "{cpu: 1}"), template: 1, remove: []corev1.ResourceName{"amd.com/gpu"},
		},
		"KubeRay: TPU joins the custom resources of rayStartParams": {
			doc: worker("    rayStartParams: {resources: \"'{\\\"custom\\\": 2}'\"}\n", "{google.com/tpu: 4}"), template: 1, remove: []corev1.ResourceName{tpu},
			wantWrites: []Written{{Field: "spec.workerGroupSpecs[0].rayStartParams.resources", Value: `'{"TPU":4,"custom":2}'`}},
		},
		"KubeRay: TPU goes into the group's custom resources, which replace rayStartParams.resources": {
			doc: worker("    resources: {custom: \"1\"}\n", "{google.com/tpu: 4}"), template: 1, remove: []corev1.ResourceName{tpu},
			wantWrites: []Written{{Field: "spec.workerGroupSpecs[0].resources.TPU", Value: "4"}},
			wantYAML:   `resources: {custom: "1", TPU: "4"}`,
		},
		"KubeRay: a resources param KubeRay cannot parse adds nothing either way": {
			doc: worker("    rayStartParams: {resources: 'not json'}\n", "{nvidia.com/gpu: 1}"), template: 1, remove: []corev1.ResourceName{gpu},
		},
		"Trainer MPI: numProcPerNode 1 becomes the GPU count, so it is written": {
			doc: runtime("{mpi: {numProcPerNode: 1}}", "{nvidia.com/gpu: 8}"), remove: []corev1.ResourceName{gpu},
			wantWrites: []Written{{Field: "spec.mlPolicy.mpi.numProcPerNode", Value: "8"}},
			wantYAML:   "mpi: {numProcPerNode: 8}",
		},
		"Trainer MPI: an explicit numProcPerNode is not read from the GPUs": {
			doc: runtime("{mpi: {numProcPerNode: 4}}", "{nvidia.com/gpu: 8}"), remove: []corev1.ResourceName{gpu},
		},
		"Trainer MPI: one GPU leaves numProcPerNode at 1": {
			doc: runtime("{mpi: {}}", "{nvidia.com/gpu: 1}"), remove: []corev1.ResourceName{gpu},
		},
		"Trainer torch: kept": {
			doc: runtime("{torch: {}}", "{nvidia.com/gpu: 8}"), remove: []corev1.ResourceName{gpu}, wantKeep: "PET_NPROC_PER_NODE",
		},
		"Trainer Flux: kept": {
			doc: runtime("{flux: {numProcPerNode: 1}}", "{nvidia.com/gpu: 8}"), remove: []corev1.ResourceName{gpu}, wantKeep: "-g",
		},
		"Trainer JAX: reads no count": {
			doc: runtime("{jax: {}}", "{nvidia.com/gpu: 8}"), remove: []corev1.ResourceName{gpu},
		},
		"Trainer torch: a TPU is not a GPU to Trainer": {
			doc: runtime("{torch: {}}", "{google.com/tpu: 4}"), remove: []corev1.ResourceName{tpu},
		},
		"MPIJob v1: a launcher with GPUs is kept": {
			doc:    "apiVersion: kubeflow.org/v1\nkind: MPIJob\nspec:\n  mpiReplicaSpecs:\n    Launcher: {template: {spec: {containers: [{name: l, resources: {limits: {nvidia.com/gpu: 1}}}]}}}\n",
			remove: []corev1.ResourceName{gpu}, wantKeep: "hostfile",
		},
		"MPIJob v2beta1: runLauncherAsWorker says it, the launcher is translated": {
			doc:    "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nspec:\n  mpiReplicaSpecs:\n    Launcher: {template: {spec: {containers: [{name: l, resources: {limits: {nvidia.com/gpu: 1}}}]}}}\n",
			remove: []corev1.ResourceName{gpu},
		},
		"LeaderWorkerSet: TPUs are kept": {
			doc:    "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nspec:\n  leaderWorkerTemplate:\n    workerTemplate: {spec: {initContainers: [{name: i, resources: {requests: {google.com/tpu: 4}}}], containers: [{name: w}]}}\n",
			remove: []corev1.ResourceName{tpu}, wantKeep: "TPU_WORKER_HOSTNAMES",
		},
		"LeaderWorkerSet: GPUs are read by nothing": {
			doc:    "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nspec:\n  leaderWorkerTemplate:\n    workerTemplate: {spec: {containers: [{name: w, resources: {limits: {nvidia.com/gpu: 8}}}]}}\n",
			remove: []corev1.ResourceName{gpu},
		},
		"KServe: a framework predictor without runtimeVersion is kept": {
			doc:    "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nspec:\n  predictor:\n    pytorch: {storageUri: gs://m, resources: {limits: {nvidia.com/gpu: 1}}}\n",
			remove: []corev1.ResourceName{gpu}, wantKeep: "pytorch.runtimeVersion",
		},
		"KServe: with runtimeVersion the image is named, translated": {
			doc:    "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nspec:\n  predictor:\n    pytorch: {runtimeVersion: 0.12.0-gpu, resources: {limits: {nvidia.com/gpu: 1}}}\n",
			remove: []corev1.ResourceName{gpu},
		},
		"KServe: a custom predictor's container is not read": {
			doc:    "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nspec:\n  predictor:\n    containers: [{name: kserve-container, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]\n",
			remove: []corev1.ResourceName{gpu},
		},
		"KServe: a multi-node predictor is kept even with runtimeVersion": {
			doc:    "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nspec:\n  predictor:\n    model: {runtimeVersion: v1, resources: {limits: {nvidia.com/gpu: 1}}}\n    workerSpec: {tensorParallelSize: 1}\n",
			remove: []corev1.ResourceName{gpu}, wantKeep: "workerSpec",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rn, err := yaml.Parse(tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Find(rn.YNode())
			if err != nil {
				t.Fatal(err)
			}
			tm := f.Templates[tc.template]
			s := tm.Sizing(stripped(tm, tc.remove...))
			var gotWrites []Written
			gotKeep := ""
			if s != nil {
				gotWrites, gotKeep = s.Writes, s.Keep
			}
			if diff := cmp.Diff(tc.wantWrites, gotWrites); diff != "" {
				t.Errorf("writes (-want,+got):\n%s", diff)
			}
			if (tc.wantKeep == "") != (gotKeep == "") || !strings.Contains(gotKeep, tc.wantKeep) {
				t.Errorf("keep %q, want one with %q", gotKeep, tc.wantKeep)
			}
			if gotKeep != "" {
				if err := tm.Pin(s); err == nil {
					t.Error("Pin wrote a template its operator keeps")
				}
				return
			}
			if err := tm.Pin(s); err != nil {
				t.Fatal(err)
			}
			out, err := rn.String()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, tc.wantYAML) {
				t.Errorf("the object does not hold %q:\n%s", tc.wantYAML, out)
			}
			if s != nil {
				// What the operator reads from the object as written now and
				// the translated pod is what it read before.
				if again := tm.Sizing(stripped(tm, tc.remove...)); again != nil {
					t.Errorf("after Pin the operator still reads another count: %+v", again)
				}
			}
		})
	}
}

func TestRayGPUKeyIsKubeRays(t *testing.T) {
	for k, want := range map[string]bool{
		"nvidia.com/gpu": true, "amd.com/gpu": true, "nvidia.com/mig-1g.10gb": true, "nvidia.com/mig-3g.40gb": true,
		"nvidia.com/gpu.shared": false, "gpu.intel.com/i915": false, "nvidia.com/mig-1g.10gb.me": false, "google.com/tpu": false,
	} {
		if got := rayGPUKey(k); got != want {
			t.Errorf("rayGPUKey(%q) = %v, want %v", k, got, want)
		}
	}
	q := resource.MustParse("2")
	if got := rayStart(nil, nil, corev1.ResourceList{"amd.com/gpu": q, "nvidia.com/gpu": resource.MustParse("4")})["num-gpus"]; got != "2" {
		t.Errorf("num-gpus %q, want the first GPU name in order (amd.com/gpu: 2)", got)
	}
}
