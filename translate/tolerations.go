package translate

import (
	"maps"
	"slices"
	"strconv"
	"strings"

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
// GKE nodes carry (GKEOnlyLabel): such a pod runs on GKE.

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
	if k := GKEOnlyLabel(pod); k != "" {
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
