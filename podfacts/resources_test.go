package podfacts_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/podfacts"
)

func TestIsExtendedResource(t *testing.T) {
	cases := map[corev1.ResourceName]bool{
		"nvidia.com/gpu":            true,
		"example.com/fpga":          true,
		"rdma/hca":                  true,
		"cpu":                       false,
		"hugepages-2Mi":             false,
		"kubernetes.io/foo":         false,
		"example.kubernetes.io/bar": false,
		"requests.nvidia.com/gpu":   false,
	}
	for name, want := range cases {
		t.Run(string(name), func(t *testing.T) {
			if got := podfacts.IsExtendedResource(name); got != want {
				t.Errorf("IsExtendedResource(%s) = %v, want %v", name, got, want)
			}
		})
	}
}

// quantities writes a resource list as strings, which cmp can compare.
func quantities(list corev1.ResourceList) map[corev1.ResourceName]string {
	if list == nil {
		return nil
	}
	out := map[corev1.ResourceName]string{}
	for n, q := range list {
		out[n] = q.String()
	}
	return out
}

// The readings of a pod's extended resources side by side: each answers
// its own question, and the cases show where they part.
func TestExtendedResourcesOfAPod(t *testing.T) {
	type want struct {
		effective map[corev1.ResourceName]string // EffectiveRequests
		extended  map[corev1.ResourceName]string // ExtendedRequests
		asked     []corev1.ResourceName          // ExtendedAsked
		named     []corev1.ResourceName          // ExtendedNamed
		names     bool                           // NamesExtended
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want want
	}{
		"a limit without a request is the request defaulting makes of it": {
			pod: builders.MakePod("p", "ns").Container("a").Limit("nvidia.com/gpu", "2").Limit("cpu", "1").Obj(),
			want: want{
				effective: map[corev1.ResourceName]string{"nvidia.com/gpu": "2", "cpu": "1"},
				extended:  map[corev1.ResourceName]string{"nvidia.com/gpu": "2"},
				asked:     []corev1.ResourceName{"nvidia.com/gpu"},
				named:     []corev1.ResourceName{"nvidia.com/gpu"},
				names:     true,
			},
		},
		"app containers add up and an init container that needs more sets the request": {
			pod: builders.MakePod("p", "ns").InitContainer("check", false).Limit("nvidia.com/gpu", "8").
				Container("a").Limit("nvidia.com/gpu", "2").Limit("rdma/hca", "1").
				Container("b").Limit("nvidia.com/gpu", "3").Obj(),
			want: want{
				effective: map[corev1.ResourceName]string{"nvidia.com/gpu": "8", "rdma/hca": "1"},
				extended:  map[corev1.ResourceName]string{"nvidia.com/gpu": "8", "rdma/hca": "1"},
				asked:     []corev1.ResourceName{"nvidia.com/gpu", "rdma/hca"},
				named:     []corev1.ResourceName{"nvidia.com/gpu", "rdma/hca"},
				names:     true,
			},
		},
		"a sidecar counts with the app containers and next to a later init container": {
			pod: builders.MakePod("p", "ns").InitContainer("side", true).Limit("nvidia.com/gpu", "1").
				InitContainer("check", false).Limit("nvidia.com/gpu", "4").
				Container("a").Limit("nvidia.com/gpu", "2").Obj(),
			want: want{
				effective: map[corev1.ResourceName]string{"nvidia.com/gpu": "5"},
				extended:  map[corev1.ResourceName]string{"nvidia.com/gpu": "5"},
				asked:     []corev1.ResourceName{"nvidia.com/gpu"},
				named:     []corev1.ResourceName{"nvidia.com/gpu"},
				names:     true,
			},
		},
		"an explicit request of zero beside a limit is asked for but requests nothing": {
			pod: builders.MakePod("p", "ns").Container("a").Limit("example.com/fpga", "1").Request("example.com/fpga", "0").Obj(),
			want: want{
				effective: map[corev1.ResourceName]string{},
				extended:  map[corev1.ResourceName]string{},
				asked:     []corev1.ResourceName{"example.com/fpga"},
				named:     []corev1.ResourceName{"example.com/fpga"},
				names:     true,
			},
		},
		"a resource at zero is named, not asked for": {
			pod: builders.MakePod("p", "ns").Container("a").Limit("nvidia.com/gpu", "0").Limit("memory", "1Gi").Obj(),
			want: want{
				effective: map[corev1.ResourceName]string{"memory": "1Gi"},
				extended:  map[corev1.ResourceName]string{},
				named:     []corev1.ResourceName{"nvidia.com/gpu"},
				names:     true,
			},
		},
		"native resources are not extended resources": {
			pod: builders.MakePod("p", "ns").Container("a").Limit("cpu", "4").Limit("kubernetes.io/foo", "1").Obj(),
			want: want{
				effective: map[corev1.ResourceName]string{"cpu": "4", "kubernetes.io/foo": "1"},
				extended:  map[corev1.ResourceName]string{},
			},
		},
		"a pod without containers asks for nothing": {
			pod:  builders.MakePod("p", "ns").Obj(),
			want: want{effective: map[corev1.ResourceName]string{}, extended: map[corev1.ResourceName]string{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := want{
				effective: quantities(podfacts.EffectiveRequests(tc.pod)),
				extended:  quantities(podfacts.ExtendedRequests(tc.pod)),
				asked:     podfacts.ExtendedAsked(tc.pod),
				named:     podfacts.ExtendedNamed(tc.pod),
				names:     podfacts.NamesExtended(tc.pod),
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestEffectiveRequestsLeavesThePodAsItIs(t *testing.T) {
	pod := builders.MakePod("p", "ns").Container("a").Limit("nvidia.com/gpu", "1").Obj()
	before := pod.DeepCopy()
	podfacts.EffectiveRequests(pod)
	if diff := cmp.Diff(before, pod); diff != "" {
		t.Errorf("the pod changed (-want,+got):\n%s", diff)
	}
}

func TestDeviceCounts(t *testing.T) {
	devices := func(n corev1.ResourceName) bool { return n == "nvidia.com/gpu" || n == "google.com/tpu" }
	cases := map[string]struct {
		pod  *corev1.Pod
		want map[corev1.ResourceName]int64
	}{
		"containers add up": {
			pod: builders.MakePod("p", "ns").Container("a").Limit("nvidia.com/gpu", "2").
				Container("b").Limit("nvidia.com/gpu", "1").Obj(),
			want: map[corev1.ResourceName]int64{"nvidia.com/gpu": 3},
		},
		"an init container that needs more than the app containers sets the count": {
			pod: builders.MakePod("p", "ns").InitContainer("check", false).Limit("nvidia.com/gpu", "8").
				Container("a").Limit("nvidia.com/gpu", "4").Obj(),
			want: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8},
		},
		"sidecars count with the app containers and next to later init containers": {
			pod: builders.MakePod("p", "ns").InitContainer("side", true).Limit("nvidia.com/gpu", "1").
				InitContainer("check", false).Limit("nvidia.com/gpu", "4").
				Container("a").Limit("nvidia.com/gpu", "2").Obj(),
			want: map[corev1.ResourceName]int64{"nvidia.com/gpu": 5},
		},
		"the limit counts before the request, and a request alone counts": {
			pod: builders.MakePod("p", "ns").Container("a").Limit("nvidia.com/gpu", "2").Request("nvidia.com/gpu", "1").
				Container("b").Request("google.com/tpu", "4").Obj(),
			want: map[corev1.ResourceName]int64{"nvidia.com/gpu": 2, "google.com/tpu": 4},
		},
		"a fraction rounds up": {
			pod:  builders.MakePod("p", "ns").Container("a").Limit("nvidia.com/gpu", "500m").Obj(),
			want: map[corev1.ResourceName]int64{"nvidia.com/gpu": 1},
		},
		"a resource at zero is absent": {
			pod: builders.MakePod("p", "ns").Container("a").Limit("nvidia.com/gpu", "0").Obj(),
		},
		"resources counted does not accept are absent": {
			pod: builders.MakePod("p", "ns").Container("a").Limit("example.com/fpga", "1").Limit("cpu", "4").Obj(),
		},
		"no pod": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, podfacts.DeviceCounts(tc.pod, devices)); diff != "" {
				t.Errorf("DeviceCounts (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestResourceNames(t *testing.T) {
	cases := map[string]struct {
		pod           *corev1.Pod
		want, inFirst []corev1.ResourceName
	}{
		"every resource named, native ones and those at zero included, once each": {
			pod: builders.MakePod("p", "ns").InitContainer("init", false).Limit("rdma/hca", "1").
				Container("a").Limit("nvidia.com/gpu", "0").Request("cpu", "4").Limit("cpu", "4").
				Container("b").Request("memory", "1Gi").Obj(),
			want:    []corev1.ResourceName{"cpu", "memory", "nvidia.com/gpu", "rdma/hca"},
			inFirst: []corev1.ResourceName{"cpu", "nvidia.com/gpu"},
		},
		"a container that names none": {
			pod:     builders.MakePod("p", "ns").Container("a").Obj(),
			inFirst: []corev1.ResourceName{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, podfacts.ResourceNames(tc.pod)); diff != "" {
				t.Errorf("ResourceNames (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.inFirst, podfacts.ContainerResourceNames(&tc.pod.Spec.Containers[0])); diff != "" {
				t.Errorf("ContainerResourceNames (-want,+got):\n%s", diff)
			}
		})
	}
}
