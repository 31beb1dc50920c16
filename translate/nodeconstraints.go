package translate

import (
	corev1 "k8s.io/api/core/v1"
)

// rewriteNodeConstraints removes translated requirements from a copy of the
// pod's nodeSelector and node affinity (unless the policy keeps them), but
// those on values the devices cannot tell apart (ambiguous.go).
func (t *translation) rewriteNodeConstraints(multiTerm, prefsUsed bool) {
	spec := &t.pod.Spec
	removed := func(loc reqLoc) bool { return t.translated[loc] && t.ambiguous[loc] == nil && loc != t.pinned }
	if spec.NodeSelector != nil {
		t.selectorOut = map[string]string{}
		for k, v := range spec.NodeSelector {
			if !removed(reqLoc{kind: locSelector, key: k}) {
				t.selectorOut[k] = v
			}
		}
		if len(t.selectorOut) == 0 {
			t.selectorOut = nil
		}
	}
	if spec.Affinity == nil {
		return
	}
	aff := spec.Affinity.DeepCopy()
	t.affinityOut = aff
	na := aff.NodeAffinity
	if na == nil {
		return
	}
	if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		var terms []corev1.NodeSelectorTerm
		for i, term := range req.NodeSelectorTerms {
			var kept []corev1.NodeSelectorRequirement
			for j, e := range term.MatchExpressions {
				if !removed(reqLoc{kind: locRequired, term: i, expr: j}) {
					kept = append(kept, e)
				}
			}
			term.MatchExpressions = kept
			if multiTerm && i > 0 {
				// The terms became alternatives; their common rest stays once.
				continue
			}
			if len(term.MatchExpressions) > 0 || len(term.MatchFields) > 0 {
				terms = append(terms, term)
			}
		}
		if len(terms) == 0 {
			// An empty term matches no node: drop the requirement instead.
			na.RequiredDuringSchedulingIgnoredDuringExecution = nil
		} else {
			req.NodeSelectorTerms = terms
		}
	}
	if prefsUsed {
		var prefs []corev1.PreferredSchedulingTerm
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			var kept []corev1.NodeSelectorRequirement
			for j, e := range term.Preference.MatchExpressions {
				if !removed(reqLoc{kind: locPreferred, term: i, expr: j}) {
					kept = append(kept, e)
				}
			}
			term.Preference.MatchExpressions = kept
			if len(kept) > 0 || len(term.Preference.MatchFields) > 0 {
				prefs = append(prefs, term)
			}
		}
		na.PreferredDuringSchedulingIgnoredDuringExecution = prefs
	}
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil && len(na.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		aff.NodeAffinity = nil
	}
	if aff.NodeAffinity == nil && aff.PodAffinity == nil && aff.PodAntiAffinity == nil {
		t.affinityOut = nil
	}
}
