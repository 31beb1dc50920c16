package podtemplates

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/reason"
)

// location is one entry of the table: where a kind holds pods. Patterns are
// dot-separated field names; "*" is every value of a mapping (rendered as its
// key) and a "[*]" suffix every element of a list (rendered as its index).
type location struct {
	group   string // API group, "" for the core group
	kinds   []string
	pattern string
	form    Form
	// object: the pattern leads to a whole embedded object (Kueue's
	// AppWrapper components), searched again from the table.
	object bool
	// field: FormContainer's key ("container" or "script").
	field string
	// unnamed: the name the operator gives a container that has none.
	unnamed string
	// kserve: a KServe component, whose `annotations` and `labels` go to
	// the pod; models are the keys that may hold its model container
	// (KServe names it kserve-container), one at most.
	kserve bool
	models []string
	// replicas is how many pods the template stands for (nil: the report
	// reads it from the object, or one); sizing is the operator that reads
	// the template's device count when it makes the workload.
	replicas replicaRule
	sizing   *operator
	// platform: what the platform's admission reads from the pods the
	// template makes, checked before the operator (GKE's TPU webhooks).
	platform *operator
	// scheduler: the field (dot-separated) whose schedulerName the
	// controller gives pods whose template names none, read schedulerUp
	// levels above the template along the pattern (a Volcano JobSpec's
	// schedulerName), and defaultScheduler the value its admission defaults
	// that field to.
	scheduler, defaultScheduler string
	schedulerUp                 int
	// build makes the pod of a FormOperator location from the operator's
	// fields at m.node (obj is the object); ok is false when it holds no
	// pod.
	build func(obj *yaml.Node, m matched) (pod *corev1.Pod, ok bool, err error)
	// keep, when set, says why claimbridge never writes a translation
	// here (Template.Unsupported), and keepCode the reason it is kept
	// with ("" for Unsupported).
	keep     string
	keepCode reason.Code
	// record: the kind's device fields are no request of pods (Kueue's
	// Workload copies the pod sets of the object it admits; a Karpenter
	// NodePool's limits cap its nodes): it holds no template to translate,
	// and its devices are not reported as asked for (Found.Record).
	record *Record
}

