package translate

import (
	"slices"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// align applies the policy's alignment rules (matchAttribute constraints).
func (t *translation) align() {
	// One array for the group of every rule, and the families present
	// in it counted without a set: a rule names a few families.
	group := make([]*request, 0, len(t.requests))
	for i := range t.p.spec.Alignment {
		ar := &t.p.spec.Alignment[i]
		mode := ar.Mode
		if mode == "" {
			mode = v1alpha1.AlignPreferred
		}
		group = group[:0]
		for _, r := range t.requests {
			if slices.Contains(ar.Families, r.use.rule.Family) && (len(ar.Families) == 1 || !r.initExtra()) {
				group = append(group, r)
			}
		}
		present := 0
		for k, f := range ar.Families {
			if !slices.Contains(ar.Families[:k], f) && slices.ContainsFunc(group, func(r *request) bool { return r.use.rule.Family == f }) {
				present++
			}
		}
		if len(ar.Families) == 1 {
			if mode == v1alpha1.AlignRequired {
				t.alignInitDevices(ar)
			}
			for _, r := range group {
				mc := r.maxCount()
				if mc <= 1 {
					continue
				}
				if ar.MaxCount > 0 && mc > ar.MaxCount {
					continue
				}
				if mode == v1alpha1.AlignRequired {
					t.constraints = append(t.constraints, &constraint{rule: ar, whole: []*request{r}})
				} else {
					t.constraints = append(t.constraints, &constraint{rule: ar, variantOf: r, variants: r.addVariants(ar.Name)})
				}
				t.add(sayAt(ReasonAlignmentApplied, r.use.pathString(), "%s: the devices of request %s share %s (%s)", ar.Name, requestLabel(r), ar.Attribute, mode))
			}
			continue
		}
		if present < 2 {
			continue
		}
		if ar.MaxCount > 0 && slices.ContainsFunc(group, func(r *request) bool { return r.maxCount() > ar.MaxCount }) {
			t.add(say(ReasonAlignmentNotApplied, nil, "%s: applies only when each request asks for at most %d device(s)", ar.Name, ar.MaxCount))
			continue
		}
		if mode == v1alpha1.AlignRequired {
			t.constraints = append(t.constraints, &constraint{rule: ar, whole: slices.Clone(group)})
			t.crossAlign = true
			t.add(say(ReasonAlignmentApplied, nil, "%s: all devices of %s share %s (Required)", ar.Name, requestLabels(group), ar.Attribute))
			continue
		}
		// Preferred: the request with most devices gets an aligned variant of
		// each alternative; one constraint per other request ties it to the
		// aligned variants. If the anchor takes an unaligned alternative, each
		// constraint names one single-device request and holds trivially.
		anchor := group[0]
		for _, r := range group[1:] {
			if r.maxCount() > anchor.maxCount() {
				anchor = r
			}
		}
		others := slices.DeleteFunc(slices.Clone(group), func(r *request) bool { return r == anchor })
		if slices.ContainsFunc(others, func(r *request) bool { return r.maxCount() > 1 }) {
			t.add(say(ReasonAlignmentNotApplied, nil, "%s: preferred alignment needs all but one of the requests to ask for a single device", ar.Name))
			continue
		}
		variants := anchor.addVariants(ar.Name)
		for _, o := range others {
			t.constraints = append(t.constraints, &constraint{rule: ar, whole: []*request{o}, variantOf: anchor, variants: variants})
		}
		t.crossAlign = true
		t.add(say(ReasonAlignmentApplied, nil, "%s: %s share %s when possible (Preferred: aligned alternatives first)", ar.Name, requestLabels(group), ar.Attribute))
	}
}

// addVariants inserts, before each plain alternative, a variant that honours
// the named preferred alignment rule; variants of earlier rules stay first.
func (r *request) addVariants(rule string) []*alt {
	var out, added []*alt
	for _, a := range r.alts {
		if a.variantOf == "" {
			v := *a
			v.variantOf, v.optional = rule, true
			out = append(out, &v)
			added = append(added, &v)
		}
		out = append(out, a)
	}
	r.alts = out
	return added
}

// alignInitDevices applies a required single-family rule (several GPUs of
// one product) to the devices of an init container that refers to several
// requests: they are one container's devices, as with one request.
func (t *translation) alignInitDevices(ar *v1alpha1.AlignmentRule) {
	for _, u := range t.uses {
		if len(u.also) == 0 && !slices.ContainsFunc(t.uses, func(x *use) bool { return x.extraOf == u }) {
			continue
		}
		if !slices.Contains(ar.Families, u.rule.Family) {
			continue
		}
		reqs := []*request{u.req}
		for _, o := range u.also {
			reqs = append(reqs, o.req)
		}
		for _, x := range t.uses {
			if x.extraOf == u {
				reqs = append(reqs, x.req)
			}
		}
		if len(reqs) < 2 {
			continue
		}
		t.constraints = append(t.constraints, &constraint{rule: ar, whole: reqs})
		t.add(say(ReasonAlignmentApplied, u.path, "%s: the devices of init container %s, from %d requests, share %s (Required)", ar.Name, u.cname, len(reqs), ar.Attribute))
	}
}
