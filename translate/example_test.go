package translate_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/translate"
)

// A pod that asks for one GPU the device-plugin way and picks the model with
// a GPU Feature Discovery label becomes a pod that refers to a
// ResourceClaimTemplate; the label becomes a device selector.
func ExamplePod() {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "infer", Namespace: "ml"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-L4"},
			Containers: []corev1.Container{{
				Name:      "app",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
			}},
		},
	}
	res, err := translate.Pod(translate.Input{Pod: pod, Policy: translate.DefaultPolicy()})
	if err != nil {
		panic(err)
	}
	req := res.Template.Spec.Spec.Devices.Requests[0]
	fmt.Println("outcome:", res.Outcome)
	fmt.Println("template:", res.Template.Name[:len(api.TemplatePrefix)]+"<hash of its spec>")
	fmt.Println("request:", req.Name, "class:", req.Exactly.DeviceClassName)
	fmt.Println("nodeSelector left on the pod:", res.Pod.Spec.NodeSelector)
	// Output:
	// outcome: Translate
	// template: claimbridge-<hash of its spec>
	// request: app-gpu class: gpu.nvidia.com
	// nodeSelector left on the pod: map[]
}
