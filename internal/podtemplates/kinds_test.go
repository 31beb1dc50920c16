package podtemplates

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/reason"
)

// located is what a test reads of a template: where, how many pods, the
// pod's node selection and scheduler, the extended resources of each
// container (limits) and why it is never written.
type located struct {
	Path         string
	Form         Form
	Replicas     int32
	Scheduler    string
	NodeSelector map[string]string
	Limits       map[string]map[string]string
	Keep         reason.Code // UnsupportedCode, "-" when it is written back
}

func locate(f *Found) []located {
	var out []located
	for _, tm := range f.Templates {
		p := tm.Pod()
		l := located{Path: tm.Path, Form: tm.Form, Replicas: -1, Scheduler: p.Spec.SchedulerName, NodeSelector: p.Spec.NodeSelector, Keep: "-"}
		if tm.InheritedScheduler != "" && l.Scheduler == "" {
			l.Scheduler = tm.InheritedScheduler
		}
		if tm.Replicas != nil {
			l.Replicas = *tm.Replicas
		}
		if tm.Unsupported != "" {
			l.Keep = tm.UnsupportedCode
		}
		for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
			for _, n := range slices.Sorted(maps.Keys(c.Resources.Limits)) {
				if l.Limits == nil {
					l.Limits = map[string]map[string]string{}
				}
				if l.Limits[c.Name] == nil {
					l.Limits[c.Name] = map[string]string{}
				}
				q := c.Resources.Limits[n]
				l.Limits[c.Name][string(n)] = q.String()
			}
		}
		out = append(out, l)
	}
	return out
}

