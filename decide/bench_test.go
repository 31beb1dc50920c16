package decide_test

import (
	"encoding/json"
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
	"github.com/claimbridge/claimbridge/translate"
)

// benchPod asks for one H100 by GFD product label and an RDMA NIC, which
// the policy maps to one NIC per pod aligned with the GPU.
func benchPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer-0", Namespace: "ns"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
			Containers: []corev1.Container{{Name: "trainer", Image: "registry.example/t:1", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "rdma/hca": resource.MustParse("1")},
			}}},
		},
	}
}

func benchPolicy(b *testing.B) *translate.Policy {
	b.Helper()
	p, err := translate.LoadPolicy([]byte(`apiVersion: claimbridge.io/v1alpha1
kind: TranslationPolicy
metadata: {name: bench}
spec:
  profiles: [nvidia, rdma, nfd]
  resources:
  - {name: rdma/hca, family: rdma-nic, deviceClassName: dranet-rdma, requestName: nic}
`))
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkDecide: the whole decision on one pod (translation, placement
// proof over the node classes, the allocator's verdict) on a 1,000-node
// snapshot, cold (every cache off: a pod shape seen for the first time, or
// a snapshot that changed since) and warm (the caches hold the shape),
// against one JSON decode+encode of the pod's AdmissionReview.
func BenchmarkDecide(b *testing.B) {
	pod, policy := benchPod(), benchPolicy(b)
	n := 1000
	f := fleetgen.Synthetic(n)
	snap, err := feasibility.NewSnapshot(&feasibility.Inventory{Nodes: f.Nodes, Slices: f.Slices, Classes: f.Classes}, 1, feasibility.DefaultFeatures())
	if err != nil {
		b.Fatal(err)
	}
	for _, warm := range []bool{false, true} {
		size, cache := -1, "cold"
		if warm {
			size, cache = 0, "warm"
		}
		b.Run(fmt.Sprintf("nodes=%d/%s", n, cache), func(b *testing.B) {
			c := feasibility.NewChecker(feasibility.Options{CacheSize: size})
			in := decide.Input{Pod: pod, Policy: policy, Checker: c, Snapshot: snap, Admitted: true}
			c.Prepare(b.Context(), snap) // node classes and allocators of the snapshot
			if _, err := decide.Pod(b.Context(), in); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				d, err := decide.Pod(b.Context(), in)
				if err != nil || d.Outcome != translate.OutcomeTranslate || d.Verdict == nil || d.Verdict.Cached != warm {
					b.Fatalf("want a translation with a verdict (cached %v), got %+v %v", warm, d, err)
				}
			}
		})
	}
	b.Run("admission-review-json-roundtrip", func(b *testing.B) {
		raw, err := json.Marshal(pod)
		if err != nil {
			b.Fatal(err)
		}
		review := admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{Object: runtime.RawExtension{Raw: raw}}}
		body, err := json.Marshal(review)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			var r admissionv1.AdmissionReview
			if err := json.Unmarshal(body, &r); err != nil {
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
	})
}
