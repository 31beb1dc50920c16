package podfacts

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKServeAcceleratorPin: KServe's pod webhook pins its own pods that
// carry the annotation and have nvidia.com/gpu in an app container's
// limits, and no other pod.
func TestKServeAcceleratorPin(t *testing.T) {
	pod := func(labelled bool, init bool, res corev1.ResourceName, limit bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{KServeGKEAccelerator: "nvidia-tesla-t4"}}}
		if labelled {
			p.Labels = map[string]string{KServeInferenceService: "tf"}
		}
		list := corev1.ResourceList{res: resource.MustParse("1")}
		c := corev1.Container{Name: "kserve-container", Resources: corev1.ResourceRequirements{Requests: list}}
		if limit {
			c.Resources = corev1.ResourceRequirements{Limits: list}
		}
		if init {
			p.Spec.InitContainers = []corev1.Container{c}
		} else {
			p.Spec.Containers = []corev1.Container{c}
		}
		return p
	}
	cases := map[string]struct {
		pod      *corev1.Pod
		wantPin  string
		wantPins bool
	}{
		"a KServe pod with an nvidia.com/gpu limit":        {pod: pod(true, false, "nvidia.com/gpu", true), wantPin: "nvidia-tesla-t4", wantPins: true},
		"a pod without KServe's label":                     {pod: pod(false, false, "nvidia.com/gpu", true)},
		"a KServe pod with an nvidia.com/gpu request only": {pod: pod(true, false, "nvidia.com/gpu", false)},
		"a KServe pod with a MIG limit":                    {pod: pod(true, false, "nvidia.com/mig-1g.10gb", true)},
		"a KServe pod with the GPU in an init container":   {pod: pod(true, true, "nvidia.com/gpu", true)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pin, ok := KServeAcceleratorPin(tc.pod)
			if pin != tc.wantPin || ok != tc.wantPins {
				t.Errorf("KServeAcceleratorPin = %q, %v, want %q, %v", pin, ok, tc.wantPin, tc.wantPins)
			}
		})
	}
}
