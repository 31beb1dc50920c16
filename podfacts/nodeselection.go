package podfacts

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// What the pod's required node selection (its nodeSelector and the required
// terms of its node affinity) names.

// RequiresLabel reports whether the pod's nodeSelector or required node
// affinity has a requirement on the label key.
func RequiresLabel(pod *corev1.Pod, key string) bool {
	if _, ok := pod.Spec.NodeSelector[key]; ok {
		return true
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == key {
				return true
			}
		}
	}
	return false
}

// RequiredValues are the values of the label key the pod's required node
// selection names: its nodeSelector entry and the values of the In
// expressions of its required node-affinity terms.
func RequiredValues(pod *corev1.Pod, key string) []string {
	var out []string
	if v, ok := pod.Spec.NodeSelector[key]; ok {
		out = append(out, v)
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return out
	}
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == key && e.Operator == corev1.NodeSelectorOpIn {
				out = append(out, e.Values...)
			}
		}
	}
	return out
}

// gkeOnlyLabels are node-label keys that only GKE sets on its nodes: every
// key under cloud.google.com/gke- (the node pool, the accelerator and its
// count, the TPU accelerator, topology and slice, Spot and preemptible VMs,
// GPU sharing, partitioning and driver version: GKE's "About node labels"
// and the GPU and TPU pages), and the compute-class, machine-family and
// reservation keys of GKE's compute classes and reservations. A key ending
// in "-" is a prefix.
var gkeOnlyLabels = []string{"cloud.google.com/gke-", "cloud.google.com/compute-class", "cloud.google.com/machine-family", "cloud.google.com/reservation-name"}

func isGKEOnlyLabel(key string) bool {
	for _, k := range gkeOnlyLabels {
		if key == k || (strings.HasSuffix(k, "-") && strings.HasPrefix(key, k)) {
			return true
		}
	}
	return false
}

// GKEOnlyLabel is the first key (nodeSelector in key order, then required
// node affinity) of the pod's own required node selection that only GKE
// nodes carry, "" when it names none: a nodeSelector entry, or an In or
// Exists requirement on such a key in every ORed required term (a term
// without one would admit other nodes). A pod that requires such a label
// can only run on GKE.
func GKEOnlyLabel(pod *corev1.Pod) string {
	for _, k := range slices.Sorted(maps.Keys(pod.Spec.NodeSelector)) {
		if isGKEOnlyLabel(k) {
			return k
		}
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	first := ""
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		key := ""
		for _, e := range term.MatchExpressions {
			if isGKEOnlyLabel(e.Key) && (e.Operator == corev1.NodeSelectorOpIn || e.Operator == corev1.NodeSelectorOpExists) {
				key = e.Key
				break
			}
		}
		if key == "" {
			return ""
		}
		if first == "" {
			first = key
		}
	}
	return first
}
