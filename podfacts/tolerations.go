package podfacts

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The ExtendedResourceToleration admission plugin
// (plugin/pkg/admission/extendedresourcetoleration, off by default in
// kube-apiserver, on in GKE) adds to a pod, for each extended resource that
// a container or init container requests, the toleration {key: <resource>,
// operator: Exists, effect: NoSchedule}. GKE runs it; a pod that requires a
// label only GKE nodes carry (GKEOnlyLabel) runs on GKE.

// AdmissionTolerations are the tolerations the ExtendedResourceToleration
// admission plugin would add to pod, in its order: {key: <resource>,
// operator: Exists, effect: NoSchedule} for each extended resource a
// container or init container requests ([ExtendedNamed]: a limit without a
// request counts, defaulting copies it to the request before admission; a
// zero quantity counts too), sorted by name, without those pod already
// has. The plugin's
// own test for "already has" is an equal toleration
// (AddOrUpdateTolerationInPod); so is this one.
func AdmissionTolerations(pod *corev1.Pod) []corev1.Toleration {
	var out []corev1.Toleration
	for _, n := range ExtendedNamed(pod) {
		tol := corev1.Toleration{Key: string(n), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
		if !slices.ContainsFunc(pod.Spec.Tolerations, func(have corev1.Toleration) bool { return have.MatchToleration(&tol) }) {
			out = append(out, tol)
		}
	}
	return out
}

// ToleratesLikeThePlugin reports whether the pod already tolerates every
// taint that the ExtendedResourceToleration plugin's toleration for the
// extended resource key does ({key, Exists, NoSchedule}): a toleration of
// that key or of every key, with Exists and the effect NoSchedule or any.
func ToleratesLikeThePlugin(pod *corev1.Pod, key string) bool {
	return slices.ContainsFunc(pod.Spec.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Operator == corev1.TolerationOpExists && (tol.Effect == "" || tol.Effect == corev1.TaintEffectNoSchedule) && (tol.Key == "" || tol.Key == key)
	})
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
