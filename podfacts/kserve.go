package podfacts

import (
	corev1 "k8s.io/api/core/v1"
)

// KServe's accelerator annotation (kserve/kserve pkg/constants/constants.go,
// InferenceServiceGKEAcceleratorAnnotationKey). KServe copies an
// InferenceService's annotations, and those of its component (which win), to
// the component's pods, each labelled serving.kserve.io/inferenceservice
// with the InferenceService's name (pkg/controller/v1beta1/inferenceservice/
// components/predictor.go, buildObjectMeta). Its pod webhook, which admits
// only pods with that label (config/webhook/manifests.yaml, objectSelector),
// then adds the node selector cloud.google.com/gke-accelerator with the
// annotation's value, overwriting one the pod has, but only to a pod one of
// whose containers has nvidia.com/gpu in its limits: not in its requests,
// not nvidia.com/mig-* nor another vendor's GPU, and not in an init
// container (pkg/webhook/admission/pod/accelerator_injector.go,
// InjectGKEAcceleratorSelector).
const (
	KServeGKEAccelerator   = "serving.kserve.io/gke-accelerator"
	KServeInferenceService = "serving.kserve.io/inferenceservice"
	KServeAcceleratorLabel = "cloud.google.com/gke-accelerator"
	kserveGPU              = corev1.ResourceName("nvidia.com/gpu")
)

// KServeAcceleratorPin is the value of the node selector
// cloud.google.com/gke-accelerator that KServe's pod webhook gives the pod,
// and false when it gives none: the pod is one of KServe's (its label
// serving.kserve.io/inferenceservice), annotated
// serving.kserve.io/gke-accelerator, with nvidia.com/gpu in the limits of
// one of its containers.
func KServeAcceleratorPin(pod *corev1.Pod) (string, bool) {
	if _, ok := pod.Labels[KServeInferenceService]; !ok {
		return "", false
	}
	v, ok := pod.Annotations[KServeGKEAccelerator]
	if !ok {
		return "", false
	}
	for i := range pod.Spec.Containers {
		if _, gpu := pod.Spec.Containers[i].Resources.Limits[kserveGPU]; gpu {
			return v, true
		}
	}
	return "", false
}
