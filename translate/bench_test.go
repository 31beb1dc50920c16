package translate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/internal/testing/benchinput"
	"github.com/claimbridge/claimbridge/reason"
)

// realisticPod: a trainer with 8 GPUs and a NIC, a sidecar with a GPU, GFD
// product and memory selectors and a preferred family.
func realisticPod() *corev1.Pod { return benchinput.TrainerPod("research", 8) }

// benchPolicy is the default policy with rdma/hca mapped as one NIC per pod
// (the rdma profile's rdma/* is a shared device and would keep the pod
// legacy), so that the benchmark translates GPUs and a NIC.
func benchPolicy(b *testing.B) *Policy {
	b.Helper()
	p, err := LoadPolicy([]byte(benchinput.TrainerPolicy(v1alpha1.DefaultProfileNames())))
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
