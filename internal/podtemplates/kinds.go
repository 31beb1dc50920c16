package podtemplates

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/claimbridge/claimbridge/podfacts"
)

// Kinds whose operator makes its pods from fields of its own, not from a
// pod template: the Spark operator's driver and executor, KubeVirt's
// virt-launcher, Dynamo's services. The pod is built here as the operator
// builds it, so that its row asks for the devices the pods will ask for,
// with their node selection; claimbridge never writes into these fields
// (location.keep says why), and the webhook decides the pods the operator
// makes. And kinds whose device fields are no request of pods at all
// (Record).

// operatorTemplate is the template of a FormOperator location: the pod
// the operator makes from the fields at m.node. ok is false when there is
// none there.
func operatorTemplate(obj *yaml.Node, m matched, l location, ns string) (*Template, bool, error) {
	if isNull(m.node) {
		return nil, false, nil
	}
	if m.node.Kind != yaml.MappingNode {
		return nil, false, fmt.Errorf("is a %s, not a mapping", kindName(m.node))
	}
	pod, ok, err := l.build(obj, m)
	if err != nil || !ok {
		return nil, ok, err
	}
	pod.APIVersion, pod.Kind = "v1", "Pod"
	if pod.Namespace == "" {
		pod.Namespace = ns
	}
	return &Template{Form: FormOperator, node: m.node, namespace: ns, orig: pod}, true, nil
}

// parentOf is the mapping that holds the matched node (the object itself
// for a pattern of one step).
func parentOf(obj *yaml.Node, m matched) *yaml.Node {
	if len(m.chain) < 2 {
		return obj
	}
	return m.chain[len(m.chain)-2]
}

// addDevice adds n devices of a resource to the requests and limits of a
// container.
func addDevice(c *corev1.Container, name string, n int64) {
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		q := list[corev1.ResourceName(name)]
		q.Add(*resource.NewQuantity(n, resource.DecimalSI))
		list[corev1.ResourceName(name)] = q
	}
}

// --- Spark operator (Kubeflow spark-operator, sparkoperator.k8s.io) --------

// The container names the operator gives Spark (kubeflow/spark-operator
// pkg/common/spark.go, SparkDriverContainerName and
// Spark3DefaultExecutorContainerName).
const (
	sparkDriverContainer   = "spark-kubernetes-driver"
	sparkExecutorContainer = "spark-kubernetes-executor"
)

// sparkKeep is why a SparkApplication's driver and executor are never
// translated in the object.
const sparkKeep = "the Spark operator and Spark make the driver and executor pods when the application runs: the operator's pod webhook writes " +
	"spec.driver.gpu and spec.executor.gpu ({name, quantity}) into the Spark container's limits, Spark adds spark.<role>.resource.<name>.amount " +
	"with its vendor, and with a pod template Spark builds the pod from spec.<role>.template itself (kubeflow/spark-operator " +
	"internal/webhook/sparkpod_defaulter.go, addGPU; apache/spark KubernetesUtils.buildResourcesQuantities): claimbridge writes no claim into " +
	"these fields and keeps the object as it is; its webhook decides the pods Spark creates (it is called again after the operator's webhook, " +
	"reinvocationPolicy IfNeeded)"

// sparkPodSpec is what the operator reads of spec.driver or
// spec.executor to make the pod (api/v1beta2/sparkapplication_types.go,
// SparkPodSpec).
type sparkPodSpec struct {
	Template *corev1.PodTemplateSpec `json:"template,omitempty"`
	GPU      *struct {
		Name     string `json:"name"`
		Quantity int64  `json:"quantity"`
	} `json:"gpu,omitempty"`
	Labels            map[string]string   `json:"labels,omitempty"`
	Annotations       map[string]string   `json:"annotations,omitempty"`
	NodeSelector      map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations       []corev1.Toleration `json:"tolerations,omitempty"`
	Affinity          *corev1.Affinity    `json:"affinity,omitempty"`
	SchedulerName     string              `json:"schedulerName,omitempty"`
	PriorityClassName string              `json:"priorityClassName,omitempty"`
	InitContainers    []corev1.Container  `json:"initContainers,omitempty"`
	Sidecars          []corev1.Container  `json:"sidecars,omitempty"`
}

// sparkApp is what the operator reads of the application around them.
type sparkApp struct {
	SparkVersion   string            `json:"sparkVersion,omitempty"`
	SparkConf      map[string]string `json:"sparkConf,omitempty"`
	NodeSelector   map[string]string `json:"nodeSelector,omitempty"`
	BatchScheduler string            `json:"batchScheduler,omitempty"`
}

