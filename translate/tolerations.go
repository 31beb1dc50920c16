package translate

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Implicit tolerations. The ExtendedResourceToleration admission plugin
// (plugin/pkg/admission/extendedresourcetoleration, off by default in
// kube-apiserver) adds to a pod, for each extended resource that a container
// or init container requests, the toleration {key: <resource>, operator:
// Exists, effect: NoSchedule}. GKE runs it and taints GPU and TPU nodes
// (nvidia.com/gpu=present:NoSchedule, google.com/tpu=present:NoSchedule);
// most other clusters do not run it, and there a pod that tolerates nothing
// must stay off a node tainted nvidia.com/gpu:NoSchedule.
//
// kube-apiserver runs its built-in mutating plugins before
// MutatingAdmissionWebhook (AllOrderedPlugins in
// pkg/kubeapiserver/options/plugins.go), so the pod the webhook sees already
// carries what the plugin gives, where it runs, and nothing where it does
// not: the webhook adds no toleration (Input.Admitted). A manifest has not
// been admitted: offline, translation removes the request the plugin would
// have read, and adds the toleration itself only when the policy says the
// target cluster runs the plugin (PolicySpec.ImplicitTolerations: on in the
// gke and tpu profiles, off in the default policy and elsewhere).

// tolerates reports whether tol tolerates every taint that {key, Exists,
// NoSchedule} does: the same key or any key with Exists, and the effect
// NoSchedule or any.
func tolerates(tol corev1.Toleration, key string) bool {
	if tol.Effect != "" && tol.Effect != corev1.TaintEffectNoSchedule {
		return false
	}
	if tol.Operator != corev1.TolerationOpExists {
		return false
	}
	return tol.Key == "" || tol.Key == key
}

// AdmissionTolerations are the tolerations the ExtendedResourceToleration
// admission plugin would add to pod, in its order: {key: <resource>,
// operator: Exists, effect: NoSchedule} for each extended resource a
// container or init container requests (a limit without a request counts:
// defaulting copies it to the request before admission), sorted by name,
// without those pod already has. The plugin's own test for "already has"
// is an equal toleration (AddOrUpdateTolerationInPod); so is this one.
func AdmissionTolerations(pod *corev1.Pod) []corev1.Toleration {
	var names []string
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for n := range rl {
					if IsExtendedResource(n) && !slices.Contains(names, string(n)) {
						names = append(names, string(n))
					}
				}
			}
		}
	}
	slices.Sort(names)
	var out []corev1.Toleration
	for _, n := range names {
		tol := corev1.Toleration{Key: n, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
		if !slices.ContainsFunc(pod.Spec.Tolerations, func(have corev1.Toleration) bool { return have.MatchToleration(&tol) }) {
			out = append(out, tol)
		}
	}
	return out
}

// ImplicitTolerations reports whether the policy says the target cluster's
// admission adds the ExtendedResourceToleration plugin's tolerations
// (PolicySpec.ImplicitTolerations).
func (p *Policy) ImplicitTolerations() bool {
	return p.spec.ImplicitTolerations != nil && *p.spec.ImplicitTolerations
}

// addImplicitTolerations adds to out, when the policy says the target
// cluster's admission adds them and the pod has not been admitted already,
// the toleration of each extended resource translation removed, in name
// order, unless an equal or broader one is there. It returns the
// tolerations added.
func (t *translation) addImplicitTolerations(out *corev1.Pod) []corev1.Toleration {
	if t.in.Admitted || !t.p.ImplicitTolerations() {
		return nil
	}
	var names []corev1.ResourceName
	for _, u := range append(append(slices.Clone(t.uses), t.companions...), t.capacityUses...) {
		stripped := u.rule.CapacityOf != "" || (u.req != nil && u.req.name != "" && !u.rule.KeepInPod)
		if stripped && IsExtendedResource(u.resource) && !slices.Contains(names, u.resource) {
			names = append(names, u.resource)
		}
	}
	slices.Sort(names)
	var added []corev1.Toleration
	for _, n := range names {
		key := string(n)
		if slices.ContainsFunc(out.Spec.Tolerations, func(tol corev1.Toleration) bool { return tolerates(tol, key) }) {
			continue
		}
		tol := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
		out.Spec.Tolerations = append(out.Spec.Tolerations, tol)
		added = append(added, tol)
		t.add(say(ReasonImplicitToleration, field.NewPath("spec", "tolerations").Index(len(out.Spec.Tolerations)-1),
			"added the toleration {key: %s, operator: Exists, effect: NoSchedule} that the target cluster's ExtendedResourceToleration admission plugin gives pods requesting %s (implicitTolerations, on in the gke and tpu profiles): the claim replaces the request", key, key))
	}
	return added
}
