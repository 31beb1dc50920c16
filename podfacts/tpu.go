package podfacts

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// TPU is the extended resource of Google's TPU device plugin.
const TPU corev1.ResourceName = "google.com/tpu"

// TPUEnvironment are the variables the workers of a multi-host TPU slice
// read to find each other (libtpu), which GKE's TPU webhooks set.
var TPUEnvironment = []string{"TPU_WORKER_ID", "TPU_WORKER_HOSTNAMES"}

// TPUTopologyLabels are the node labels that give a TPU slice's topology
// ("4x4", "2x2x4"): a slice of more chips than one pod asks for spans
// several hosts (GKE: one pod per host, each asking for the host's chips;
// cloud.google.com/gke-tpu-topology, and the TPU DRA driver's alias
// tpu.google.com/topology, kubernetes-sigs/dra-driver-google-tpu
// cmd/tpu-dra-kubeletplugin/util.go).
var TPUTopologyLabels = []string{"cloud.google.com/gke-tpu-topology", "tpu.google.com/topology"}

// RequestsTPU is LeaderWorkerSet's PodRequestsTPUs: google.com/tpu in the
// limits or requests of a container or init container, not zero.
func RequestsTPU(pod *corev1.Pod) bool {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if ContainerRequestsTPU(&list[i]) {
				return true
			}
		}
	}
	return false
}

// ContainerRequestsTPU: google.com/tpu in the container's limits or
// requests, not zero.
func ContainerRequestsTPU(c *corev1.Container) bool {
	for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		if q, ok := l[TPU]; ok && !q.IsZero() {
			return true
		}
	}
	return false
}

// SetsTPUEnvironment: the pod has an app container that asks for
// google.com/tpu, and every such container sets the slice's environment
// (TPUEnvironment) itself.
func SetsTPUEnvironment(pod *corev1.Pod) bool {
	n := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if !ContainerRequestsTPU(c) {
			continue
		}
		n++
		for _, name := range TPUEnvironment {
			if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name }) {
				return false
			}
		}
	}
	return n > 0
}

// MultiHostTPUSlice reports whether the pod's required node selection names
// a TPU slice topology (TPUTopologyLabels, a nodeSelector entry or an In
// expression of required node affinity) of more chips than its app
// containers ask for of google.com/tpu (each its limit, else its request):
// a worker of a multi-host slice.
func MultiHostTPUSlice(pod *corev1.Pod) bool {
	var chips int64
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[TPU]; ok {
			chips += q.Value()
		} else if q, ok := c.Resources.Requests[TPU]; ok {
			chips += q.Value()
		}
	}
	if chips <= 0 {
		return false
	}
	larger := func(v string) bool {
		slice, ok := TopologyChips(v)
		return ok && slice > chips
	}
	for _, k := range TPUTopologyLabels {
		if slices.ContainsFunc(RequiredValues(pod, k), larger) {
			return true
		}
	}
	return false
}

// TopologyChips is the number of chips of a TPU topology "AxB[xC]"; ok is
// false for a value that is not one.
func TopologyChips(v string) (int64, bool) {
	n := int64(1)
	parts := strings.Split(v, "x")
	if len(parts) < 2 {
		return 0, false
	}
	for _, p := range parts {
		d, err := strconv.ParseInt(p, 10, 64)
		if err != nil || d <= 0 || d > 1<<10 {
			return 0, false
		}
		n *= d
	}
	return n, true
}
