package podfacts

import (
	"slices"

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
