package podtemplates

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/reason"
)

// Operators that size a workload from the device count of a pod template.
//
// Some operators read a template's device limits when they make the
// workload, not only when its pods run: KubeRay turns the Ray container's
// nvidia.com/gpu limit into `ray start --num-gpus`, Kubeflow Trainer counts
// the processes of a TrainJob from the GPUs of its runtime. Translated in
// the object (offline, or at deploy time), the limit is gone before the
// operator reads it, and the workload is sized as if it had no devices.
// For each such operator a rule compares what it reads from the pod as
// submitted and from its translation; where they differ it writes the count
// where the operator reads it first (an explicit field beats the limit), or,
// where the operator has no such field, keeps the template as it is. The
// webhook never needs this: it sees the pods the operator made from the
// object it had already read.

// operator is one operator that reads a template's devices.
type operator struct {
	// Name of the operator, and Source: where it reads the count
	// (repository, file, function) — the operator table of
	// docs/reference/workloads.md.
	name, source string
	// check compares what the operator reads from the pod as submitted
	// (before) and from its translation (after): the writes that keep the
	// count, or why the template must stay as it is ("" when nothing it
	// reads changes).
	check func(t *Template, before, after *corev1.Pod) ([]write, string)
	// code is the reason a template kept as it is gets; "" for
	// OperatorReadsLimit.
	code reason.Code
}

// write sets a scalar below a mapping of the object, creating the
// mappings on the way.
type write struct {
	node  *yaml.Node
	keys  []string
	value *yaml.Node
	// field is where, from the object's root, for messages.
	field string
}

// Sizing is what an operator reads from a template's device count, and
// what claimbridge does so that translation does not change it.
type Sizing struct {
	// Operator that reads the count, and Source: where (repository, file,
	// function).
	Operator, Source string
	// Writes are the fields written so that the operator reads the count
	// it read from the device limit.
	Writes []Written
	// Keep, when set, says why the template stays as it is: what the
	// operator would read differently, with no field to say it otherwise;
	// Code is its reason code, "" for OperatorReadsLimit.
	Keep   string
	Code   reason.Code
	writes []write
}

// Written is a field written into the object, from its root
// ("spec.workerGroupSpecs[0].rayStartParams.num-gpus"), and its value.
type Written struct {
	Field, Value string
}

// Sizing says what translating the template's pod into after does to what
// its operator reads; nil when no operator reads anything it changes.
func (t *Template) Sizing(after *corev1.Pod) *Sizing {
	if p := t.platform; p != nil {
		if _, keep := p.check(t, t.orig, after); keep != "" {
			return &Sizing{Operator: p.name, Source: p.source, Keep: keep, Code: p.code}
		}
	}
	if t.op == nil {
		return nil
	}
	ws, keep := t.op.check(t, t.orig, after)
	if len(ws) == 0 && keep == "" {
		return nil
	}
	s := &Sizing{Operator: t.op.name, Source: t.op.source, Keep: keep, Code: t.op.code}
	if keep == "" {
		s.writes = ws
		for _, w := range ws {
			s.Writes = append(s.Writes, Written{Field: w.field, Value: w.value.Value})
		}
	}
	return s
}

// Pin writes the fields of a Sizing into the object (nothing for nil).
func (t *Template) Pin(s *Sizing) error {
	if s == nil {
		return nil
	}
	if s.Keep != "" {
		return fmt.Errorf("%s: %s", t.Path, s.Keep)
	}
	for _, w := range s.writes {
		if err := w.apply(); err != nil {
			return fmt.Errorf("%s: %w", w.field, err)
		}
	}
	return nil
}

func (w write) apply() error {
	n := w.node
	for i, k := range w.keys {
		if isNull(n) {
			*n = yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap, HeadComment: n.HeadComment, LineComment: n.LineComment}
		}
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("is a %s, not a mapping", kindName(n))
		}
		v := lookup(n, k)
		if i == len(w.keys)-1 {
			if v != nil {
				*v = *w.value
			} else {
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: k}, w.value)
			}
			return nil
		}
		if v == nil {
			v = &yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: k}, v)
		}
		n = v
	}
	return nil
}

func str(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: v, Style: yaml.DoubleQuotedStyle}
}

func integer(v int64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagInt, Value: strconv.FormatInt(v, 10)}
}

// parent renders the path of the mapping up(n) of the template.
func (t *Template) parent(n int) path { return t.at[:max(len(t.at)-n, 0)] }

