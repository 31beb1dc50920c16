package translate

import (
	"fmt"
	"slices"

	"github.com/claimbridge/claimbridge/translate/gpulabels"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// buildRequests makes one request per use that owns its devices, with one
// alternative per scenario (deduplicated) and the policy's fallbacks.
func (t *translation) buildRequests() bool {
	for _, u := range t.uses {
		if u.req != nil {
			continue // shares another container's request
		}
		r := &request{use: u}
		u.req = r
		for _, s := range t.scenarios {
			a, err := t.alternative(u.resource, u.rule, u.suffix, u.count, s.reqs)
			if err != nil {
				t.add(say(ReasonNodeLabelUntranslatable, u.path, "%v", err))
				return false
			}
			a.optional = s.optional
			r.addAlt(a)
		}
		t.applyFallbacks(r)
		t.requests = append(t.requests, r)
	}
	// Init containers that share resolve to the owner's request.
	for _, u := range t.uses {
		if u.req != nil && u.req.use != u {
			u.req = u.req.use.req
		}
	}
	return true
}

// addAlt appends an alternative unless an equal one is there; a mandatory
// duplicate makes the kept one mandatory.
func (r *request) addAlt(a *alt) {
	for _, o := range r.alts {
		if o.same(a) {
			o.optional = o.optional && a.optional
			return
		}
	}
	r.alts = append(r.alts, a)
}

// alternative translates one resource under a set of label requirements.
func (t *translation) alternative(res corev1.ResourceName, rule *v1alpha1.ResourceRule, suffix string, count int64, reqs []labelReq) (*alt, error) {
	a := &alt{resource: res, rule: rule, class: rule.DeviceClassName, count: count}
	if len(reqs) > 0 {
		// The requirements it was made for and those it shows share one
		// array; selectors get room for the rule's and one per requirement.
		buf := make([]*labelReq, 0, 2*len(reqs))
		a.labels, a.shown = buf[:0:len(reqs)], buf[len(reqs):len(reqs)]
		a.selectors = make([]string, 0, len(rule.Selectors)+len(reqs)+2)
	}
	for _, s := range rule.Selectors {
		expr, err := celgen.Requirement(celgen.SplitAttr(s.Attribute), s.ValueType(), s.Operator, s.Values)
		if err != nil {
			return nil, fmt.Errorf("policy selector on %s: %w", s.Attribute, err)
		}
		a.selectors = append(a.selectors, expr)
	}
	if rule.WholeNodeCount != "" {
		expr, err := t.wholeNode(res, rule)
		if err != nil {
			return nil, err
		}
		a.selectors = append(a.selectors, expr)
	}
	if sharedBySelector(rule) {
		a.selectors = append(a.selectors, allowsMultipleAllocations) // shared.go
	}
	if sel, ok := t.cardSel[rule]; ok {
		a.selectors = append(a.selectors, sel) // cardtype.go
	}
	if suffix != "" && rule.SuffixAttribute != "" {
		attr := celgen.SplitAttr(rule.SuffixAttribute)
		pred, err := celgen.StringIn(attr.Ref(), []string{suffixValue(rule, suffix)})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res, err)
		}
		a.selectors = append(a.selectors, celgen.Guarded(attr.Guard(), pred, false))
	}
	for i := range reqs {
		r := &reqs[i]
		c := t.convert(*r, rule.Family)
		if !c.ok {
			continue
		}
		if c.err != nil {
			return nil, c.err
		}
		eff := c.eff
		if eff.notForUs {
			continue
		}
		a.labels = append(a.labels, r)
		if eff.implied {
			continue
		}
		// Karpenter launches a node for claims from what it knows of an
		// instance type before launch: a selector on anything else matches
		// no node it could launch.
		if len(eff.selectors) > 0 && c.rule != nil && platform.UnknownBeforeLaunch(c.rule.Attribute) && podfacts.RequiresLabel(t.pod, v1alpha1.KarpenterNodePoolLabel) {
			return nil, notTranslatable("%s would become a selector on %s, and the pod selects a Karpenter NodePool (%s): Karpenter launches a node for claims from what it knows of an instance type before launch, "+
				"which %s is not (its DRA support knows productName, architecture, brand, cudaComputeCapability and type, and memory and shares), so the selector would match no node it could launch",
				r.key, c.rule.Attribute, v1alpha1.KarpenterNodePoolLabel, c.rule.Attribute)
		}
		a.shown = append(a.shown, r)
		if eff.class != "" && eff.class != a.class {
			a.class = eff.class
			t.fromLabels = true
		}
		for _, s := range eff.selectors {
			if !slices.Contains(a.selectors, s) {
				a.selectors = append(a.selectors, s)
				t.fromLabels = true
			}
		}
	}
	return a, nil
}

// suffixValue is the value of SuffixAttribute that the suffix of a pattern
// name selects.
func suffixValue(r *v1alpha1.ResourceRule, suffix string) string {
	switch r.SuffixConversion {
	case v1alpha1.SuffixGFDMIGProfile:
		return gpulabels.MIGProfileOfGFD(suffix)
	}
	return suffix
}