// Table is the known locations, by API group and kind. Versions are not
// part of the key: these fields have kept their place across versions.
var table = []location{
	{group: "", kinds: []string{"Pod"}, pattern: "", form: FormPod},
	{group: "", kinds: []string{"PodTemplate"}, pattern: "template", form: FormTemplate},
	{group: "", kinds: []string{"ReplicationController"}, pattern: "spec.template", form: FormTemplate},
	{group: "apps", kinds: []string{"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"}, pattern: "spec.template", form: FormTemplate},
	{group: "batch", kinds: []string{"Job"}, pattern: "spec.template", form: FormTemplate, platform: &gkeTPUPlatform},
	{group: "batch", kinds: []string{"CronJob"}, pattern: "spec.jobTemplate.spec.template", form: FormTemplate, platform: &gkeTPUPlatform},

	// Kubeflow Training Operator (v1) and MPI Operator (v2beta1).
	{group: "kubeflow.org", kinds: []string{"PyTorchJob"}, pattern: "spec.pytorchReplicaSpecs.*.template", form: FormTemplate, replicas: replicaSpecReplicas},
	{group: "kubeflow.org", kinds: []string{"TFJob"}, pattern: "spec.tfReplicaSpecs.*.template", form: FormTemplate, replicas: replicaSpecReplicas},
	{group: "kubeflow.org", kinds: []string{"MPIJob"}, pattern: "spec.mpiReplicaSpecs.*.template", form: FormTemplate, replicas: replicaSpecReplicas, sizing: &mpiLauncherOperator},
	{group: "kubeflow.org", kinds: []string{"XGBoostJob"}, pattern: "spec.xgbReplicaSpecs.*.template", form: FormTemplate, replicas: replicaSpecReplicas},
	{group: "kubeflow.org", kinds: []string{"PaddleJob"}, pattern: "spec.paddleReplicaSpecs.*.template", form: FormTemplate, replicas: replicaSpecReplicas},
	{group: "kubeflow.org", kinds: []string{"JAXJob"}, pattern: "spec.jaxReplicaSpecs.*.template", form: FormTemplate, replicas: replicaSpecReplicas},
	// Kubeflow Notebooks.
	{group: "kubeflow.org", kinds: []string{"Notebook"}, pattern: "spec.template", form: FormTemplate},
	// Kubeflow Trainer (v2): the pods of a TrainJob come from its runtime,
	// a JobSet template. A TrainJob's own spec.trainer.resourcesPerNode
	// overrides the runtime's container resources and has no claims: it is
	// reported, not translated.
	{group: "trainer.kubeflow.org", kinds: []string{"TrainingRuntime", "ClusterTrainingRuntime"}, pattern: "spec.template.spec.replicatedJobs[*].template.spec.template", form: FormTemplate,
		replicas: trainerReplicas, sizing: &trainerOperator},
	{group: "trainer.kubeflow.org", kinds: []string{"TrainJob"}},
	// JobSet and LeaderWorkerSet.
	{group: "jobset.x-k8s.io", kinds: []string{"JobSet"}, pattern: "spec.replicatedJobs[*].template.spec.template", form: FormTemplate, replicas: jobSetReplicas, platform: &gkeTPUPlatform},
	{group: "leaderworkerset.x-k8s.io", kinds: []string{"LeaderWorkerSet"}, pattern: "spec.leaderWorkerTemplate.leaderTemplate", form: FormTemplate, replicas: lwsReplicas, sizing: &lwsOperator},
	{group: "leaderworkerset.x-k8s.io", kinds: []string{"LeaderWorkerSet"}, pattern: "spec.leaderWorkerTemplate.workerTemplate", form: FormTemplate, replicas: lwsReplicas, sizing: &lwsOperator},
	// KubeRay.
	{group: "ray.io", kinds: []string{"RayCluster"}, pattern: "spec.headGroupSpec.template", form: FormTemplate, replicas: one, sizing: &kubeRayOperator},
	{group: "ray.io", kinds: []string{"RayCluster"}, pattern: "spec.workerGroupSpecs[*].template", form: FormTemplate, replicas: rayWorkerReplicas, sizing: &kubeRayOperator, platform: &gkeTPUPlatform},
	{group: "ray.io", kinds: []string{"RayJob"}, pattern: "spec.rayClusterSpec.headGroupSpec.template", form: FormTemplate, replicas: one, sizing: &kubeRayOperator},
	{group: "ray.io", kinds: []string{"RayJob"}, pattern: "spec.rayClusterSpec.workerGroupSpecs[*].template", form: FormTemplate, replicas: rayWorkerReplicas, sizing: &kubeRayOperator, platform: &gkeTPUPlatform},
	{group: "ray.io", kinds: []string{"RayJob"}, pattern: "spec.submitterPodTemplate", form: FormTemplate},
	{group: "ray.io", kinds: []string{"RayService"}, pattern: "spec.rayClusterConfig.headGroupSpec.template", form: FormTemplate, replicas: one, sizing: &kubeRayOperator},
	{group: "ray.io", kinds: []string{"RayService"}, pattern: "spec.rayClusterConfig.workerGroupSpecs[*].template", form: FormTemplate, replicas: rayWorkerReplicas, sizing: &kubeRayOperator, platform: &gkeTPUPlatform},
	// KServe: each component is a PodSpec inline.
	{group: "serving.kserve.io", kinds: []string{"InferenceService"}, pattern: "spec.predictor", form: FormPodSpec, kserve: true, models: kservePredictors, sizing: &kserveOperator},
	{group: "serving.kserve.io", kinds: []string{"InferenceService"}, pattern: "spec.transformer", form: FormPodSpec, kserve: true},
	{group: "serving.kserve.io", kinds: []string{"InferenceService"}, pattern: "spec.explainer", form: FormPodSpec, kserve: true, models: kserveExplainers},
	// Volcano. Its admission defaults a Job's spec.schedulerName to
	// "volcano" (pkg/webhooks/admission/jobs/mutate/mutate_job.go,
	// patchDefaultScheduler) and its job controller gives it to every pod
	// whose template names no scheduler (pkg/controllers/job/job_controller_util.go,
	// createJobPod). A JobFlow's JobTemplate and each replicated job of a
	// HyperJob are JobSpecs that become Volcano Jobs, through the same
	// admission (staging/src/volcano.sh/apis/pkg/apis/flow/v1alpha1/jobtemplate_types.go;
	// training/v1alpha1/hyperjob.go, ReplicatedJob.TemplateSpec).
	{group: "batch.volcano.sh", kinds: []string{"Job"}, pattern: "spec.tasks[*].template", form: FormTemplate,
		scheduler: "schedulerName", schedulerUp: 2, defaultScheduler: "volcano", replicas: volcanoReplicas},
	{group: "flow.volcano.sh", kinds: []string{"JobTemplate"}, pattern: "spec.tasks[*].template", form: FormTemplate,
		scheduler: "schedulerName", schedulerUp: 2, defaultScheduler: "volcano", replicas: volcanoReplicas},
	{group: "training.volcano.sh", kinds: []string{"HyperJob"}, pattern: "spec.replicatedJobs[*].templateSpec.tasks[*].template", form: FormTemplate,
		scheduler: "schedulerName", schedulerUp: 2, defaultScheduler: "volcano", replicas: hyperJobReplicas},
	// Argo Workflows: container and script templates.
	{group: "argoproj.io", kinds: []string{"Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate"}, pattern: "spec.templates[*]", form: FormContainer, field: "container"},
	{group: "argoproj.io", kinds: []string{"Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate"}, pattern: "spec.templates[*]", form: FormContainer, field: "script"},
	{group: "argoproj.io", kinds: []string{"CronWorkflow"}, pattern: "spec.workflowSpec.templates[*]", form: FormContainer, field: "container"},
	{group: "argoproj.io", kinds: []string{"CronWorkflow"}, pattern: "spec.workflowSpec.templates[*]", form: FormContainer, field: "script"},
	// Knative Serving: a RevisionTemplateSpec, whose spec is a PodSpec
	// inline beside containerConcurrency and timeoutSeconds.
	// A single container may go unnamed: Knative names it user-container.
	{group: "serving.knative.dev", kinds: []string{"Service", "Configuration"}, pattern: "spec.template", form: FormTemplate, unnamed: "user-container"},
	// Kueue's AppWrapper wraps whole objects.
	{group: "workload.codeflare.dev", kinds: []string{"AppWrapper"}, pattern: "spec.components[*].template", object: true},
	// Operators that make pods from fields of their own (kinds.go).
	{group: "sparkoperator.k8s.io", kinds: []string{"SparkApplication"}, pattern: "spec.driver", form: FormOperator, build: sparkPod, replicas: one, keep: sparkKeep},
	{group: "sparkoperator.k8s.io", kinds: []string{"SparkApplication"}, pattern: "spec.executor", form: FormOperator, build: sparkPod, replicas: sparkExecutors, keep: sparkKeep},
	{group: "sparkoperator.k8s.io", kinds: []string{"ScheduledSparkApplication"}, pattern: "spec.template.driver", form: FormOperator, build: sparkPod, replicas: one, keep: sparkKeep},
	{group: "sparkoperator.k8s.io", kinds: []string{"ScheduledSparkApplication"}, pattern: "spec.template.executor", form: FormOperator, build: sparkPod, replicas: sparkExecutors, keep: sparkKeep},
	{group: "kubevirt.io", kinds: []string{"VirtualMachine"}, pattern: "spec.template", form: FormOperator, build: virtLauncherPod, replicas: vmReplicas, keep: kubevirtKeep, keepCode: decide.ReasonVirtLauncherDevices},
	{group: "kubevirt.io", kinds: []string{"VirtualMachineInstanceReplicaSet"}, pattern: "spec.template", form: FormOperator, build: virtLauncherPod, replicas: vmiReplicaSetReplicas, keep: kubevirtKeep, keepCode: decide.ReasonVirtLauncherDevices},
	{group: "kubevirt.io", kinds: []string{"VirtualMachineInstance"}, pattern: "", form: FormOperator, build: virtLauncherPod, replicas: one, keep: kubevirtKeep, keepCode: decide.ReasonVirtLauncherDevices},
	{group: "pool.kubevirt.io", kinds: []string{"VirtualMachinePool"}, pattern: "spec.virtualMachineTemplate.spec.template", form: FormOperator, build: virtLauncherPod, replicas: vmPoolReplicas, keep: kubevirtKeep, keepCode: decide.ReasonVirtLauncherDevices},
	{group: "nvidia.com", kinds: []string{"DynamoGraphDeployment"}, pattern: "spec.services.*", form: FormOperator, build: dynamoPod, replicas: dynamoReplicas, keep: dynamoKeep, keepCode: decide.ReasonOperatorReadsLimit},
	{group: "nvidia.com", kinds: []string{"DynamoGraphDeployment"}, pattern: "spec.components[*].podTemplate", form: FormTemplate, replicas: dynamoReplicas, keep: dynamoKeep, keepCode: decide.ReasonOperatorReadsLimit},
	{group: "nvidia.com", kinds: []string{"DynamoComponentDeployment"}, pattern: "spec", form: FormOperator, build: dynamoPod, replicas: dynamoReplicas, keep: dynamoKeep, keepCode: decide.ReasonOperatorReadsLimit},
	{group: "nvidia.com", kinds: []string{"DynamoComponentDeployment"}, pattern: "spec.podTemplate", form: FormTemplate, replicas: dynamoReplicas, keep: dynamoKeep, keepCode: decide.ReasonOperatorReadsLimit},
	// Objects whose device fields are no request of pods (kinds.go).
	{group: "kueue.x-k8s.io", kinds: []string{"Workload"}, record: &kueueWorkload},
	{group: "karpenter.sh", kinds: []string{"NodePool"}, record: &karpenterNodePool},
	{group: "karpenter.sh", kinds: []string{"NodeClaim"}, record: &karpenterNodeClaim},
}