// --- KubeRay ---------------------------------------------------------------

var kubeRayOperator = operator{
	name: "KubeRay",
	source: "ray-project/kuberay ray-operator/controllers/ray/common/pod.go, generateRayStartCommand and addWellKnownAcceleratorResources " +
		"(the first container's limits: a name ending in gpu or nvidia.com/mig-* gives --num-gpus, google.com/tpu the Ray resource TPU, " +
		"aws.amazon.com/neuroncore neuron_cores, unless rayStartParams or the group's resources say); " +
		"the Ray autoscaler reads the same (ray-project/ray python/ray/autoscaler/_private/kuberay/autoscaling_config.py, _get_num_gpus, _get_num_tpus)",
	check: kubeRayCheck,
}

// rayAccelerators are the custom accelerators KubeRay turns into Ray
// resources (pod.go, customAcceleratorToRayResourceMap).
var rayAccelerators = map[string]string{"aws.amazon.com/neuroncore": "neuron_cores", "google.com/tpu": "TPU"}

// rayGPUKey is KubeRay's utils.IsGPUResourceKey
// (ray-operator/controllers/ray/utils/resources.go).
func rayGPUKey(k string) bool {
	if strings.HasSuffix(k, "gpu") {
		return true
	}
	mig, ok := strings.CutPrefix(k, "nvidia.com/mig-")
	if !ok {
		return false
	}
	g, mem, ok := strings.Cut(strings.TrimSuffix(mig, "gb"), "g.")
	return ok && strings.HasSuffix(mig, "gb") && digits(g) && digits(mem)
}

func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// rayStart is the rayStartParams KubeRay starts a group's Ray container
// with, as far as devices go: the group's params, overridden by its
// top-level resources (pod.go, updateRayStartParamsResources), then the
// accelerators of the first container's limits where they say nothing
// (addWellKnownAcceleratorResources). A resources param KubeRay cannot
// parse adds nothing, as in KubeRay.
func rayStart(params, groupResources map[string]string, limits corev1.ResourceList) map[string]string {
	p := maps.Clone(params)
	if p == nil {
		p = map[string]string{}
	}
	custom := map[string]float64{}
	for name, quantity := range groupResources {
		q, err := resource.ParseQuantity(quantity)
		if err != nil {
			continue
		}
		switch lower := strings.ToLower(name); {
		case lower == "cpu", lower == "memory":
		case rayGPUKey(lower):
			p["num-gpus"] = strconv.FormatInt(q.Value(), 10)
		default:
			custom[name] = q.AsApproximateFloat64()
		}
	}
	if len(custom) > 0 {
		data, _ := json.Marshal(custom)
		p["resources"] = "'" + string(data) + "'"
	}
	if len(limits) == 0 {
		return p
	}
	res := map[string]float64{}
	if s, ok := p["resources"]; ok {
		if err := json.Unmarshal([]byte(strings.Trim(s, "'\"` ")), &res); err != nil {
			return p
		}
	}
	added := slices.ContainsFunc(slices.Collect(maps.Values(rayAccelerators)), func(r string) bool { _, ok := res[r]; return ok })
	for _, k := range slices.Sorted(maps.Keys(limits)) {
		q := limits[k]
		if _, ok := p["num-gpus"]; !ok && rayGPUKey(string(k)) && !q.IsZero() {
			p["num-gpus"] = strconv.FormatInt(q.Value(), 10)
		}
		if r, ok := rayAccelerators[string(k)]; ok && !added && !q.IsZero() {
			if _, exists := res[r]; !exists {
				res[r] = q.AsApproximateFloat64()
				data, _ := json.Marshal(res)
				p["resources"] = "'" + string(data) + "'"
			}
			added = true
		}
	}
	return p
}

func stringMap(n *yaml.Node) map[string]string {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	m := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		m[n.Content[i].Value] = n.Content[i+1].Value
	}
	return m
}

func firstLimits(p *corev1.Pod) corev1.ResourceList {
	if len(p.Spec.Containers) == 0 {
		return nil
	}
	return p.Spec.Containers[0].Resources.Limits
}

