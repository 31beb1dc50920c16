package translate

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// quotaCovered keeps the pod legacy when a ResourceQuota of its namespace
// limits a legacy resource it asks for and no quota limits the devices of
// the classes it would get instead: translation must not escape a quota.
func (t *translation) quotaCovered() bool {
	limits := map[corev1.ResourceName]bool{}
	for _, q := range t.in.Quotas {
		if q == nil {
			continue
		}
		for n := range q.Spec.Hard {
			limits[n] = true
		}
	}
	if len(limits) == 0 {
		return true
	}
	var missing []string
	for _, r := range t.requests {
		limited := limits[corev1.ResourceName("requests."+string(r.use.resource))] || limits[r.use.resource]
		if r.use.rule.KeepInPod || !limited {
			continue
		}
		for _, a := range r.alts {
			q := a.class + deviceClassQuotaSuffix
			if !limits[corev1.ResourceName(q)] && !slices.Contains(missing, q) {
				missing = append(missing, q)
			}
		}
	}
	if len(missing) == 0 {
		return true
	}
	slices.Sort(missing)
	t.add(warning(ReasonQuotaNotCovered, nil, "a ResourceQuota limits the legacy resource, and none limits %s; translating would let the pod escape its quota", strings.Join(missing, ", ")))
	return false
}
