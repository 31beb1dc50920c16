// Package benchinput holds what the unit benchmarks of several packages
// share: a pod that aligns a GPU and a NIC, the policy that translates it,
// and the baseline translation ratios are measured against (one JSON
// decode+encode of the AdmissionReview that carries a pod). It imports no
// package of the project, so that the packages' own tests may use it.
package benchinput

import (
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// GPUNICPod asks for one H100 by GFD product label and an RDMA NIC.
func GPUNICPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
			Containers: []corev1.Container{{Name: "trainer", Image: "registry.example/t:1", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "rdma/hca": resource.MustParse("1")},
			}}},
		},
	}
}

// GPUNICPolicy maps rdma/hca to one NIC per pod (the rdma profile's rdma/*
// is shared), so that GPUNICPod aligns a GPU and a NIC.
const GPUNICPolicy = `apiVersion: claimbridge.io/v1alpha1
kind: TranslationPolicy
metadata: {name: bench}
spec:
  profiles: [nvidia, rdma, nfd]
  resources:
  - {name: rdma/hca, family: rdma-nic, deviceClassName: dranet-rdma, requestName: nic}
`

// TrainerPod is the realistic pod of the translation, feasibility and webhook benchmarks: a
// trainer with trainerGPUs GPUs, an RDMA NIC, memory and CPU, a profiler with one more GPU, GFD
// product and memory selectors and a preferred CUDA driver major above 570.
func TrainerPod(namespace string, trainerGPUs int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer-0", Namespace: namespace},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559", "kubernetes.io/os": "linux"},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 50, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "nvidia.com/cuda.driver-version.major", Operator: corev1.NodeSelectorOpGt, Values: []string{"570"}},
				}},
			}}}},
			Containers: []corev1.Container{
				{Name: "trainer", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(trainerGPUs), resource.DecimalSI), "rdma/hca": resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Gi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("48")},
				}},
				{Name: "profiler", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
				}},
			},
		},
	}
}

// TrainerPolicy is the policy of the profiles given (the built-in default ones, in the
// benchmarks) with rdma/hca mapped as one NIC per pod (the rdma profile's rdma/* is shared and
// would keep TrainerPod legacy).
func TrainerPolicy(profiles []string) string {
	return "apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nmetadata: {name: bench}\nspec:\n" +
		"  profiles: [" + strings.Join(profiles, ", ") + "]\n" +
		"  resources:\n  - {name: rdma/hca, family: rdma-nic, deviceClassName: dranet-rdma, requestName: nic}\n"
}

// AdmissionRoundTrip measures the floor every webhook pays for a pod:
// decoding the AdmissionReview that carries it, decoding the pod, encoding
// it again.
func AdmissionRoundTrip(b *testing.B, pod *corev1.Pod) {
	b.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		b.Fatal(err)
	}
	review, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Namespace: pod.Namespace, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}},
	})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var r admissionv1.AdmissionReview
		if err := json.Unmarshal(review, &r); err != nil {
			b.Fatal(err)
		}
		var p corev1.Pod
		if err := json.Unmarshal(r.Request.Object.Raw, &p); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(&p); err != nil {
			b.Fatal(err)
		}
	}
}
