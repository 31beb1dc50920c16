// Package podtemplates finds the pod templates embedded in any Kubernetes
// object, as parsed YAML, and writes translated pods back in place.
//
// Templates are found by a table of the known locations of built-in
// workloads and popular CRDs (Kubeflow training jobs and notebooks, JobSet,
// LeaderWorkerSet, Ray, KServe, Volcano's Job, JobTemplate and HyperJob,
// Argo Workflows, Knative, Kueue's AppWrapper; and, never written back, the
// pods the Spark operator, KubeVirt and Dynamo make from fields of their
// own, kinds.go), and in objects of any other kind by their shape: a mapping
// with a `template` whose `spec` has named `containers`, or a mapping that
// has named `containers` itself (a PodSpec inline). For the kinds of the
// table it also says how many pods a template stands for, as the kind's
// operator counts them (Template.Replicas, replicas.go), and what an
// operator reads from a template's device limits when it makes the
// workload, with the count written where it reads it first or the
// template kept as it is (Template.Sizing, operators.go). Kinds whose
// device fields ask for nothing (Kueue's Workload, Karpenter's NodePool
// and NodeClaim) are listed with why (Found.Record).
//
// Writing back changes only the fields translation changed: every other
// node keeps its position, style and comments. Where a list changes length
// (a pod's resourceClaims, rewritten affinity terms) the list is written
// anew and comments inside it are lost. The package is pure: no I/O, no
// clock, deterministic output.
package podtemplates

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/reason"
)

// Form is how a pod is held at a location.
type Form string

// Forms of an embedded pod.
const (
	// FormPod: the object is a Pod (metadata and spec at its root).
	FormPod Form = "Pod"
	// FormTemplate: a PodTemplateSpec (metadata and spec), as in a
	// Deployment's spec.template, a RayCluster's workerGroupSpecs[*].template
	// or a Knative Service's spec.template (whose spec holds a PodSpec inline
	// beside Knative's own fields).
	FormTemplate Form = "PodTemplateSpec"
	// FormPodSpec: a PodSpec inline, as in a KServe component
	// (spec.predictor): its `model`, or the framework spec that stands for
	// it (`pytorch`, `huggingface`, … of a predictor, `art` of an
	// explainer: a container with the framework's fields beside it), is the
	// container KServe names kserve-container, and its `annotations` and
	// `labels` go to the pod.
	FormPodSpec Form = "PodSpec"
	// FormContainer: an Argo Workflows template (spec.templates[*]) whose
	// `container` or `script` is the pod's one container, named main. The
	// template's metadata, nodeSelector, affinity and tolerations are the
	// pod's; pod-level resourceClaims are written as its podSpecPatch.
	FormContainer Form = "Container"
	// FormOperator: the operator's own fields, from which its controller
	// or webhook makes the pod (a SparkApplication's driver and executor,
	// a KubeVirt VirtualMachine's VMI template, a Dynamo service): the pod
	// is built as the operator builds it (kinds.go), and never written
	// back (Template.Unsupported says why).
	FormOperator Form = "Operator"
)

// Rule says how a template was found.
type Rule string

// Rules.
const (
	// RuleBuiltin: a built-in Kubernetes kind (Pod, Deployment, Job, …).
	RuleBuiltin Rule = "Builtin"
	// RuleTable: a location of a known CRD.
	RuleTable Rule = "Table"
	// RuleShape: found by shape in an object of a kind nobody listed.
	RuleShape Rule = "Shape"
)

// Template is one embedded pod.
type Template struct {
	// Path of the template in the object, "" for a Pod:
	// "spec.workerGroupSpecs[0].template", "spec.pytorchReplicaSpecs.Worker.template".
	Path string
	// Rule that found it, and Pattern, the table entry or shape it matched
	// ("spec.workerGroupSpecs[*].template").
	Rule    Rule
	Pattern string
	Form    Form
	// Unsupported, when set, says why a translated pod cannot be written
	// back here (the pod is then kept as it is), and UnsupportedCode the
	// reason code it is kept with ("" for the offline tools' Unsupported).
	Unsupported     string
	UnsupportedCode reason.Code
	// InheritedScheduler is the schedulerName the object's controller gives
	// the pods when the template names none (a Volcano Job's
	// spec.schedulerName, "volcano" by default); "" when pods keep the
	// template's. Decisions are made on the pod as it will be created.
	InheritedScheduler string
	// Replicas is how many pods of the workload the template stands for at
	// once, as its operator counts them (a JobSet's replicas × parallelism,
	// a Ray worker group's replicas within its bounds × numOfHosts); nil
	// when the table has no rule for it (built-in kinds are counted from
	// their typed object by the report).
	Replicas *int32

	node      *yaml.Node // the mapping the view is rooted at
	obj       *yaml.Node // the object the template was found in
	chain     []*yaml.Node
	at        path
	op        *operator
	platform  *operator
	namespace string // the object's namespace
	orig      *corev1.Pod
	// Shape of the original, for the view.
	field    string         // FormContainer: "container" or "script"
	named    bool           // FormContainer/FormPodSpec model: the container had a name
	model    bool           // FormPodSpec: the first container is the model
	modelKey string         // … held under this key ("model", "pytorch", …)
	metaKeys bool           // FormPodSpec: annotations and labels live on the node
	tmplNS   string         // FormTemplate: the template's own metadata.namespace
	unnamed  []int          // FormTemplate: containers named by the operator, not the manifest
	patch    string         // FormContainer: the template's podSpecPatch
	patchMap map[string]any // … parsed, when claimbridge can merge into it
}

