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
// Exists, effect: NoSchedule}; GKE taints GPU and TPU nodes
// (nvidia.com/gpu=present:NoSchedule, google.com/tpu=present:NoSchedule) and
// adds the same tolerations to pods that request those resources. A pod
// whose request translation removes no longer gets the toleration, and no
// longer fits the tainted nodes that have its devices. Where the plugin runs
// before the webhook (it is ordered before MutatingAdmissionWebhook) the
// toleration is there already and nothing is added.

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

// addImplicitTolerations adds to out, when the policy says the cluster's
// admission adds them, the toleration of each extended resource translation
// removed, in name order, unless an equal or broader one is there. It
// returns the tolerations added.
func (t *translation) addImplicitTolerations(out *corev1.Pod) []corev1.Toleration {
	if t.p.spec.ImplicitTolerations == nil || !*t.p.spec.ImplicitTolerations {
		return nil
	}
	var names []corev1.ResourceName
	for _, u := range append(append(slices.Clone(t.uses), t.companions...), t.capacityUses...) {
		stripped := u.rule.CapacityOf != "" || (u.req != nil && u.req.name != "" && !u.rule.KeepInPod)
		if stripped && isExtendedResource(u.resource) && !slices.Contains(names, u.resource) {
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
			"added the toleration {key: %s, operator: Exists, effect: NoSchedule} that admission gives pods requesting %s (the ExtendedResourceToleration plugin; GKE): the claim replaces the request", key, key))
	}
	return added
}