// TestKindsWhoseOperatorMakesThePod: the Spark operator, KubeVirt and
// Dynamo make their pods from fields of their own; Volcano's HyperJob and
// JobTemplate hold Volcano Job specs. Each is located where its operator
// reads it, with the devices, node selection, scheduler and pods the
// operator gives it, and those never written say why.
func TestKindsWhoseOperatorMakesThePod(t *testing.T) {
	gpu := func(c, n string) map[string]map[string]string {
		return map[string]map[string]string{c: {"nvidia.com/gpu": n}}
	}
	cases := map[string]struct {
		doc  string
		want []located
	}{
		"SparkApplication: the executor's gpu field and node selector, the driver's none; executors by instances": {
			doc: "apiVersion: sparkoperator.k8s.io/v1beta2\nkind: SparkApplication\nmetadata: {name: s, namespace: ns}\nspec:\n  sparkVersion: \"3.5.1\"\n" +
				"  nodeSelector: {zone: a}\n  batchScheduler: volcano\n" +
				"  driver: {cores: 1}\n  executor: {instances: 3, gpu: {name: nvidia.com/gpu, quantity: 2}, nodeSelector: {NodeGroupType: GPU}}\n",
			want: []located{
				{Path: "spec.driver", Form: FormOperator, Replicas: 1, Scheduler: "volcano", NodeSelector: map[string]string{"zone": "a"}, Keep: ""},
				{Path: "spec.executor", Form: FormOperator, Replicas: 3, Scheduler: "volcano", NodeSelector: map[string]string{"zone": "a", "NodeGroupType": "GPU"},
					Limits: gpu(sparkExecutorContainer, "2"), Keep: ""},
			},
		},
		"SparkApplication: sparkConf resources with a vendor become limits; dynamic allocation starts max(min, initial)": {
			doc: "apiVersion: sparkoperator.k8s.io/v1beta2\nkind: SparkApplication\nspec:\n  sparkConf:\n    spark.executor.resource.gpu.amount: \"1\"\n" +
				"    spark.executor.resource.gpu.vendor: nvidia.com\n    spark.driver.resource.gpu.amount: \"1\"\n" +
				"  dynamicAllocation: {enabled: true, initialExecutors: 2, minExecutors: 4}\n  driver: {}\n  executor: {}\n",
			want: []located{
				{Path: "spec.driver", Form: FormOperator, Replicas: 1, Keep: ""},
				{Path: "spec.executor", Form: FormOperator, Replicas: 4, Limits: gpu(sparkExecutorContainer, "1"), Keep: ""},
			},
		},
		"SparkApplication with a pod template (Spark 3): the template, the gpu field unread": {
			doc: "apiVersion: sparkoperator.k8s.io/v1beta2\nkind: SparkApplication\nspec:\n  sparkVersion: \"3.5.0\"\n  driver: {}\n" +
				"  executor:\n    gpu: {name: nvidia.com/gpu, quantity: 4}\n    template: {spec: {nodeSelector: {pool: gpu}, containers: [{name: spark-kubernetes-executor, resources: {limits: {amd.com/gpu: 1}}}]}}\n",
			want: []located{
				{Path: "spec.driver", Form: FormOperator, Replicas: 1, Keep: ""},
				{Path: "spec.executor", Form: FormOperator, Replicas: 1, NodeSelector: map[string]string{"pool": "gpu"},
					Limits: map[string]map[string]string{sparkExecutorContainer: {"amd.com/gpu": "1"}}, Keep: ""},
			},
		},
		"ScheduledSparkApplication: under spec.template": {
			doc: "apiVersion: sparkoperator.k8s.io/v1beta2\nkind: ScheduledSparkApplication\nspec:\n  schedule: \"@every 1h\"\n  template:\n    driver: {gpu: {name: nvidia.com/gpu, quantity: 1}}\n    executor: {instances: 2}\n",
			want: []located{
				{Path: "spec.template.driver", Form: FormOperator, Replicas: 1, Limits: gpu(sparkDriverContainer, "1"), Keep: ""},
				{Path: "spec.template.executor", Form: FormOperator, Replicas: 2, Keep: ""},
			},
		},
		"VirtualMachine: one device per gpus and hostDevices entry by deviceName; a claimName is KubeVirt's own DRA": {
			doc: "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nspec:\n  runStrategy: Always\n  template:\n    metadata: {labels: {kubevirt.io/vm: v}}\n    spec:\n" +
				"      nodeSelector: {nvidia.com/gpu.workload.config: vm-passthrough}\n      domain:\n        devices:\n" +
				"          gpus: [{name: g1, deviceName: nvidia.com/GA102GL_A10}, {name: g2, deviceName: nvidia.com/GA102GL_A10}, {name: g3, claimName: c, requestName: r}]\n" +
				"          hostDevices: [{name: nic, deviceName: intel.com/sriov_vf}]\n",
			want: []located{{Path: "spec.template", Form: FormOperator, Replicas: 1, NodeSelector: map[string]string{"nvidia.com/gpu.workload.config": "vm-passthrough", "kubevirt.io/schedulable": "true"},
				Limits: map[string]map[string]string{"compute": {"nvidia.com/GA102GL_A10": "2", "intel.com/sriov_vf": "1"}}, Keep: decide.ReasonVirtLauncherDevices}},
		},
		"VirtualMachine halted: no pod": {
			doc:  "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nspec:\n  runStrategy: Halted\n  template:\n    spec: {domain: {devices: {gpus: [{name: g, deviceName: nvidia.com/gpu}]}}}\n",
			want: []located{{Path: "spec.template", Form: FormOperator, Replicas: 0, NodeSelector: map[string]string{"kubevirt.io/schedulable": "true"}, Limits: gpu("compute", "1"), Keep: decide.ReasonVirtLauncherDevices}},
		},
		"VirtualMachineInstance: the object itself; a pool's replicas": {
			doc:  "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nspec: {domain: {devices: {hostDevices: [{name: h, deviceName: nvidia.com/gpu}]}}}\n",
			want: []located{{Path: "", Form: FormOperator, Replicas: 1, NodeSelector: map[string]string{"kubevirt.io/schedulable": "true"}, Limits: gpu("compute", "1"), Keep: decide.ReasonVirtLauncherDevices}},
		},
		"VirtualMachinePool: replicas of the VM template": {
			doc: "apiVersion: pool.kubevirt.io/v1alpha1\nkind: VirtualMachinePool\nspec:\n  replicas: 3\n  virtualMachineTemplate:\n    spec:\n      runStrategy: Always\n" +
				"      template: {spec: {domain: {devices: {gpus: [{name: g, deviceName: nvidia.com/TU104GL_Tesla_T4}]}}}}\n",
			want: []located{{Path: "spec.virtualMachineTemplate.spec.template", Form: FormOperator, Replicas: 3, NodeSelector: map[string]string{"kubevirt.io/schedulable": "true"},
				Limits: map[string]map[string]string{"compute": {"nvidia.com/TU104GL_Tesla_T4": "1"}}, Keep: decide.ReasonVirtLauncherDevices}},
		},
		"DynamoGraphDeployment v1alpha1: gpu as gpuType or nvidia.com/gpu on the main container; replicas × nodeCount": {
			doc: "apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nspec:\n  services:\n    Frontend: {replicas: 1, extraPodSpec: {mainContainer: {image: f}}}\n" +
				"    Worker:\n      replicas: 2\n      multinode: {nodeCount: 2}\n      resources: {limits: {gpu: \"8\", custom: {rdma/ib: \"1\"}}}\n" +
				"      extraPodSpec: {nodeSelector: {gpu: h100}, mainContainer: {image: w}}\n" +
				"    Amd: {resources: {limits: {gpu: \"1\", gpuType: amd.com/gpu}}}\n",
			want: []located{
				{Path: "spec.services.Frontend", Form: FormOperator, Replicas: 1, Keep: decide.ReasonOperatorReadsLimit},
				{Path: "spec.services.Worker", Form: FormOperator, Replicas: 4, NodeSelector: map[string]string{"gpu": "h100"},
					Limits: map[string]map[string]string{"main": {"nvidia.com/gpu": "8", "rdma/ib": "1"}}, Keep: decide.ReasonOperatorReadsLimit},
				{Path: "spec.services.Amd", Form: FormOperator, Replicas: 1, Limits: map[string]map[string]string{"main": {"amd.com/gpu": "1"}}, Keep: decide.ReasonOperatorReadsLimit},
			},
		},
		"DynamoGraphDeployment v1beta1: each component's podTemplate": {
			doc: "apiVersion: nvidia.com/v1beta1\nkind: DynamoGraphDeployment\nspec:\n  components:\n" +
				"  - {name: decode, replicas: 3, podTemplate: {spec: {containers: [{name: main, image: w, resources: {limits: {nvidia.com/gpu: 2}}}]}}}\n",
			want: []located{{Path: "spec.components[0].podTemplate", Form: FormTemplate, Replicas: 3, Limits: gpu("main", "2"), Keep: decide.ReasonOperatorReadsLimit}},
		},
		"HyperJob: each replicated job's tasks, the pods of its templateSpec's scheduler (volcano by default), replicas × task replicas": {
			doc: "apiVersion: training.volcano.sh/v1alpha1\nkind: HyperJob\nspec:\n  replicatedJobs:\n" +
				"  - {name: a, replicas: 2, templateSpec: {tasks: [{name: w, replicas: 4, " + podTemplate + "}]}}\n" +
				"  - {name: b, templateSpec: {schedulerName: default-scheduler, tasks: [{name: w, replicas: 1, " + podTemplate + "}]}}\n",
			want: []located{
				{Path: "spec.replicatedJobs[0].templateSpec.tasks[0].template", Form: FormTemplate, Replicas: 8, Scheduler: "volcano", Keep: "-"},
				{Path: "spec.replicatedJobs[1].templateSpec.tasks[0].template", Form: FormTemplate, Replicas: 1, Scheduler: "default-scheduler", Keep: "-"},
			},
		},
		"JobFlow's JobTemplate and a Volcano Job: their own schedulerName": {
			doc:  "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobTemplate\nspec:\n  schedulerName: kai-scheduler\n  tasks: [{name: t, replicas: 2, " + podTemplate + "}]\n",
			want: []located{{Path: "spec.tasks[0].template", Form: FormTemplate, Replicas: 2, Scheduler: "kai-scheduler", Keep: "-"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := findIn(t, tc.doc)
			if diff := cmp.Diff(tc.want, locate(f)); diff != "" {
				t.Errorf("templates (-want,+got):\n%s", diff)
			}
			if len(f.Stray) > 0 {
				t.Errorf("devices asked for outside the templates: %v", f.Stray)
			}
		})
	}
}

// TestDeviceFieldsThatAskForNothing: a Kueue Workload, a Karpenter
// NodeClaim and NodePool name devices in their limits or requests; none is
// a template or an Unsupported request, and each says why.
func TestDeviceFieldsThatAskForNothing(t *testing.T) {
	cases := map[string]struct {
		doc       string
		wantKind  RecordKind
		wantStray []string
	}{
		"Kueue Workload: a copy of the Job's pod sets": {
			doc: "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nspec:\n  podSets:\n  - name: main\n    count: 3\n" +
				"    template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}\n",
			wantKind: RecordCopy, wantStray: []string{"spec.podSets[0].template.spec.containers[0].resources.limits[nvidia.com/gpu]"},
		},
		"Karpenter NodeClaim: a copy of its pods' requests": {
			doc:      "apiVersion: karpenter.sh/v1\nkind: NodeClaim\nspec:\n  resources: {requests: {nvidia.com/gpu: 4, cpu: 8}}\n",
			wantKind: RecordCopy, wantStray: []string{"spec.resources.requests[nvidia.com/gpu]"},
		},
		"Karpenter NodePool: limits are a cap": {
			doc:      "apiVersion: karpenter.sh/v1\nkind: NodePool\nspec:\n  limits: {cpu: 100, nvidia.com/gpu: 16}\n  template: {spec: {requirements: []}}\n",
			wantKind: RecordCap, wantStray: []string{"spec.limits[nvidia.com/gpu]"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := findIn(t, tc.doc)
			if len(f.Templates) > 0 {
				t.Errorf("%d templates, want none", len(f.Templates))
			}
			if f.Record == nil || f.Record.Kind != tc.wantKind || f.Record.Why == "" {
				t.Fatalf("record %+v, want one of kind %s that says why", f.Record, tc.wantKind)
			}
			var stray []string
			for _, s := range f.Stray {
				stray = append(stray, s.Field)
			}
			if diff := cmp.Diff(tc.wantStray, stray); diff != "" {
				t.Errorf("device fields (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestOperatorPodsAreNeverWritten: setting a translation into a pod the
// operator makes from its own fields fails with why, and leaves the object
// as it was.
func TestOperatorPodsAreNeverWritten(t *testing.T) {
	doc := "apiVersion: sparkoperator.k8s.io/v1beta2\nkind: SparkApplication\nspec:\n  executor: {gpu: {name: nvidia.com/gpu, quantity: 1}}\n"
	f := findIn(t, doc)
	if len(f.Templates) != 1 {
		t.Fatalf("%d templates, want the executor", len(f.Templates))
	}
	tm := f.Templates[0]
	p := tm.Pod()
	p.Spec.Containers[0].Resources.Limits = nil
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "claimbridge"}}
	if err := tm.Set(p); err == nil {
		t.Error("Set succeeded on a Spark executor")
	}
	if q := tm.Pod().Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; q.Value() != 1 {
		t.Errorf("the executor's pod asks for %s GPUs after a failed Set, want 1", q.String())
	}
}