// nameContainers gives unnamed containers the name their operator gives
// them, so that requests are named as in the pods the operator creates.
func (t *Template) nameContainers(name string) {
	for i := range t.orig.Spec.Containers {
		if t.orig.Spec.Containers[i].Name == "" {
			t.orig.Spec.Containers[i].Name = name
			t.unnamed = append(t.unnamed, i)
		}
	}
}

// Pod returns the pod the template stands for: its metadata and spec, in
// the namespace of the object (unless the template names its own). The
// caller owns it.
func (t *Template) Pod() *corev1.Pod { return t.orig.DeepCopy() }

// Set writes a translated pod back into the object. Only what differs from
// the original pod is written.
func (t *Template) Set(p *corev1.Pod) error {
	if t.Unsupported != "" {
		return fmt.Errorf("%s: %s", t.Path, t.Unsupported)
	}
	before, err := t.view(t.orig)
	if err != nil {
		return err
	}
	after, err := t.view(p)
	if err != nil {
		return err
	}
	return apply(t.node, before, after)
}

// view is the generic (JSON) form of a pod as it is written at t.node.
func (t *Template) view(p *corev1.Pod) (any, error) {
	switch t.Form {
	case FormPod:
		return generic(struct {
			Metadata any            `json:"metadata"`
			Spec     corev1.PodSpec `json:"spec"`
		}{p.ObjectMeta, p.Spec})
	case FormTemplate:
		meta := *p.ObjectMeta.DeepCopy()
		meta.Namespace = t.tmplNS
		spec := *p.Spec.DeepCopy()
		for _, i := range t.unnamed {
			if i < len(spec.Containers) {
				spec.Containers[i].Name = ""
			}
		}
		return generic(corev1.PodTemplateSpec{ObjectMeta: meta, Spec: spec})
	case FormPodSpec:
		spec := *p.Spec.DeepCopy()
		var model *corev1.Container
		if t.model && len(spec.Containers) > 0 {
			model = &spec.Containers[0]
			spec.Containers = spec.Containers[1:]
			if !t.named {
				model.Name = ""
			}
		}
		v, err := generic(spec)
		if err != nil {
			return nil, err
		}
		m := v.(map[string]any)
		if t.model {
			if m[t.modelKey], err = generic(model); err != nil {
				return nil, err
			}
			if len(spec.Containers) == 0 {
				delete(m, "containers")
			}
		}
		if t.metaKeys {
			m["annotations"], _ = generic(p.Annotations)
			m["labels"], _ = generic(p.Labels)
		}
		return m, nil
	case FormContainer:
		var c corev1.Container
		if len(p.Spec.Containers) > 0 {
			c = *p.Spec.Containers[0].DeepCopy()
		}
		if !t.named {
			c.Name = ""
		}
		v := argoTemplate{
			Metadata:     argoMeta{Annotations: p.Annotations, Labels: p.Labels},
			NodeSelector: p.Spec.NodeSelector,
			Affinity:     p.Spec.Affinity,
			Tolerations:  p.Spec.Tolerations,
		}
		v.PodSpecPatch = t.patch
		if len(p.Spec.ResourceClaims) > 0 {
			m := map[string]any{}
			for k, e := range t.patchMap {
				m[k] = e
			}
			m["resourceClaims"] = p.Spec.ResourceClaims
			patch, err := json.Marshal(m)
			if err != nil {
				return nil, err
			}
			v.PodSpecPatch = string(patch)
		}
		m, err := generic(v)
		if err != nil {
			return nil, err
		}
		mm := m.(map[string]any)
		if mm[t.field], err = generic(c); err != nil {
			return nil, err
		}
		return mm, nil
	case FormOperator:
		return nil, fmt.Errorf("%s: the operator makes this pod from its own fields; claimbridge does not write them", t.Path)
	}
	return nil, fmt.Errorf("unknown form %q", t.Form)
}

// argoTemplate is the part of an Argo Workflows template that makes its pod.
type argoTemplate struct {
	Metadata     argoMeta            `json:"metadata"`
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Affinity     *corev1.Affinity    `json:"affinity,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
	PodSpecPatch string              `json:"podSpecPatch,omitempty"`
}

type argoMeta struct {
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

// generic turns a value into its JSON form (maps, slices, strings, float64,
// bools, nil).
func generic(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// decode reads a YAML node into a typed value the way kubectl does
// (YAML → JSON → struct). Unknown fields are ignored: they stay in the node
// untouched.
func decode(n *yaml.Node, into any) error {
	data, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	js, err := sigsyaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	return json.Unmarshal(js, into)
}

// path is a location being walked: rendered like the examples,
// "spec.workerGroupSpecs[0].template".
type path []string

func (p path) field(name string) path { return append(p[:len(p):len(p)], name) }
func (p path) index(i int) path {
	q := p[:len(p):len(p)]
	if len(q) == 0 {
		return append(q, fmt.Sprintf("[%d]", i))
	}
	return append(q[:len(q)-1], q[len(q)-1]+fmt.Sprintf("[%d]", i))
}

func (p path) String() string { return strings.Join(p, ".") }
