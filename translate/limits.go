package translate

import (
	"slices"

	resourceapi "k8s.io/api/resource/v1"
)

// limitAlternatives keeps each request within the API's 8 alternatives,
// dropping optional ones (preferences, fallbacks, aligned variants) from
// the end first.
func (t *translation) limitAlternatives() bool {
	for _, r := range t.requests {
		mandatory := 0
		for _, a := range r.alts {
			if !a.optional {
				mandatory++
			}
		}
		if mandatory > maxAlternatives {
			t.add(say(ReasonTooManyAlternatives, r.use.path, "%s needs %d alternatives, more than the %d a request may have", requestLabel(r), mandatory, maxAlternatives))
			return false
		}
		dropped := 0
		for len(r.alts) > maxAlternatives {
			for i := len(r.alts) - 1; i >= 0; i-- {
				if r.alts[i].optional {
					r.alts = slices.Delete(r.alts, i, i+1)
					dropped++
					break
				}
			}
		}
		if dropped > 0 {
			t.add(say(ReasonAlternativesDropped, r.use.path, "%s: %d lower-priority alternative(s) left out to stay within %d; preferred terms they came from stay on the pod", requestLabel(r), dropped, maxAlternatives))
		}
	}
	for _, c := range t.constraints {
		if c.variantOf != nil {
			c.variants = slices.DeleteFunc(c.variants, func(v *alt) bool { return !slices.Contains(c.variantOf.alts, v) })
		}
	}
	t.constraints = slices.DeleteFunc(t.constraints, func(c *constraint) bool { return c.variantOf != nil && len(c.variants) == 0 })
	return true
}

// checkLimits enforces the API's limits on the claim and compiles every
// selector as kube-apiserver would.
func (t *translation) checkLimits() bool {
	if len(t.requests) > resourceapi.DeviceRequestsMaxSize {
		t.add(say(ReasonTooManyRequests, nil, "the pod needs %d device requests, more than the %d a claim may have", len(t.requests), resourceapi.DeviceRequestsMaxSize))
		return false
	}
	if len(t.constraints) > resourceapi.DeviceConstraintsMaxSize {
		t.add(say(ReasonTooManyRequests, nil, "the pod needs %d constraints, more than the %d a claim may have", len(t.constraints), resourceapi.DeviceConstraintsMaxSize))
		return false
	}
	var total int64
	for _, r := range t.requests {
		total += r.maxCount()
	}
	if total > resourceapi.AllocationResultsMaxSize {
		t.add(say(ReasonTooManyDevices, nil, "the pod asks for up to %d devices in all, more than the %d one claim can hold", total, resourceapi.AllocationResultsMaxSize))
		return false
	}
	for _, r := range t.requests {
		for _, a := range r.alts {
			if len(a.selectors) > resourceapi.DeviceSelectorsMaxSize {
				t.add(say(ReasonInvalidSelector, r.use.path, "%s needs %d selectors, more than %d", requestLabel(r), len(a.selectors), resourceapi.DeviceSelectorsMaxSize))
				return false
			}
			for _, s := range a.selectors {
				if err := t.p.cel.Check(s); err != nil {
					t.add(say(ReasonInvalidSelector, r.use.path, "%v", err))
					return false
				}
			}
		}
	}
	return true
}