// kubeRayCheck keeps --num-gpus and the accelerator resource of a Ray
// group: where translation would change them, the count of the pod as
// submitted is written into rayStartParams (into the group's resources
// for an accelerator when the group has custom resources there, which
// replace rayStartParams.resources).
func kubeRayCheck(t *Template, before, after *corev1.Pod) ([]write, string) {
	g := t.up(1)
	params, groupRes := stringMap(field(g, "rayStartParams")), stringMap(field(g, "resources"))
	b, a := rayStart(params, groupRes, firstLimits(before)), rayStart(params, groupRes, firstLimits(after))
	at := t.parent(1)
	var ws []write
	if v, ok := b["num-gpus"]; ok && v != a["num-gpus"] {
		ws = append(ws, write{node: g, keys: []string{"rayStartParams", "num-gpus"}, value: str(v), field: at.field("rayStartParams").field("num-gpus").String()})
	}
	if v, ok := b["resources"]; ok && v != a["resources"] {
		if _, custom := rayStart(nil, groupRes, nil)["resources"]; custom {
			for _, k := range slices.Sorted(maps.Keys(firstLimits(before))) {
				r, ok := rayAccelerators[string(k)]
				q := firstLimits(before)[k]
				if !ok || q.IsZero() {
					continue
				}
				v := strconv.FormatFloat(q.AsApproximateFloat64(), 'f', -1, 64)
				ws = append(ws, write{node: g, keys: []string{"resources", r}, value: str(v), field: at.field("resources").field(r).String()})
				break
			}
		} else {
			ws = append(ws, write{node: g, keys: []string{"rayStartParams", "resources"}, value: str(v), field: at.field("rayStartParams").field("resources").String()})
		}
	}
	return ws, ""
}

// --- Kubeflow Trainer --------------------------------------------------------

var trainerOperator = operator{
	name: "Kubeflow Trainer",
	source: "kubeflow/trainer pkg/runtime/runtime.go, ExtractResourcePerNodeFromRuntime and GetNumGPUPerNode " +
		"(the node container of the trainer's job: the first resource whose name contains gpu, requests then limits), read by " +
		"pkg/runtime/framework/plugins/torch/torch.go, Torch.EnforceMLPolicy (PET_NPROC_PER_NODE: the GPUs, else the CPUs); " +
		"plugins/mpi/mpi.go, MPI.EnforceMLPolicy (numProcPerNode 1 becomes the GPUs); plugins/xgboost/xgboost.go (a worker per GPU); " +
		"plugins/flux/flux.go (-g, GPUs per task)",
	check: trainerCheck,
}

// trainerGPUs is GetNumGPUPerNode over a container (names in sorted order,
// where Trainer ranges over a map).
func trainerGPUs(c *corev1.Container) int64 {
	count := func(l corev1.ResourceList) int64 {
		for _, k := range slices.Sorted(maps.Keys(l)) {
			if strings.Contains(strings.ToLower(string(k)), "gpu") {
				q := l[k]
				return q.Value()
			}
		}
		return 0
	}
	if n := count(c.Resources.Requests); n > 0 {
		return n
	}
	return count(c.Resources.Limits)
}

func nodeContainer(p *corev1.Pod) *corev1.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == "node" {
			return &p.Spec.Containers[i]
		}
	}
	return nil
}

func trainerCheck(t *Template, before, after *corev1.Pod) ([]write, string) {
	rj := t.up(3)
	if scalar(field(rj, "name")) != "node" && !trainerAncestor(rj) {
		return nil, ""
	}
	cb, ca := nodeContainer(before), nodeContainer(after)
	if cb == nil || ca == nil {
		return nil, ""
	}
	b, a := trainerGPUs(cb), trainerGPUs(ca)
	policy := field(t.obj, "spec", "mlPolicy")
	if b == a || policy == nil {
		return nil, ""
	}
	switch {
	case field(policy, "torch") != nil:
		return nil, fmt.Sprintf("Kubeflow Trainer's torch runtime gives each TrainJob without numProcPerNode as many processes per node (PET_NPROC_PER_NODE) as the node container has GPUs, else CPUs: "+
			"translated, the runtime's %d GPUs would no longer count, and no field of the runtime says the count", b)
	case field(policy, "xgboost") != nil:
		return nil, fmt.Sprintf("Kubeflow Trainer's XGBoost runtime starts a worker per GPU of the node container: translated, the runtime's %d GPUs would no longer count, and no field of the runtime says the count", b)
	case field(policy, "flux") != nil:
		return nil, fmt.Sprintf("Kubeflow Trainer's Flux runtime gives each task the node container's GPUs (-g): translated, the runtime's %d GPUs would no longer count, and no field of the runtime says the count", b)
	case field(policy, "mpi") != nil:
		// numProcPerNode defaults to 1, and 1 becomes the GPU count when
		// there are more than one.
		if intAt(policy, 1, "mpi", "numProcPerNode") != 1 || max(a, 1) == max(b, 1) {
			return nil, ""
		}
		at := path{"spec", "mlPolicy", "mpi", "numProcPerNode"}
		return []write{{node: policy, keys: []string{"mpi", "numProcPerNode"}, value: integer(b), field: at.String()}}, ""
	}
	return nil, ""
}