// sparkPod is the driver's or an executor's pod as the operator and Spark
// make it. Without a pod template (or before Spark 3) the operator's pod
// webhook applies the component's fields (internal/webhook/sparkpod_defaulter.go,
// mutateSparkPod: labels, annotations, node selector, affinity,
// tolerations, scheduler — the application's batchScheduler first —,
// priority class, init containers, sidecars and the gpu); with one,
// Spark starts from the template and the webhook leaves the pod alone
// (internal/controller/sparkapplication/submission.go, driverConfOption).
// Spark adds the application's node selector
// (spark.kubernetes.node.selector.*) and the resources of its
// configuration, spark.<role>.resource.<name>.amount as <vendor>/<name>.
func sparkPod(obj *yaml.Node, m matched) (*corev1.Pod, bool, error) {
	role := m.path[len(m.path)-1]
	var ps sparkPodSpec
	if err := decode(m.node, &ps); err != nil {
		return nil, false, err
	}
	var app sparkApp
	if err := decode(parentOf(obj, m), &app); err != nil {
		return nil, false, err
	}
	major, _, _ := strings.Cut(app.SparkVersion, ".")
	v, err := strconv.Atoi(major)
	webhook := ps.Template == nil || err == nil && v < 3
	pod := &corev1.Pod{}
	if !webhook {
		pod.ObjectMeta, pod.Spec = *ps.Template.ObjectMeta.DeepCopy(), *ps.Template.Spec.DeepCopy()
	}
	name := sparkDriverContainer
	if role == "executor" {
		name = sparkExecutorContainer
	}
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 && len(pod.Spec.Containers) > 0 {
		i = 0 // Spark takes the first container when none has the name
	}
	if i < 0 {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: name})
		i = 0
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["spark-role"] = role
	pod.Spec.NodeSelector = merged(app.NodeSelector, pod.Spec.NodeSelector)
	if webhook {
		sparkWebhook(pod, &ps, app)
	}
	c := &pod.Spec.Containers[i]
	for _, k := range slices.Sorted(maps.Keys(app.SparkConf)) {
		prefix := "spark." + role + ".resource."
		res, ok := strings.CutSuffix(strings.TrimPrefix(k, prefix), ".amount")
		vendor := app.SparkConf[prefix+res+".vendor"]
		n, err := strconv.ParseInt(app.SparkConf[k], 10, 64)
		if !strings.HasPrefix(k, prefix) || !ok || vendor == "" || err != nil || n <= 0 {
			continue
		}
		setDevices(c, vendor+"/"+res, n)
	}
	if webhook && ps.GPU != nil && ps.GPU.Name != "" && ps.GPU.Quantity > 0 {
		setDevices(c, ps.GPU.Name, ps.GPU.Quantity)
	}
	return pod, true, nil
}

// sparkWebhook applies a component's fields as the operator's pod webhook
// does.
func sparkWebhook(pod *corev1.Pod, ps *sparkPodSpec, app sparkApp) {
	maps.Copy(pod.Labels, ps.Labels)
	if len(ps.Annotations) > 0 {
		pod.Annotations = merged(pod.Annotations, ps.Annotations)
	}
	pod.Spec.NodeSelector = merged(pod.Spec.NodeSelector, ps.NodeSelector)
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, ps.Tolerations...)
	if ps.Affinity != nil {
		pod.Spec.Affinity = ps.Affinity
	}
	pod.Spec.SchedulerName = ps.SchedulerName
	if app.BatchScheduler != "" {
		pod.Spec.SchedulerName = app.BatchScheduler
	}
	pod.Spec.PriorityClassName = ps.PriorityClassName
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, ps.InitContainers...)
	pod.Spec.Containers = append(pod.Spec.Containers, ps.Sidecars...)
}

// setDevices sets a container's limit of an extended resource, as the
// operator's webhook and Spark do (the request follows the limit).
func setDevices(c *corev1.Container, name string, n int64) {
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[corev1.ResourceName(name)] = *resource.NewQuantity(n, resource.DecimalSI)
	delete(c.Resources.Requests, corev1.ResourceName(name))
}

