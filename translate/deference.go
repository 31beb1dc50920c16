package translate

import (
	"fmt"
	"slices"
	"strings"
)

// defer5004 leaves the pod to KEP-5004 when a DeviceClass already serves each
// of its extended resources and translation would add nothing: no selector
// from a label, no alternative, no alignment across requests, no config.
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
	adds := t.fromLabels || t.crossAlign || len(t.companions) > 0
	for _, r := range t.requests {
		// Capacities (HAMi's gpumem, a sharing mode's) are more than a count.
		if len(r.alts) > 1 || len(r.use.rule.Config) > 0 || len(r.use.capacities) > 0 || r.use.rule.sharedBySelector() {
			adds = true
		}
	}
	if all && !adds {
		var names []string
		for _, u := range t.uses {
			names = append(names, fmt.Sprintf("%s (DeviceClass %s)", u.resource, mapped[string(u.resource)]))
		}
		slices.Sort(names)
		names = slices.Compact(names)
		t.add(info(ReasonDeferToExtendedResource, nil, "the scheduler already serves %s from DRA (extendedResourceName) and translation would add nothing", strings.Join(names, ", ")))
		return true
	}
	for _, u := range t.uses {
		if cls, ok := mapped[string(u.resource)]; ok {
			t.add(warning(ReasonExtendedResourceMappedByClass, u.path.Child("resources", "limits").Key(string(u.resource)),
				"DeviceClass %s maps %s (extendedResourceName); claimbridge removed it from the container so that it is not allocated twice", cls, u.resource))
		}
	}
	return false
}
