package translate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/reason"
)

// Label values the devices cannot tell apart. A Map rule turns label values
// into attribute values through its table; where two label values map to a
// common attribute value (GKE's nvidia-h100-80gb, A3 High, and
// nvidia-h100-mega-80gb, A3 Mega, are both productName "NVIDIA H100 80GB
// HBM3"), a selector on the attribute matches the devices of both: the
// nodes differ (A3 Mega has other NICs), and only the node's own label says
// which is which. Collisions are read from the table, for every rule, the
// profiles' and the policy's own alike:
//
//   - forward, a requirement on such a value still becomes a selector (In:
//     the devices of the values asked for, and of their twins; NotIn: the
//     values that have no twin), and the requirement stays on the pod
//     (NodeLabelAmbiguous), so the node's label keeps deciding; ORed
//     required terms that would become alternatives cannot keep one term's
//     requirement, and such a pod stays as submitted
//     (AffinityNotTranslatable);
//   - backward, the legacy view derives no value from a device whose
//     attribute value several label values map to: only a node's real
//     label tells (backwardMap), and values are compared as they are,
//     never merged (canonicalMap).

// mapTwins lists, sorted, the other values of the rule's table that map to
// an attribute value v maps to; none when v is not in the table.
func mapTwins(rule *v1alpha1.NodeLabelRule, v string) []string {
	mine, ok := rule.Values[v]
	if !ok {
		return nil
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(rule.Values)) {
		if k != v && slices.ContainsFunc(rule.Values[k], func(x string) bool { return slices.Contains(mine, x) }) {
			out = append(out, k)
		}
	}
	return out
}

// ambiguousValues says, for a requirement on a Map rule of one of the
// pod's families, which of its values the devices cannot tell from which
// ("nvidia-h100-mega-80gb from nvidia-h100-80gb (gpu.nvidia.com/productName
// NVIDIA H100 80GB HBM3)"); none for another requirement.
func (t *translation) ambiguousValues(r labelReq) []string {
	if r.op != corev1.NodeSelectorOpIn && r.op != corev1.NodeSelectorOpNotIn {
		return nil
	}
	for _, f := range t.sortedFamilies() {
		rule, _, ok := t.p.labelRule(r.key, f)
		if !ok || rule.Conversion != v1alpha1.ConvMap {
			continue
		}
		var out []string
		for _, v := range r.values {
			twins := mapTwins(rule, v)
			if len(twins) == 0 {
				continue
			}
			var shared []string
			for _, x := range rule.Values[v] {
				if slices.ContainsFunc(twins, func(k string) bool { return slices.Contains(rule.Values[k], x) }) {
					shared = append(shared, x)
				}
			}
			out = append(out, fmt.Sprintf("%s from %s (%s %s)", v, strings.Join(twins, ", "), rule.Attribute, strings.Join(shared, ", ")))
		}
		return out
	}
	return nil
}

// keepAmbiguous marks the translated requirements (of all, the known
// requirements as written) on values the devices cannot tell apart: they
// stay on the pod. ORed required terms that became alternatives cannot
// keep one term's requirement: the pod then stays as submitted, unless the
// placement rule accepts losing nodes. It returns false when the pod stays.
func (t *translation) keepAmbiguous(all []labelReq) bool {
	for _, r := range all {
		if !t.translated[r.loc] {
			continue
		}
		amb := t.ambiguousValues(r)
		if len(amb) == 0 {
			continue
		}
		if r.loc.kind == locRequired && t.multiTerm {
			t.add(say(ReasonAffinityNotTranslatable, r.fieldPath(), "the devices cannot tell %s, so the requirement must stay on the pod, and the ORed terms, which become alternatives, cannot keep it for one term only; the pod keeps its device-plugin resources",
				strings.Join(amb, "; ")))
			return false
		}
		if t.ambiguous == nil {
			t.ambiguous = map[reqLoc][]string{}
		}
		t.ambiguous[r.loc] = amb
	}
	return true
}

// sayAmbiguous is the reason of a requirement kept on the pod because the
// devices cannot tell its values apart.
func sayAmbiguous(path, groups string, amb []string) reason.Reason {
	return sayAt(ReasonNodeLabelAmbiguous, path, "became a device selector on %s and stays on the pod: the devices cannot tell %s, only the node's own label can",
		groups, strings.Join(amb, "; "))
}