// Found is what [Find] located in one object.
type Found struct {
	Templates []*Template
	// Stray lists the extended resources asked for outside any template
	// (resources.limits/requests, or similar maps), with their field paths:
	// "spec.trainer.resourcesPerNode.limits[nvidia.com/gpu]".
	Stray []Stray
	// Record, when set, says that the object's device fields (Stray) are no
	// request of pods, and why.
	Record *Record
}

// Stray is an extended resource request outside a pod template.
type Stray struct {
	Field    string
	Resource string
	// Count is the quantity asked for, 0 when it is not a number.
	Count int64
}

func group(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

// Find locates the pod templates of an object (a YAML mapping). An error
// means a location the table names holds something that is not a pod
// template (the manifest is invalid); places found by shape that do not
// decode are not templates.
func Find(obj *yaml.Node) (*Found, error) {
	f := &Found{}
	claimed := map[*yaml.Node]bool{}
	if err := find(obj, nil, metaNamespace(obj), f, claimed); err != nil {
		return nil, err
	}
	stray(obj, nil, claimed, f)
	return f, nil
}

func find(obj *yaml.Node, prefix path, ns string, f *Found, claimed map[*yaml.Node]bool) error {
	if obj.Kind != yaml.MappingNode {
		return nil
	}
	apiVersion, kind := scalar(lookup(obj, "apiVersion")), scalar(lookup(obj, "kind"))
	if own := metaNamespace(obj); own != "" {
		ns = own
	}
	g := group(apiVersion)
	known := false
	for _, l := range table {
		if l.group != g || !slices.Contains(l.kinds, kind) {
			continue
		}
		known = true
		if l.record != nil {
			f.Record = l.record
			continue
		}
		if l.pattern == "" && l.form == "" {
			continue // listed so that its requests are reported, not searched by shape
		}
		rule := RuleTable
		if g == "" || g == "apps" || g == "batch" {
			rule = RuleBuiltin
		}
		var steps []string
		if l.pattern != "" {
			steps = strings.Split(l.pattern, ".")
		}
		for _, m := range match(obj, steps, prefix) {
			if l.object {
				if err := find(m.node, m.path, ns, f, claimed); err != nil {
					return err
				}
				continue
			}
			var t *Template
			var ok bool
			var err error
			if l.form == FormOperator {
				t, ok, err = operatorTemplate(obj, m, l, ns)
			} else {
				t, ok, err = newTemplate(m.node, l, ns)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", m.path.String(), err)
			}
			if !ok {
				continue
			}
			t.Path, t.Rule, t.Pattern = m.path.String(), rule, l.pattern
			t.obj, t.chain, t.at, t.op, t.platform = obj, m.chain, m.path, l.sizing, l.platform
			if l.kserve {
				t.kservePodMeta()
			}
			if l.replicas != nil {
				t.Replicas = l.replicas(t)
			}
			if l.scheduler != "" {
				t.InheritedScheduler = l.defaultScheduler
				if v := scalar(field(t.up(l.schedulerUp), strings.Split(l.scheduler, ".")...)); v != "" {
					t.InheritedScheduler = v
				}
			}
			if l.keep != "" && t.Unsupported == "" {
				t.Unsupported, t.UnsupportedCode = l.keep, l.keepCode
			}
			if l.form == FormContainer {
				t.Path, t.Pattern = m.path.field(l.field).String(), l.pattern+"."+l.field
			}
			claimed[t.node] = true
			f.Templates = append(f.Templates, t)
		}
	}
	if !known {
		shape(obj, prefix, prefix, ns, f, claimed)
	}
	// In the order they appear in the document.
	slices.SortStableFunc(f.Templates, func(a, b *Template) int {
		if a.node.Line != b.node.Line {
			return a.node.Line - b.node.Line
		}
		return a.node.Column - b.node.Column
	})
	return nil
}

type matched struct {
	node *yaml.Node
	path path
	// chain is every node the pattern went through, from the object down
	// to node (its last element).
	chain []*yaml.Node
}

// match walks a pattern from n.
func match(n *yaml.Node, steps []string, at path) []matched {
	return matchFrom(n, steps, at, nil)
}

func matchFrom(n *yaml.Node, steps []string, at path, chain []*yaml.Node) []matched {
	chain = append(chain[:len(chain):len(chain)], n)
	if len(steps) == 0 {
		return []matched{{n, at, chain}}
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	step := steps[0]
	var out []matched
	switch {
	case step == "*":
		for i := 0; i+1 < len(n.Content); i += 2 {
			out = append(out, matchFrom(n.Content[i+1], steps[1:], at.field(n.Content[i].Value), chain)...)
		}
	case strings.HasSuffix(step, "[*]"):
		name := strings.TrimSuffix(step, "[*]")
		list := lookup(n, name)
		if list == nil || list.Kind != yaml.SequenceNode {
			return nil
		}
		for i, e := range list.Content {
			out = append(out, matchFrom(e, steps[1:], at.field(name).index(i), chain)...)
		}
	default:
		v := lookup(n, step)
		if v == nil {
			return nil
		}
		out = matchFrom(v, steps[1:], at.field(step), chain)
	}
	return out
}

// shape finds pod templates in an object of an unlisted kind: a mapping
// with a `spec` that has named containers is a PodTemplateSpec (or, at the
// root, a Pod); a mapping that has named containers itself is a PodSpec.
// Found templates are not searched further; metadata and status are not
// searched.
func shape(n *yaml.Node, at, root path, ns string, f *Found, claimed map[*yaml.Node]bool) {
	if n.Kind == yaml.SequenceNode {
		for i, e := range n.Content {
			shape(e, at.index(i), root, ns, f, claimed)
		}
		return
	}
	if n.Kind != yaml.MappingNode {
		return
	}
	isRoot := len(at) == len(root)
	if spec := lookup(n, "spec"); spec != nil && hasContainers(spec) {
		form := FormTemplate
		if isRoot {
			form = FormPod
		}
		if t, ok, err := newTemplate(n, location{form: form}, ns); err == nil && ok {
			t.Path, t.Rule, t.Pattern = at.String(), RuleShape, "template with spec.containers"
			if isRoot {
				t.Pattern = "object with spec.containers"
			}
			claimed[n] = true
			f.Templates = append(f.Templates, t)
			return
		}
	}
	if !isRoot && hasContainers(n) {
		if t, ok, err := newTemplate(n, location{form: FormPodSpec}, ns); err == nil && ok {
			t.Path, t.Rule, t.Pattern = at.String(), RuleShape, "PodSpec with containers"
			claimed[n] = true
			f.Templates = append(f.Templates, t)
			return
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if isRoot && (k == "metadata" || k == "status" || k == "apiVersion" || k == "kind") {
			continue
		}
		shape(n.Content[i+1], at.field(k), root, ns, f, claimed)
	}
}

// hasContainers: a `containers` list of mappings that each have a name.
func hasContainers(n *yaml.Node) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	c := lookup(n, "containers")
	if c == nil || c.Kind != yaml.SequenceNode || len(c.Content) == 0 {
		return false
	}
	for _, e := range c.Content {
		if e.Kind != yaml.MappingNode || scalar(lookup(e, "name")) == "" {
			return false
		}
	}
	return true
}

// newTemplate decodes the pod at n. ok is false when there is no pod there
// (an Argo template of another type).
func newTemplate(n *yaml.Node, l location, ns string) (*Template, bool, error) {
	if n.Kind != yaml.MappingNode {
		return nil, false, fmt.Errorf("is a %s, not a mapping", kindName(n))
	}
	form, field := l.form, l.field
	t := &Template{Form: form, node: n, namespace: ns, field: field}
	pod := &corev1.Pod{}
	switch form {
	case FormPod:
		if err := decode(n, pod); err != nil {
			return nil, false, err
		}
		pod.APIVersion, pod.Kind = "v1", "Pod"
	case FormTemplate:
		var pt corev1.PodTemplateSpec
		if err := decode(n, &pt); err != nil {
			return nil, false, err
		}
		t.tmplNS = pt.Namespace
		pod.ObjectMeta, pod.Spec = pt.ObjectMeta, pt.Spec
	case FormPodSpec:
		var c struct {
			corev1.PodSpec `json:",inline"`
			Annotations    map[string]string `json:"annotations,omitempty"`
			Labels         map[string]string `json:"labels,omitempty"`
		}
		if err := decode(n, &c); err != nil {
			return nil, false, err
		}
		pod.Spec = c.PodSpec
		model, err := t.kserveModel(n, l.models)
		if err != nil {
			return nil, false, err
		}
		if model != nil {
			// KServe names the model's container kserve-container.
			t.model, t.named = true, model.Name != ""
			if model.Name == "" {
				model.Name = "kserve-container"
			}
			pod.Spec.Containers = append([]corev1.Container{*model}, pod.Spec.Containers...)
		}
		if len(pod.Spec.Containers) == 0 {
			return nil, false, nil
		}
		if l.kserve {
			t.metaKeys = true
			pod.Annotations, pod.Labels = c.Annotations, c.Labels
		}
	case FormContainer:
		cn := lookup(n, field)
		if cn == nil {
			return nil, false, nil
		}
		var c corev1.Container
		if err := decode(cn, &c); err != nil {
			return nil, false, fmt.Errorf("%s: %w", field, err)
		}
		var at argoTemplate
		if err := decode(n, &at); err != nil {
			return nil, false, err
		}
		// Argo names the container of a container or script template main.
		t.named = c.Name != ""
		if c.Name == "" {
			c.Name = "main"
		}
		pod.Annotations, pod.Labels = at.Metadata.Annotations, at.Metadata.Labels
		pod.Spec = corev1.PodSpec{Containers: []corev1.Container{c}, NodeSelector: at.NodeSelector, Affinity: at.Affinity, Tolerations: at.Tolerations}
		t.patch = at.PodSpecPatch
		if at.PodSpecPatch != "" {
			var err error
			if t.patchMap, err = mergeablePatch(at.PodSpecPatch); err != nil {
				t.Unsupported = "podSpecPatch: " + err.Error()
			}
		}
	}
	pod.APIVersion, pod.Kind = "v1", "Pod"
	if pod.Namespace == "" {
		pod.Namespace = ns
	}
	t.orig = pod
	if l.unnamed != "" {
		t.nameContainers(l.unnamed)
	}
	return t, true, nil
}

// stray records extended-resource requests outside the claimed templates:
// in any mapping named limits, requests or resourcesPerNode's limits.
func stray(n *yaml.Node, at path, claimed map[*yaml.Node]bool, f *Found) {
	if claimed[n] {
		return
	}
	switch n.Kind {
	case yaml.SequenceNode:
		for i, e := range n.Content {
			stray(e, at.index(i), claimed, f)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			if len(at) == 0 && (k == "metadata" || k == "status") {
				continue
			}
			if (k == "limits" || k == "requests") && v.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(v.Content); j += 2 {
					r := v.Content[j].Value
					if podfacts.IsExtendedResource(corev1.ResourceName(r)) {
						var count int64
						if q, err := resource.ParseQuantity(v.Content[j+1].Value); err == nil {
							count = q.Value()
						}
						f.Stray = append(f.Stray, Stray{Field: at.field(k).String() + "[" + r + "]", Resource: r, Count: count})
					}
				}
				continue
			}
			stray(v, at.field(k), claimed, f)
		}
	}
}

func metaNamespace(obj *yaml.Node) string {
	if obj.Kind != yaml.MappingNode {
		return ""
	}
	if m := lookup(obj, "metadata"); m != nil && m.Kind == yaml.MappingNode {
		return scalar(lookup(m, "namespace"))
	}
	return ""
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == yaml.NodeTagNull {
		return ""
	}
	return n.Value
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	}
	return "node"
}

// mergeablePatch parses an Argo podSpecPatch that claimbridge can add the
// pod's resourceClaims to: YAML or JSON without Argo expressions, that does
// not patch what translation reads or writes (containers, node selection,
// claims). Anything else could change the pod behind the translator's back.
func mergeablePatch(patch string) (map[string]any, error) {
	if strings.Contains(patch, "{{") {
		return nil, errors.New("it holds Argo expressions, so the pod it makes is only known at run time")
	}
	var m map[string]any
	if err := sigsyaml.Unmarshal([]byte(patch), &m); err != nil {
		return nil, fmt.Errorf("it does not parse: %w", err)
	}
	for _, k := range []string{"containers", "initContainers", "resourceClaims", "nodeSelector", "affinity"} {
		if _, ok := m[k]; ok {
			return nil, fmt.Errorf("it patches the pod's %s, which translation reads and writes; claimbridge does not merge into it", k)
		}
	}
	return m, nil
}