// merged is a copy of a with b's entries over it; nil when both are empty.
func merged(a, b map[string]string) map[string]string {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

// sparkExecutors: the executors a SparkApplication starts with. The
// operator defaults spec.executor.instances to 1 unless
// spark.executor.instances is set or dynamic allocation is on
// (api/v1beta2/defaults.go, setExecutorSpecDefaults); with dynamic
// allocation Spark starts max(minExecutors, initialExecutors, instances)
// (Spark's ExecutorAllocationManager, getDynamicAllocationInitialExecutors).
func sparkExecutors(t *Template) *int32 {
	exec, app := t.up(0), t.up(1)
	conf := stringMap(field(app, "sparkConf"))
	instances := intAt(exec, -1, "instances")
	if v, err := strconv.ParseInt(conf["spark.executor.instances"], 10, 64); instances < 0 && err == nil {
		instances = v
	}
	if scalar(field(app, "dynamicAllocation", "enabled")) == "true" || conf["spark.dynamicAllocation.enabled"] == "true" {
		return count(max(intAt(app, 0, "dynamicAllocation", "initialExecutors"), intAt(app, 0, "dynamicAllocation", "minExecutors"), instances, 0))
	}
	if instances < 0 {
		instances = 1
	}
	return count(instances)
}

// --- KubeVirt ----------------------------------------------------------------

// kubevirtKeep is why a VM's devices stay on the device plugin.
const kubevirtKeep = "KubeVirt asks for each of the VM's gpus and hostDevices by deviceName in its virt-launcher pod (one device per entry: " +
	"pkg/virt-controller/services/renderresources.go, WithGPUsDevicePlugins, WithHostDevicesDevicePlugins), and virt-launcher hands the VM the PCI or " +
	"mediated device whose address the device plugin puts in its environment (PCI_RESOURCE_<resource>, MDEV_PCI_RESOURCE_<resource>: " +
	"pkg/virt-launcher/virtwrap/device/hostdevice): a claim sets none, and the VM would start without its devices. KubeVirt's own DRA support " +
	"(gpus[] and hostDevices[] with claimName and requestName of spec.resourceClaims, feature gates GPUsWithDRA and HostDevicesWithDRA) is written in the " +
	"VM, not by translation"

// vmiSpec is what KubeVirt reads of a VMI's spec to make its virt-launcher
// pod (pkg/virt-controller/services/template.go, RenderLaunchManifest).
type vmiSpec struct {
	Domain struct {
		Devices struct {
			GPUs        []vmiDevice `json:"gpus,omitempty"`
			HostDevices []vmiDevice `json:"hostDevices,omitempty"`
		} `json:"devices"`
	} `json:"domain"`
	NodeSelector      map[string]string   `json:"nodeSelector,omitempty"`
	Affinity          *corev1.Affinity    `json:"affinity,omitempty"`
	Tolerations       []corev1.Toleration `json:"tolerations,omitempty"`
	SchedulerName     string              `json:"schedulerName,omitempty"`
	PriorityClassName string              `json:"priorityClassName,omitempty"`
}

// vmiDevice is a GPU or HostDevice: a device plugin's by deviceName, or
// KubeVirt's DRA by claimName and requestName, inline
// (staging/src/kubevirt.io/api/core/v1/schema.go, GPU, ClaimRequest).
type vmiDevice struct {
	DeviceName string `json:"deviceName,omitempty"`
	ClaimName  string `json:"claimName,omitempty"`
}

// virtLauncherPod is the virt-launcher pod of a VMI (at m.node: metadata
// and spec): the VMI's labels with kubevirt.io: virt-launcher, its node
// selector with kubevirt.io/schedulable: "true", affinity, tolerations,
// scheduler and priority class, and the compute container asking for one
// device per gpus and hostDevices entry that names a deviceName (entries
// with a claimName are KubeVirt's DRA, already claims). The resources
// every virt-launcher asks for (devices.kubevirt.io/kvm, tun, vhost-net)
// are left out.
func virtLauncherPod(_ *yaml.Node, m matched) (*corev1.Pod, bool, error) {
	var vmi struct {
		Metadata struct {
			Labels      map[string]string `json:"labels,omitempty"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"metadata"`
		Spec vmiSpec `json:"spec"`
	}
	if err := decode(m.node, &vmi); err != nil {
		return nil, false, err
	}
	s := vmi.Spec
	pod := &corev1.Pod{}
	pod.Labels = merged(vmi.Metadata.Labels, map[string]string{"kubevirt.io": "virt-launcher"})
	pod.Annotations = vmi.Metadata.Annotations
	pod.Spec.NodeSelector = merged(s.NodeSelector, map[string]string{"kubevirt.io/schedulable": "true"})
	pod.Spec.Affinity, pod.Spec.Tolerations = s.Affinity, s.Tolerations
	pod.Spec.SchedulerName, pod.Spec.PriorityClassName = s.SchedulerName, s.PriorityClassName
	compute := corev1.Container{Name: "compute"}
	for _, d := range slices.Concat(s.Domain.Devices.GPUs, s.Domain.Devices.HostDevices) {
		if d.DeviceName != "" && d.ClaimName == "" {
			addDevice(&compute, d.DeviceName, 1)
		}
	}
	pod.Spec.Containers = []corev1.Container{compute}
	return pod, true, nil
}

// vmReplicas: a VirtualMachine runs one VMI unless it is halted
// (spec.runStrategy Halted, or the deprecated spec.running: false).
func vmReplicas(t *Template) *int32 {
	spec := t.up(1)
	if scalar(field(spec, "runStrategy")) == "Halted" || scalar(field(spec, "running")) == "false" {
		return count(0)
	}
	return count(1)
}

// vmiReplicaSetReplicas: a VirtualMachineInstanceReplicaSet's
// spec.replicas (default 1), as a ReplicaSet's.
func vmiReplicaSetReplicas(t *Template) *int32 {
	return count(intAt(t.up(1), 1, "replicas"))
}

// vmPoolReplicas: a VirtualMachinePool's spec.replicas (default 1) of
// VirtualMachines, each running its VMI unless halted.
func vmPoolReplicas(t *Template) *int32 {
	vmSpec := t.up(1)
	if scalar(field(vmSpec, "runStrategy")) == "Halted" || scalar(field(vmSpec, "running")) == "false" {
		return count(0)
	}
	return count(intAt(field(t.obj, "spec"), 1, "replicas"))
}

// --- NVIDIA Dynamo -------------------------------------------------------

// dynamoKeep is why a Dynamo service is never translated in the object.
const dynamoKeep = "Dynamo's operator gives a service's pods the GPUs of its resources field (gpu, as gpuType or nvidia.com/gpu; in v1beta1 the main " +
	"container's) and reads the same count when it makes the workload: the GPUs per node of a multinode backend (ai-dynamo/dynamo " +
	"deploy/operator/internal/dynamo backend_trtllm.go, getGPUsPerNode), the GPU memory service and failover (gms.go, failover.go, getGPUCount): " +
	"no field says the count otherwise, so the object is kept as it is; let the webhook translate the pods the operator makes"

// dynamoService is what Dynamo's operator (v1alpha1) reads of a service
// to make its pods (deploy/operator/api/v1alpha1/common.go, Resources,
// ExtraPodSpec, ExtraPodMetadata).
type dynamoService struct {
	Resources *struct {
		Requests *dynamoItem `json:"requests,omitempty"`
		Limits   *dynamoItem `json:"limits,omitempty"`
	} `json:"resources,omitempty"`
	ExtraPodSpec *struct {
		corev1.PodSpec `json:",inline"`
		MainContainer  *corev1.Container `json:"mainContainer,omitempty"`
	} `json:"extraPodSpec,omitempty"`
	ExtraPodMetadata *struct {
		Annotations map[string]string `json:"annotations,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
	} `json:"extraPodMetadata,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

// dynamoItem is a ResourceItem: gpu is a count of gpuType (default
// nvidia.com/gpu), custom any resource.
type dynamoItem struct {
	GPU     string            `json:"gpu,omitempty"`
	GPUType string            `json:"gpuType,omitempty"`
	Custom  map[string]string `json:"custom,omitempty"`
}

// list is the item's extended resources.
func (it *dynamoItem) list() corev1.ResourceList {
	out := corev1.ResourceList{}
	if it == nil {
		return out
	}
	for name, v := range it.Custom {
		if q, err := resource.ParseQuantity(v); err == nil && podfacts.IsExtendedResource(corev1.ResourceName(name)) {
			out[corev1.ResourceName(name)] = q
		}
	}
	if q, err := resource.ParseQuantity(it.GPU); err == nil && it.GPU != "" {
		name := "nvidia.com/gpu"
		if it.GPUType != "" {
			name = it.GPUType
		}
		out[corev1.ResourceName(name)] = q
	}
	return out
}

// dynamoPod is a v1alpha1 service's pod: extraPodSpec with its
// mainContainer first (named main, Dynamo's MainContainerName), the
// devices of resources on it, extraPodMetadata's and the service's labels
// and annotations. A spec with neither resources nor extraPodSpec (a
// v1beta1 component, whose pod is its podTemplate) holds no pod here.
func dynamoPod(_ *yaml.Node, m matched) (*corev1.Pod, bool, error) {
	var s dynamoService
	if err := decode(m.node, &s); err != nil {
		return nil, false, err
	}
	if s.Resources == nil && s.ExtraPodSpec == nil {
		return nil, false, nil
	}
	pod := &corev1.Pod{}
	main := corev1.Container{}
	if s.ExtraPodSpec != nil {
		pod.Spec = *s.ExtraPodSpec.DeepCopy()
		if s.ExtraPodSpec.MainContainer != nil {
			main = *s.ExtraPodSpec.MainContainer.DeepCopy()
		}
	}
	if main.Name == "" {
		main.Name = "main"
	}
	if s.Resources != nil {
		for _, side := range []struct {
			item *dynamoItem
			list *corev1.ResourceList
		}{{s.Resources.Limits, &main.Resources.Limits}, {s.Resources.Requests, &main.Resources.Requests}} {
			for name, q := range side.item.list() {
				if *side.list == nil {
					*side.list = corev1.ResourceList{}
				}
				(*side.list)[name] = q
			}
		}
	}
	pod.Spec.Containers = append([]corev1.Container{main}, pod.Spec.Containers...)
	pod.Labels, pod.Annotations = s.Labels, s.Annotations
	if md := s.ExtraPodMetadata; md != nil {
		pod.Labels, pod.Annotations = merged(pod.Labels, md.Labels), merged(pod.Annotations, md.Annotations)
	}
	return pod, true, nil
}

// dynamoReplicas: a service's (or component's) replicas (default 1) times
// its multinode.nodeCount (default 1): each replica of a multinode
// service is nodeCount pods, a leader and its workers, each with the
// service's GPUs (v1alpha1 ResourceItem.GPU: "Total number of GPUs is
// NumberOfNodes * GPU").
func dynamoReplicas(t *Template) *int32 {
	n := t.up(0)
	if t.Form == FormTemplate {
		n = t.up(1) // the component that holds the podTemplate
	}
	return count(intAt(n, 1, "replicas") * intAt(n, 1, "multinode", "nodeCount"))
}

// --- Volcano HyperJob --------------------------------------------------------

// hyperJobReplicas: a HyperJob makes replicas (default 1) Volcano Jobs of
// each replicated job (training/v1alpha1/hyperjob.go, ReplicatedJob.Replicas),
// each with its tasks' replicas.
func hyperJobReplicas(t *Template) *int32 {
	return count(intAt(t.up(3), 1, "replicas") * intAt(t.up(1), 0, "replicas"))
}

// --- Records -------------------------------------------------------------------

// Record says why an object's device fields are no request of pods.
type Record struct {
	// Kind: RecordCopy or RecordCap.
	Kind RecordKind
	// Why, with its source.
	Why string
}

// RecordKind is what an object's device fields are, when they are not a
// request.
type RecordKind string

// Record kinds.
const (
	// RecordCopy: the object copies what pods of another object ask for
	// (that object has its own row).
	RecordCopy RecordKind = "Copy"
	// RecordCap: the object caps the devices of nodes; no pod asks for
	// them through it.
	RecordCap RecordKind = "Cap"
)

var (
	kueueWorkload = Record{Kind: RecordCopy, Why: "Kueue's Workload is its record of the pod sets of the object it admits (a Job, JobSet, RayJob… labelled " +
		"kueue.x-k8s.io/queue-name, which has a row of its own; kubernetes-sigs/kueue pkg/controller/jobframework, the Workload made from the job's " +
		"PodSets): translating it would change no pod, and counting it would count that object's devices twice; the pods are decided on that object's " +
		"row and by the webhook"}
	karpenterNodePool = Record{Kind: RecordCap, Why: "a cap, not a request: Karpenter launches no more nodes for this NodePool once their capacity " +
		"would pass spec.limits (kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go, Limits); no pod asks for it here, and the pods that run on " +
		"those nodes are decided on their own rows"}
	karpenterNodeClaim = Record{Kind: RecordCopy, Why: "Karpenter's NodeClaim records what the pods it launched a node for ask " +
		"(spec.resources.requests): those pods are decided on their own rows, and counting the NodeClaim would count their devices twice"}
)
