package podfacts

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// KAI-Scheduler's GPU sharing (NVIDIA/KAI-Scheduler
// pkg/common/constants/constants.go; docs/gpu-sharing): a pod for
// KAI-Scheduler annotated gpu-fraction (a part of a GPU's memory) or
// gpu-memory (MiB) asks for no extended resource. KAI-Scheduler places it
// on a GPU it counts from the node's nvidia.com/gpu, and its binder holds
// that GPU with a reservation pod in namespace kai-resource-reservation
// that asks the device plugin for nvidia.com/gpu: 1, bound to the node by
// name (pkg/binder/binding/resourcereservation/resource_reservation.go,
// createGPUReservationPod); the shared pod gets the GPU the reservation
// pod was given (its NVIDIA_VISIBLE_DEVICES).
const (
	// KAIScheduler is KAI-Scheduler's default schedulerName
	// (DefaultSchedulerName).
	KAIScheduler = "kai-scheduler"
	// KAIReservedResource is what a reservation pod asks the device plugin
	// for (NvidiaGpuResource), one per GPU.
	KAIReservedResource corev1.ResourceName = "nvidia.com/gpu"

	kaiFraction   = "gpu-fraction"
	kaiMemory     = "gpu-memory"
	kaiNumDevices = "gpu-fraction-num-devices"
	kaiContainer  = "gpu-fraction-container-name"
)

// GPUShare is a pod's share of GPUs that KAI-Scheduler reserves through
// the device plugin.
type GPUShare struct {
	// Devices: the GPUs the share spans (gpu-fraction-num-devices, default
	// 1), each held by a reservation pod.
	Devices int64
	// Container that gets the GPUs (gpu-fraction-container-name, default
	// the first container).
	Container string
	// Asked says what the pod asks for, as its annotations say it
	// ("gpu-fraction: 0.5").
	Asked string
}

// KAIShare is the pod's share of GPUs when it is one KAI-Scheduler serves
// through reservation pods: scheduled by KAI-Scheduler, annotated
// gpu-fraction or gpu-memory, and asking for no nvidia.com/gpu of its own.
func KAIShare(pod *corev1.Pod) (GPUShare, bool) {
	if pod.Spec.SchedulerName != KAIScheduler {
		return GPUShare{}, false
	}
	var s GPUShare
	for _, k := range []string{kaiFraction, kaiMemory} {
		if v, ok := pod.Annotations[k]; ok && v != "" {
			s.Asked = fmt.Sprintf("%s: %s", k, v)
			break
		}
	}
	if s.Asked == "" || slices.Contains(ExtendedNamed(pod), KAIReservedResource) {
		return GPUShare{}, false
	}
	s.Devices = 1
	if n, err := strconv.ParseInt(pod.Annotations[kaiNumDevices], 10, 64); err == nil && n > 0 {
		s.Devices = n
		s.Asked += fmt.Sprintf(", %s: %d", kaiNumDevices, n)
	}
	s.Container = pod.Annotations[kaiContainer]
	if s.Container == "" && len(pod.Spec.Containers) > 0 {
		s.Container = pod.Spec.Containers[0].Name
	}
	return s, true
}

// AsReserved is the pod as the device plugin serves its KAI share: a copy
// whose sharing container asks for the GPUs its reservation pods hold, on
// the same node; nil for a pod that is no such share.
func AsReserved(pod *corev1.Pod) *corev1.Pod {
	s, ok := KAIShare(pod)
	if !ok {
		return nil
	}
	out := pod.DeepCopy()
	q := *resource.NewQuantity(s.Devices, resource.DecimalSI)
	for _, list := range [][]corev1.Container{out.Spec.Containers, out.Spec.InitContainers} {
		for i := range list {
			if list[i].Name != s.Container {
				continue
			}
			if list[i].Resources.Limits == nil {
				list[i].Resources.Limits = corev1.ResourceList{}
			}
			list[i].Resources.Limits[KAIReservedResource] = q
			return out
		}
	}
	return nil // no container of that name: KAI-Scheduler rejects the pod
}
