package translate

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// applyFallbacks inserts the policy's fallback alternatives after each
// alternative they match.
func (t *translation) applyFallbacks(r *request) {
	var out []*alt
	for _, a := range r.alts {
		out = append(out, a)
		if a.fallback != "" {
			continue
		}
		for i := range t.p.spec.Fallbacks {
			fb := &t.p.spec.Fallbacks[i]
			if !fallbackMatches(fb, a) {
				continue
			}
			for _, fa := range fb.Alternatives {
				res := a.resource
				if fa.Resource != "" {
					res = corev1.ResourceName(fa.Resource)
				}
				rule, suffix, ok := t.p.resourceRule(string(res))
				if !ok {
					continue
				}
				var reqs []labelReq
				for _, l := range a.labels {
					if _, replaced := fb.Match.NodeSelector[l.key]; !replaced {
						reqs = append(reqs, *l)
					}
				}
				for _, k := range slices.Sorted(maps.Keys(fa.NodeSelector)) {
					reqs = append(reqs, labelReq{key: k, op: corev1.NodeSelectorOpIn, values: []string{fa.NodeSelector[k]}, path: field.NewPath("fallbacks").Key(fb.Name)})
				}
				mul := max(fa.CountMultiplier, 1)
				na, err := t.alternative(res, rule, suffix, a.count*mul, reqs)
				if err != nil {
					t.add(say(ReasonAlternativesDropped, r.use.path, "fallback %s: alternative %s left out: %v", fb.Name, res, err))
					continue
				}
				na.optional, na.fallback = true, fb.Name
				t.fromLabels = true
				if !slices.ContainsFunc(out, func(o *alt) bool { return o.same(na) }) {
					out = append(out, na)
				}
			}
			t.add(say(ReasonFallbackApplied, r.use.path, "fallback %s adds %d alternative(s) after %s", fb.Name, len(fb.Alternatives), describeAlt(a)))
		}
	}
	// Keep first occurrences only.
	var dedup []*alt
	for _, a := range out {
		if !slices.ContainsFunc(dedup, func(o *alt) bool { return o.same(a) }) {
			dedup = append(dedup, a)
		}
	}
	r.alts = dedup
}

func fallbackMatches(fb *v1alpha1.FallbackRule, a *alt) bool {
	if string(a.resource) != fb.Match.Resource {
		return false
	}
	for k, v := range fb.Match.NodeSelector {
		if !slices.ContainsFunc(a.labels, func(l *labelReq) bool {
			return l.key == k && l.op == corev1.NodeSelectorOpIn && slices.Equal(l.values, []string{v})
		}) {
			return false
		}
	}
	return true
}
