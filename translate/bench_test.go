package translate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/internal/testing/benchinput"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
)

// realisticPod: a trainer with 8 GPUs and a NIC, a sidecar with a GPU, GFD
// product and memory selectors and a preferred family.
func realisticPod() *corev1.Pod {
	return builders.MakePod("trainer-0", "research").
		Container("trainer").Limit("nvidia.com/gpu", "8").Limit("rdma/hca", "1").Limit("memory", "512Gi").Request("cpu", "48").
		Container("profiler").Limit("nvidia.com/gpu", "1").
		NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").
		NodeSelector("nvidia.com/gpu.memory", "81559").
		NodeSelector("kubernetes.io/os", "linux").
		PreferredTerm(50, corev1.NodeSelectorRequirement{Key: "nvidia.com/cuda.driver-version.major", Operator: corev1.NodeSelectorOpGt, Values: []string{"570"}}).
		Obj()
}

// benchPolicy is the default policy with rdma/hca mapped as one NIC per pod
// (the rdma profile's rdma/* is a shared device and would keep the pod
// legacy), so that the benchmark translates GPUs and a NIC.
func benchPolicy(b *testing.B) *Policy {
	b.Helper()
	p, err := NewPolicy(&v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind, Metadata: v1alpha1.PolicyMetadata{Name: "bench"},
		Spec: v1alpha1.PolicySpec{Profiles: v1alpha1.DefaultProfileNames(), Resources: []v1alpha1.ResourceRule{{Name: "rdma/hca", Family: "rdma-nic", DeviceClassName: "dranet-rdma", RequestName: "nic"}}}})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkTranslate compares translation with the floor every webhook
// pays: decoding and encoding the AdmissionReview that carries the pod.
func BenchmarkTranslate(b *testing.B) {
	pod := realisticPod()
	policy := benchPolicy(b)
	b.Run("realistic-pod", func(b *testing.B) {
		if res, err := Pod(Input{Pod: pod, Policy: policy}); err != nil || res.Outcome != reason.OutcomeTranslate {
			b.Fatalf("%v %v", res.Outcome, err)
		}
		for b.Loop() {
			if _, err := Pod(Input{Pod: pod, Policy: policy}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("admission-review-json-roundtrip", func(b *testing.B) { benchinput.AdmissionRoundTrip(b, pod) })
}
