package translate

import (
	"slices"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// addCompanions adds companion requests (CPUs) when the pod gets a device of
// a family they accompany and an alignment rule ties them together.
func (t *translation) addCompanions() {
	for _, u := range t.companions {
		with := slices.ContainsFunc(u.rule.OnlyWith, func(f string) bool { return t.families[f] })
		tied := slices.ContainsFunc(t.p.spec.Alignment, func(ar v1alpha1.AlignmentRule) bool {
			return slices.Contains(ar.Families, u.rule.Family) && slices.ContainsFunc(ar.Families, func(f string) bool { return t.families[f] })
		})
		if !with || !tied {
			continue
		}
		r := &request{use: u}
		u.req = r
		r.alts = []*alt{{resource: u.resource, rule: u.rule, class: u.rule.DeviceClassName, count: 1}}
		t.requests = append(t.requests, r)
		t.families[u.rule.Family] = true
		t.familyList = nil
	}
}