// --- MPIJob of the training operator ---------------------------------------

var mpiLauncherOperator = operator{
	name: "Kubeflow training-operator (MPIJob kubeflow.org/v1)",
	source: "kubeflow/training-operator v1.9.0 pkg/controller.v1/mpi/mpijob.go, isGPULauncher (a launcher container limit whose name contains gpu), " +
		"read by mpijob_controller.go, newConfigMap (the launcher is a host of the hostfile) and newLauncher (else NVIDIA_VISIBLE_DEVICES is emptied)",
	check: mpiLauncherCheck,
}

func gpuLauncher(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		for k := range c.Resources.Limits {
			if strings.Contains(string(k), "gpu") {
				return true
			}
		}
	}
	return false
}

func mpiLauncherCheck(t *Template, before, after *corev1.Pod) ([]write, string) {
	if scalar(lookup(t.obj, "apiVersion")) != "kubeflow.org/v1" || t.at[len(t.at)-2] != "Launcher" || gpuLauncher(before) == gpuLauncher(after) {
		return nil, ""
	}
	return nil, "the training operator's MPIJob (kubeflow.org/v1) makes the launcher an MPI host only when its limits name a GPU: translated, " +
		"the launcher would leave the hostfile and its GPUs would be hidden (NVIDIA_VISIBLE_DEVICES emptied); the v2beta1 MPIJob says it with runLauncherAsWorker"
}

// --- LeaderWorkerSet -------------------------------------------------------

var lwsOperator = operator{
	name: "LeaderWorkerSet",
	source: "kubernetes-sigs/lws pkg/utils/accelerators/tpu.go, PodRequestsTPUs (google.com/tpu in a container's limits or requests), " +
		"read by pkg/webhooks/pod_webhook.go, PodWebhook.Default (AddTPUVariables: TPU_WORKER_HOSTNAMES, TPU_WORKER_ID, …) " +
		"and pkg/controllers/pod_controller.go (AddTPUAnnotations: whether the leader is a TPU worker)",
	check: lwsCheck,
}

func lwsCheck(_ *Template, before, after *corev1.Pod) ([]write, string) {
	if podfacts.RequestsTPU(before) == podfacts.RequestsTPU(after) {
		return nil, ""
	}
	return nil, "LeaderWorkerSet gives the multi-host TPU environment (TPU_WORKER_HOSTNAMES, TPU_WORKER_ID, TPU_PROCESS_ADDRESSES) only to pods that ask for google.com/tpu: " +
		"translated, the group's pods would start without it"
}

// --- GKE's TPU environment ------------------------------------------------

var gkeTPUPlatform = operator{
	name: "GKE",
	source: "GKE's TPU webhook sets TPU_WORKER_ID and TPU_WORKER_HOSTNAMES for the pods of a Job with completionMode Indexed, a subdomain and parallelism above 1 " +
		"that request google.com/tpu (GKE's \"Deploy TPU workloads\" page, multi-host slices); JobSet makes its Jobs Indexed, with a subdomain, by default " +
		"(kubernetes-sigs/jobset pkg/webhooks/jobset_webhook.go, Default); the TPU webhook of GKE's Ray operator add-on sets them for the workers of a " +
		"group of numOfHosts above 1 that request google.com/tpu",
	check: gkeTPUCheck,
	code:  decide.ReasonMultiHostTPUEnvironment,
}

