package translate

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/podfacts"
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
// have read, and adds the toleration itself when the target cluster runs the
// plugin ([Policy.RunsExtendedResourceToleration]): the policy says so
// (PolicySpec.ImplicitTolerations: on in the gke and tpu profiles), or, when
// it says nothing, the pod's own required node selection names a label only
// GKE nodes carry (podfacts.GKEOnlyLabel): such a pod runs on GKE.

// RunsExtendedResourceToleration says whether the cluster the pod is
// translated for runs the ExtendedResourceToleration admission plugin, and
// why: what the policy says (implicitTolerations, or a gke or tpu profile
// it names), else, when it says nothing, whether the pod requires a label
// only GKE nodes carry (hint names it). said is false when neither the
// policy nor the pod tells: the answer is then no, as for most clusters.
func (p *Policy) RunsExtendedResourceToleration(pod *corev1.Pod) (runs, said bool, hint string) {
	if it := p.spec.ImplicitTolerations; it != nil {
		return *it, true, ""
	}
	if k := podfacts.GKEOnlyLabel(pod); k != "" {
		return true, true, k
	}
	return false, false, ""
}

// ImplicitTolerations reports whether the policy says the target cluster's
// admission adds the ExtendedResourceToleration plugin's tolerations
// (PolicySpec.ImplicitTolerations).
func (p *Policy) ImplicitTolerations() bool {
	return p.spec.ImplicitTolerations != nil && *p.spec.ImplicitTolerations
}

// ImplicitTolerationsSaid reports whether the policy says at all whether the
// target cluster runs ExtendedResourceToleration (implicitTolerations set,
// or a profile that sets it named).
func (p *Policy) ImplicitTolerationsSaid() bool { return p.spec.ImplicitTolerations != nil }

// addImplicitTolerations adds to out, when the target cluster's admission
// adds them ([Policy.RunsExtendedResourceToleration]: the policy says so, or
// the pod requires a GKE-only label) and the pod has not been admitted
// already, the toleration of each extended resource translation removed, in
// name order, unless an equal or broader one is there. It returns the
// tolerations added.
func (t *translation) addImplicitTolerations(out *corev1.Pod) []corev1.Toleration {
	if t.in.Admitted {
		return nil
	}
	runs, _, hint := t.p.RunsExtendedResourceToleration(t.pod)
	if !runs {
		return nil
	}
	why := "implicitTolerations, on in the gke and tpu profiles"
	if hint != "" {
		why = "the pod requires the node label " + hint + ", which only GKE nodes carry, and GKE runs the plugin"
	}
	var names []corev1.ResourceName
	for _, uses := range [][]*use{t.uses, t.companions, t.capacityUses} {
		for _, u := range uses {
			stripped := u.rule.CapacityOf != "" || (u.req != nil && u.req.name != "" && !u.rule.KeepInPod)
			if stripped && podfacts.IsExtendedResource(u.resource) && !slices.Contains(names, u.resource) {
				names = append(names, u.resource)
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	var added []corev1.Toleration
	for _, n := range names {
		key := string(n)
		if podfacts.ToleratesLikeThePlugin(out, key) {
			continue
		}
		tol := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
		if added == nil {
			// Room for all of them, so that neither list grows one by one.
			out.Spec.Tolerations = slices.Grow(out.Spec.Tolerations, len(names))
			added = make([]corev1.Toleration, 0, len(names))
		}
		out.Spec.Tolerations = append(out.Spec.Tolerations, tol)
		added = append(added, tol)
		t.add(sayAt(ReasonImplicitToleration, "spec.tolerations["+strconv.Itoa(len(out.Spec.Tolerations)-1)+"]",
			"added the toleration {key: %s, operator: Exists, effect: NoSchedule} that the target cluster's ExtendedResourceToleration admission plugin gives pods requesting %s (%s): the claim replaces the request", key, key, why))
	}
	return added
}
