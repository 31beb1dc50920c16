// Package builders makes Kubernetes objects for tests in a few readable
// lines: MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "2").Obj().
package builders

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodWrapper builds a Pod. Methods that touch a container apply to the last
// one added with Container or InitContainer.
type PodWrapper struct {
	pod  corev1.Pod
	last *corev1.Container
}

// MakePod starts a pod with a name and a namespace.
func MakePod(name, namespace string) *PodWrapper {
	return &PodWrapper{pod: corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}}
}

// Container adds an app container.
func (w *PodWrapper) Container(name string) *PodWrapper {
	w.pod.Spec.Containers = append(w.pod.Spec.Containers, corev1.Container{Name: name, Image: "registry.example/" + name + ":1"})
	w.last = &w.pod.Spec.Containers[len(w.pod.Spec.Containers)-1]
	return w
}

// InitContainer adds an init container; sidecar makes it restartable.
func (w *PodWrapper) InitContainer(name string, sidecar bool) *PodWrapper {
	c := corev1.Container{Name: name, Image: "registry.example/" + name + ":1"}
	if sidecar {
		always := corev1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	w.pod.Spec.InitContainers = append(w.pod.Spec.InitContainers, c)
	w.last = &w.pod.Spec.InitContainers[len(w.pod.Spec.InitContainers)-1]
	return w
}

func (w *PodWrapper) current() *corev1.Container {
	if w.last == nil {
		w.Container("main")
	}
	return w.last
}

// Limit sets a limit on the current container.
func (w *PodWrapper) Limit(name, quantity string) *PodWrapper {
	c := w.current()
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[corev1.ResourceName(name)] = resource.MustParse(quantity)
	return w
}

// Request sets a request on the current container.
func (w *PodWrapper) Request(name, quantity string) *PodWrapper {
	c := w.current()
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[corev1.ResourceName(name)] = resource.MustParse(quantity)
	return w
}

// NodeSelector adds a nodeSelector entry.
func (w *PodWrapper) NodeSelector(key, value string) *PodWrapper {
	if w.pod.Spec.NodeSelector == nil {
		w.pod.Spec.NodeSelector = map[string]string{}
	}
	w.pod.Spec.NodeSelector[key] = value
	return w
}

// RequiredTerm adds an ORed required node-affinity term.
func (w *PodWrapper) RequiredTerm(reqs ...corev1.NodeSelectorRequirement) *PodWrapper {
	na := w.nodeAffinity()
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	rs := na.RequiredDuringSchedulingIgnoredDuringExecution
	rs.NodeSelectorTerms = append(rs.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: reqs})
	return w
}

// PreferredTerm adds a preferred node-affinity term.
func (w *PodWrapper) PreferredTerm(weight int32, reqs ...corev1.NodeSelectorRequirement) *PodWrapper {
	na := w.nodeAffinity()
	na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: reqs}})
	return w
}

func (w *PodWrapper) nodeAffinity() *corev1.NodeAffinity {
	if w.pod.Spec.Affinity == nil {
		w.pod.Spec.Affinity = &corev1.Affinity{}
	}
	if w.pod.Spec.Affinity.NodeAffinity == nil {
		w.pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	return w.pod.Spec.Affinity.NodeAffinity
}

// Toleration adds a toleration.
func (w *PodWrapper) Toleration(key string, effect corev1.TaintEffect) *PodWrapper {
	w.pod.Spec.Tolerations = append(w.pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect})
	return w
}

// Annotation sets an annotation.
func (w *PodWrapper) Annotation(key, value string) *PodWrapper {
	if w.pod.Annotations == nil {
		w.pod.Annotations = map[string]string{}
	}
	w.pod.Annotations[key] = value
	return w
}

// Label sets a label.
func (w *PodWrapper) Label(key, value string) *PodWrapper {
	if w.pod.Labels == nil {
		w.pod.Labels = map[string]string{}
	}
	w.pod.Labels[key] = value
	return w
}

// NodeName binds the pod to a node at creation (spec.nodeName).
func (w *PodWrapper) NodeName(node string) *PodWrapper {
	w.pod.Spec.NodeName = node
	return w
}

// SchedulerName sets spec.schedulerName.
func (w *PodWrapper) SchedulerName(name string) *PodWrapper {
	w.pod.Spec.SchedulerName = name
	return w
}

// Priority sets spec.priority, as the Priority admission plugin resolves a
// priority class.
func (w *PodWrapper) Priority(p int32) *PodWrapper {
	w.pod.Spec.Priority = &p
	return w
}

// Obj returns a copy of the pod.
func (w *PodWrapper) Obj() *corev1.Pod { return w.pod.DeepCopy() }
