package explain

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/api"
)

// submitted is the annotation's content.
type submitted struct {
	NodeSelector   map[string]string   `json:"nodeSelector,omitempty"`
	Affinity       *corev1.Affinity    `json:"affinity,omitempty"`
	Tolerations    []corev1.Toleration `json:"tolerations,omitempty"`
	InitContainers []corev1.Container  `json:"initContainers,omitempty"`
	Containers     []corev1.Container  `json:"containers"`
}

// EncodeSubmitted encodes the pod as submitted for the annotation.
func EncodeSubmitted(pod *corev1.Pod) (string, error) {
	s := submitted{NodeSelector: pod.Spec.NodeSelector, Affinity: pod.Spec.Affinity, Tolerations: pod.Spec.Tolerations}
	keep := func(cs []corev1.Container) []corev1.Container {
		var out []corev1.Container
		for _, c := range cs {
			out = append(out, corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy})
		}
		return out
	}
	s.InitContainers, s.Containers = keep(pod.Spec.InitContainers), keep(pod.Spec.Containers)
	b, err := json.Marshal(s)
	return string(b), err
}

// Submitted is the pod as submitted from its annotation; false without one.
func Submitted(p *corev1.Pod) (*corev1.Pod, bool) {
	raw, ok := p.Annotations[api.AnnotationSubmitted]
	if !ok {
		return nil, false
	}
	var s submitted
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil, false
	}
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}, Spec: corev1.PodSpec{
		NodeSelector: s.NodeSelector, Affinity: s.Affinity, Tolerations: s.Tolerations, InitContainers: s.InitContainers, Containers: s.Containers,
	}}
	return out, true
}
