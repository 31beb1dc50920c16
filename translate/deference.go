package translate

import (
	"fmt"
	"slices"
	"strings"
)

// defer5004 leaves the pod to KEP-5004 when a DeviceClass already serves each
// of its extended resources and translation would add nothing: no selector
// from a label or a card-type annotation, no alternative, no alignment across requests, no config, no
// capacity — and, unless deference.preferExtendedResource, no node-label
// requirement removed from the pod (one the device request implies, such as
// nvidia.com/gpu.present, or one no attribute expresses, nvidia.com/gpu.count):
// KEP-5004 keeps the pod's labels, which DRA nodes without GPU Feature
// Discovery lack, while translation frees the pod of them. Tolerations never
// count: admission gives the pod that keeps its extended resource the same
// ones translation adds (tolerations.go).
//
// Leaving a pod to KEP-5004 keeps the resource in its requests, so
// kube-scheduler's NodeResourcesFit scoring (bin-packing, and
// BalancedAllocation) still counts it; a translated pod's claim is not
// counted there. preferExtendedResource trades label removal for that.
func (t *translation) defer5004() bool {
	mapped := map[string]string{}
	for _, c := range t.in.Classes {
		if c != nil && c.Spec.ExtendedResourceName != nil {
			mapped[*c.Spec.ExtendedResourceName] = c.Name
		}
	}
	if len(mapped) == 0 {
		return false
	}
	all := true
	for _, u := range t.uses {
		if _, ok := mapped[string(u.resource)]; !ok {
			all = false
		}
	}
	adds := t.fromLabels || t.crossAlign || len(t.companions) > 0 || len(t.cardSel) > 0
	for _, r := range t.requests {
		// Capacities (HAMi's gpumem, a sharing mode's) are more than a count.
		if len(r.alts) > 1 || len(r.use.rule.Config) > 0 || len(r.use.capacities) > 0 || sharedBySelector(r.use.rule) || r.hasShares() {
			adds = true
		}
	}
	// Node-label requirements removed without a selector (implied or not
	// expressible): an addition unless the policy prefers KEP-5004.
	removesLabels := len(t.translated) > len(t.ambiguous) && !t.p.spec.KeepTranslatedNodeLabels
	onlyLabels := !adds && removesLabels
	if onlyLabels && !t.p.spec.Deference.PreferExtendedResource {
		adds = true
	}
	if all && !adds && t.in.NoDeference != "" {
		// Translated, so that the autoscaler provisions for it.
		for _, u := range t.uses {
			t.add(say(ReasonExtendedResourceMappedByClass, u.path.Child("resources", "limits").Key(string(u.resource)),
				"DeviceClass %s maps %s (extendedResourceName), and the pod is translated all the same: %s", mapped[string(u.resource)], u.resource, t.in.NoDeference))
		}
		return false
	}
	if all && !adds {
		var names []string
		for _, u := range t.uses {
			names = append(names, fmt.Sprintf("%s (DeviceClass %s)", u.resource, mapped[string(u.resource)]))
		}
		slices.Sort(names)
		names = slices.Compact(names)
		what := "translation would add nothing"
		if onlyLabels {
			what = "translation would only remove node-label requirements that the device request implies or no device attribute expresses (spec.deference.preferExtendedResource: the pod keeps NodeResourcesFit scoring, and the DRA nodes must carry those labels)"
		}
		t.add(say(ReasonDeferToExtendedResource, nil, "the scheduler already serves %s from DRA (extendedResourceName) and %s", strings.Join(names, ", "), what))
		return true
	}
	hint := ""
	if all && onlyLabels {
		hint = " (spec.deference.preferExtendedResource: true would leave this pod to KEP-5004: translation only removes node labels)"
	}
	for _, u := range t.uses {
		if cls, ok := mapped[string(u.resource)]; ok {
			t.add(say(ReasonExtendedResourceMappedByClass, u.path.Child("resources", "limits").Key(string(u.resource)),
				"DeviceClass %s maps %s (extendedResourceName); claimbridge removed it from the container so that it is not allocated twice, and kube-scheduler's NodeResourcesFit scoring (bin-packing) no longer counts it for this pod, as it would for a pod left to KEP-5004%s", cls, u.resource, hint))
		}
	}
	return false
}