// gkeTPUCheck keeps a multi-host TPU worker whose translation would no
// longer ask for google.com/tpu: the pods of an Indexed Job with a
// subdomain and parallelism above 1 (a Job, a CronJob's Job, a JobSet's
// replicated job, whose completionMode defaults to Indexed and whose pods
// get a subdomain unless network.enableDNSHostnames is false), and the
// workers of a Ray group of numOfHosts above 1. A template whose TPU
// containers set both variables themselves needs no webhook.
func gkeTPUCheck(t *Template, before, after *corev1.Pod) ([]write, string) {
	if !podfacts.RequestsTPU(before) || podfacts.RequestsTPU(after) || podfacts.SetsTPUEnvironment(before) {
		return nil, ""
	}
	const lost = "translated, the slice's workers would start without it and could not find each other"
	if strings.HasSuffix(t.Pattern, "workerGroupSpecs[*].template") {
		if hosts := intAt(t.up(1), 1, "numOfHosts"); hosts > 1 {
			return nil, fmt.Sprintf("the TPU webhook of GKE's Ray operator add-on gives the multi-host TPU environment (TPU_WORKER_ID, TPU_WORKER_HOSTNAMES) only to Ray workers that ask for google.com/tpu, "+
				"here a group of %d hosts: %s", hosts, lost)
		}
		return nil, ""
	}
	spec := t.up(1) // the Job's spec
	mode, subdomain := scalar(field(spec, "completionMode")), before.Spec.Subdomain != ""
	if strings.HasPrefix(t.Pattern, "spec.replicatedJobs[*]") {
		if mode == "" {
			mode = "Indexed"
		}
		if scalar(field(t.obj, "spec", "network", "enableDNSHostnames")) != "false" {
			subdomain = true
		}
	}
	parallelism := intAt(spec, 1, "parallelism")
	if mode != "Indexed" || !subdomain || parallelism <= 1 {
		return nil, ""
	}
	return nil, fmt.Sprintf("GKE gives the multi-host TPU environment (TPU_WORKER_ID, TPU_WORKER_HOSTNAMES) only to the pods of an Indexed Job with a subdomain that ask for google.com/tpu, "+
		"here %d pods at once: %s", parallelism, lost)
}

// --- KServe ------------------------------------------------------------------

var kserveOperator = operator{
	name: "KServe",
	source: "kserve/kserve pkg/utils/utils.go, IsGPUEnabled (nvidia.com/gpu or nvidia.com/mig-* in the kserve-container's limits), " +
		"read by pkg/controller/v1beta1/inferenceservice/utils/utils.go, UpdateImageTag (without runtimeVersion: the -gpu image of TorchServe, " +
		"TF Serving and the Hugging Face server, vLLM's -cpu image without a GPU); " +
		"pkg/controller/v1beta1/inferenceservice/reconcilers/deployment/deployment_reconciler.go, addGPUResourceToDeployment (with workerSpec: " +
		"writes the GPU limit into the head and worker Deployments)",
	check: kserveCheck,
}

// kserveGPU is IsGPUEnabled of KServe.
func kserveGPU(c *corev1.Container) bool {
	for k := range c.Resources.Limits {
		if k == "nvidia.com/gpu" || strings.HasPrefix(string(k), "nvidia.com/mig") {
			return true
		}
	}
	return false
}

// kserveGPUTypes are the resources KServe counts as GPUs of a multi-node
// predictor (pkg/constants/constants.go, DefaultGPUResourceTypeList).
func kserveGPUTypes(c *corev1.Container) []string {
	var out []string
	for k := range c.Resources.Limits {
		switch s := string(k); {
		case s == "nvidia.com/gpu", s == "amd.com/gpu", s == "intel.com/gpu", s == "habana.ai/gaudi", strings.HasPrefix(s, "nvidia.com/mig"):
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func kserveCheck(t *Template, before, after *corev1.Pod) ([]write, string) {
	if !t.model || len(before.Spec.Containers) == 0 || len(after.Spec.Containers) == 0 {
		return nil, ""
	}
	b, a := &before.Spec.Containers[0], &after.Spec.Containers[0]
	if ws := lookup(t.node, "workerSpec"); ws != nil && !isNull(ws) && !slices.Equal(kserveGPUTypes(b), kserveGPUTypes(a)) {
		return nil, "KServe writes the GPU limit of a multi-node predictor (workerSpec) into its head and worker Deployments itself: " +
			"translated, the pods would ask for the GPUs twice, as a claim and as " + strings.Join(kserveGPUTypes(b), ", ")
	}
	if kserveGPU(b) == kserveGPU(a) || scalar(field(t.node, t.modelKey, "runtimeVersion")) != "" {
		return nil, ""
	}
	return nil, "KServe picks the serving image from the kserve-container's GPU limit when " + t.modelKey + ".runtimeVersion is not set " +
		"(the -gpu image of TorchServe, TF Serving and the Hugging Face server; vLLM's -cpu image without a GPU): translated, the predictor would run the CPU image; " +
		"set runtimeVersion to translate it"
}
