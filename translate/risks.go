package translate

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/podfacts"
)

// Risks a translation takes that no check proves or refutes: the pod is
// translated, and each is said out loud as a Warning (admission warnings,
// Events, the report), never in silence. The tables below say which labels
// and resources carry each risk, with where that is read.

// autoscalingLabels are node-label keys that node autoscalers read from a
// pending pod's node selector and required affinity to choose what to scale
// up: the cluster autoscaler simulates the pod against each node group's
// template node, whose labels for a group at zero come from the group's
// configuration (GKE's node-pool labels such as gke-accelerator, the
// well-known instance-type label); Karpenter picks instance types whose
// labels satisfy the pod's requirements (karpenter.k8s.aws/instance-*,
// karpenter.azure.com/sku-*, karpenter.sh/*). A key ending in "/" is a
// domain prefix.
var autoscalingLabels = []string{
	"cloud.google.com/gke-accelerator", "cloud.google.com/gke-accelerator-count",
	"cloud.google.com/gke-tpu-accelerator", "cloud.google.com/gke-tpu-topology", "cloud.google.com/gke-gpu-partition-size",
	"node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type",
	"karpenter.k8s.aws/", "karpenter.azure.com/", "karpenter.sh/",
}

// topologyAlignedResources are device-plugin resources of NICs that the
// kubelet's Topology Manager aligns with the GPUs (both device plugins give
// NUMA hints); a device from a claim gives none, so once the GPUs move to
// DRA the two are no longer aligned. vpc.amazonaws.com/efa is the AWS EFA
// device plugin's; rdma/* the RDMA shared device plugin's (an exclusive
// mapping in the policy moves them with the GPUs instead). A name ending in
// "*" is a prefix.
var topologyAlignedResources = []string{"vpc.amazonaws.com/efa", "rdma/*"}

// sayRisks adds the warnings of a translation: a multi-host TPU slice
// translated per device, an autoscaling label removed from the pod, a NIC
// left on its device plugin. out is the translated pod.
func (t *translation) sayRisks(out *corev1.Pod) {
	t.multiHostSlices()
	t.autoscalingLabelsRemoved(out)
	t.nicsLeftBehind(out)
}

// multiHostSlices warns for each topology requirement that names a slice of
// more chips than the pod asks for of the label's families.
func (t *translation) multiHostSlices() {
	for _, r := range t.requiredLabelReqs() {
		if !slices.Contains(podfacts.TPUTopologyLabels, r.key) || r.op != corev1.NodeSelectorOpIn {
			continue
		}
		rule, _, ok := t.p.labelRuleAny(r.key)
		if !ok {
			continue
		}
		var chips int64
		var res []string
		for _, u := range t.uses {
			if !u.init && slices.Contains(rule.Families, u.rule.Family) {
				chips += u.count
				if !slices.Contains(res, string(u.resource)) {
					res = append(res, string(u.resource))
				}
			}
		}
		if chips == 0 {
			continue
		}
		for _, v := range r.values {
			slice, ok := podfacts.TopologyChips(v)
			if !ok || slice <= chips {
				continue
			}
			t.add(say(ReasonMultiHostTPUSlice, r.fieldPath(),
				"%s=%s is a slice of %d chips and the pod asks for %d %s: a multi-host slice, translated per device. The claim allocates this pod's chips on its own node only; that the pods of the slice land on the hosts of one slice still rests on the workload's node-pool affinity, and a host of a multi-host slice may not publish its topology (the TPU DRA driver leaves the attribute out when it cannot tell), which the selector would then never match",
				r.key, v, slice, chips, strings.Join(res, ", ")))
		}
	}
}

// autoscalingLabelsRemoved warns for each autoscaling key that the pod
// requires and its translation no longer does.
func (t *translation) autoscalingLabelsRemoved(out *corev1.Pod) {
	var keys []string
	var first *field.Path
	for _, r := range t.requiredLabelReqs() {
		if !isAutoscalingLabel(r.key) || slices.Contains(keys, r.key) || podfacts.RequiresLabel(out, r.key) {
			continue
		}
		keys = append(keys, r.key)
		if first == nil {
			first = r.fieldPath()
		}
	}
	if len(keys) == 0 {
		return
	}
	what := keys[0] + " left the pod (it became a device selector), and node autoscalers read it"
	if len(keys) > 1 {
		what = strings.Join(keys, ", ") + " left the pod (they became device selectors), and node autoscalers read them"
	}
	t.add(say(ReasonAutoscalingLabelRemoved, first,
		"%s: the cluster autoscaler and Karpenter choose the node group or instance type to scale up from the pod's node selector and required affinity, so a node group scaled to zero may no longer be scaled up for this pod", what))
}

func isAutoscalingLabel(key string) bool {
	for _, k := range autoscalingLabels {
		if key == k || (strings.HasSuffix(k, "/") && strings.HasPrefix(key, k)) {
			return true
		}
	}
	return false
}

// nicsLeftBehind warns for each NIC resource of a device plugin that the
// translated pod still asks for.
func (t *translation) nicsLeftBehind(out *corev1.Pod) {
	var moved []string
	for _, u := range t.uses {
		if !slices.Contains(moved, string(u.resource)) {
			moved = append(moved, string(u.resource))
		}
	}
	visit := func(list []corev1.Container, path *field.Path) {
		for i := range list {
			for _, n := range podfacts.ContainerResourceNames(&list[i]) {
				if !matchesResource(topologyAlignedResources, n) {
					continue
				}
				t.add(say(ReasonTopologyAlignmentLost, path.Index(i).Child("resources", "limits").Key(string(n)),
					"%s stays on its device plugin while the pod's devices (%s) move to a claim: the kubelet's Topology Manager aligns device-plugin resources with each other, not with devices from a claim, so the NIC and the devices may end up on different NUMA nodes",
					n, strings.Join(moved, ", ")))
			}
		}
	}
	visit(out.Spec.InitContainers, pathInitContainers)
	visit(out.Spec.Containers, pathContainers)
}

// requiredLabelReqs are the pod's nodeSelector entries and required
// node-affinity requirements as submitted, listed once per translation:
// several stages read them and none changes them.
func (t *translation) requiredLabelReqs() []labelReq {
	if t.required == nil {
		t.required = requiredReqsOf(t.pod)
		if t.required == nil {
			t.required = []labelReq{}
		}
	}
	return t.required
}

// requiredReqsOf lists a pod's nodeSelector entries (in key order) and
// required node-affinity expressions, with their field paths.
func requiredReqsOf(pod *corev1.Pod) []labelReq {
	var out []labelReq
	if n := len(pod.Spec.NodeSelector); n > 0 {
		// One backing array for the keys' single values.
		values := make([]string, 0, n)
		for _, k := range slices.Sorted(maps.Keys(pod.Spec.NodeSelector)) {
			values = append(values, pod.Spec.NodeSelector[k])
			out = append(out, labelReq{key: k, op: corev1.NodeSelectorOpIn, values: values[len(values)-1 : len(values) : len(values)],
				loc: reqLoc{kind: locSelector, key: k}})
		}
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return out
	}
	for i, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for j, e := range term.MatchExpressions {
			out = append(out, labelReq{key: e.Key, op: e.Operator, values: e.Values, loc: reqLoc{kind: locRequired, term: i, expr: j}})
		}
	}
	return out
}
