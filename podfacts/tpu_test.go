package podfacts_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/podfacts"
)

// withEnv sets the variables on every app container of the pod.
func withEnv(pod *corev1.Pod, names ...string) *corev1.Pod {
	for i := range pod.Spec.Containers {
		for _, n := range names {
			pod.Spec.Containers[i].Env = append(pod.Spec.Containers[i].Env, corev1.EnvVar{Name: n, Value: "x"})
		}
	}
	return pod
}

func in(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func TestTPUFacts(t *testing.T) {
	type facts struct {
		Requests, SetsEnvironment, MultiHost bool
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want facts
	}{
		"a host's chips under the topology of a single-host slice": {
			pod:  builders.MakePod("p", "ns").Container("a").Limit("google.com/tpu", "4").NodeSelector("cloud.google.com/gke-tpu-topology", "2x2").Obj(),
			want: facts{Requests: true},
		},
		"a host's chips under the topology of a larger slice are a worker of a multi-host slice": {
			pod:  builders.MakePod("p", "ns").Container("a").Limit("google.com/tpu", "4").NodeSelector("cloud.google.com/gke-tpu-topology", "4x4").Obj(),
			want: facts{Requests: true, MultiHost: true},
		},
		"the TPU DRA driver's topology label in required affinity counts, In only": {
			pod: builders.MakePod("p", "ns").Container("a").Request("google.com/tpu", "4").
				RequiredTerm(in("tpu.google.com/topology", "2x2", "2x2x4")).Obj(),
			want: facts{Requests: true, MultiHost: true},
		},
		"init containers ask for TPUs but do not count as the slice's chips": {
			pod: builders.MakePod("p", "ns").InitContainer("warm", false).Limit("google.com/tpu", "4").
				Container("a").NodeSelector("cloud.google.com/gke-tpu-topology", "4x4").Obj(),
			want: facts{Requests: true},
		},
		"containers that set the slice's environment themselves": {
			pod: withEnv(builders.MakePod("p", "ns").Container("a").Limit("google.com/tpu", "4").Obj(),
				"TPU_WORKER_ID", "TPU_WORKER_HOSTNAMES"),
			want: facts{Requests: true, SetsEnvironment: true},
		},
		"a container that sets half of it does not": {
			pod:  withEnv(builders.MakePod("p", "ns").Container("a").Limit("google.com/tpu", "4").Obj(), "TPU_WORKER_ID"),
			want: facts{Requests: true},
		},
		"zero chips ask for no TPU": {
			pod: builders.MakePod("p", "ns").Container("a").Limit("google.com/tpu", "0").NodeSelector("cloud.google.com/gke-tpu-topology", "4x4").Obj(),
		},
		"a GPU pod": {
			pod: builders.MakePod("p", "ns").Container("a").Limit("nvidia.com/gpu", "1").Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := facts{
				Requests:        podfacts.RequestsTPU(tc.pod),
				SetsEnvironment: podfacts.SetsTPUEnvironment(tc.pod),
				MultiHost:       podfacts.MultiHostTPUSlice(tc.pod),
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestTopologyChips(t *testing.T) {
	type chips struct {
		N  int64
		OK bool
	}
	cases := map[string]chips{
		"2x2":   {4, true},
		"2x2x4": {16, true},
		"4x4":   {16, true},
		"4":     {},
		"2xx2":  {},
		"0x4":   {},
		"v5e":   {},
		"":      {},
	}
	for v, want := range cases {
		t.Run(v, func(t *testing.T) {
			n, ok := podfacts.TopologyChips(v)
			if diff := cmp.Diff(want, chips{n, ok}); diff != "" {
				t.Errorf("TopologyChips(%q) (-want,+got):\n%s", v, diff)
			}
		})
	}
}
