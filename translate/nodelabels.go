package translate

import (
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/podfacts"
)

// analyzeLabels turns node-label requirements that the policy knows into
// scenarios (sets of requirements, one per future alternative). It returns
// false when a known label cannot be translated; the pod then stays legacy.
// Its steps: the nodeSelector and the required terms (requiredKnown), the
// preferred terms (preferredKnown), their scenarios (scenariosOf, expand),
// the common part where the alternatives would vary several families
// together (oneFamilyVaries), what was translated, and the requirements on
// values the devices cannot tell apart (keepAmbiguous).
func (t *translation) analyzeLabels() bool {
	t.translated = map[reqLoc]bool{}
	terms, multiTerm, ok := t.requiredKnown()
	if !ok {
		return false
	}
	prefs := t.preferredKnown()
	if len(terms) == 0 {
		terms = [][]labelReq{nil}
	}
	t.scenarios = t.expand(scenariosOf(t.base, prefs, terms))
	if len(prefs) > 0 || multiTerm {
		varies, ok := t.oneFamilyVaries(multiTerm)
		if !ok {
			return false
		}
		if varies {
			prefs, multiTerm = nil, false
		}
	}
	if len(t.scenarios) == 0 {
		t.add(say(ReasonNodeLabelUntranslatable, field.NewPath("spec"), "the pod's node-label requirements contradict each other"))
		return false
	}

	// Mark what was translated, for removal from the pod.
	for _, s := range t.scenarios {
		for _, r := range s.reqs {
			t.translated[r.loc] = true
		}
	}
	for _, r := range t.base {
		t.translated[r.loc] = true
	}
	t.multiTerm, t.prefsUsed = multiTerm, len(prefs) > 0

	// Requirements on values the devices cannot tell apart stay on the pod
	// (ambiguous.go).
	all := slices.Clone(t.base)
	for _, rt := range terms {
		all = append(all, rt...)
	}
	for _, p := range prefs {
		all = append(all, p.reqs...)
	}
	// KServe pins the pod to its accelerator only while it asks for
	// nvidia.com/gpu (podfacts.KServeAcceleratorPin): the pin stays.
	if v, ok := podfacts.KServeAcceleratorPin(t.pod); ok && t.pod.Spec.NodeSelector[podfacts.KServeAcceleratorLabel] == v {
		t.pinned = reqLoc{kind: locSelector, key: podfacts.KServeAcceleratorLabel}
	}
	return t.keepAmbiguous(all)
}

// requiredKnown reads the pod's required node selection: the known
// requirements of the nodeSelector (ANDed equality requirements) and of a
// single required term join t.base; ORed required terms that differ in
// nothing the policy does not map are returned, their known requirements
// each, to become alternatives (multiTerm). ok is false when a known
// requirement cannot be translated, or ORed terms also differ in what the
// policy does not map and the placement rule does not accept losing nodes
// (mixedTerms).
func (t *translation) requiredKnown() (terms [][]labelReq, multiTerm, ok bool) {
	ok = true
	for _, r := range t.requiredLabelReqs() {
		if r.loc.kind != locSelector {
			break // the required affinity terms follow, read below
		}
		known, good := t.known(r)
		ok = ok && good
		if known {
			t.base = append(t.base, r)
		}
	}
	aff := t.pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil, false, ok
	}
	all := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	known := make([][]labelReq, len(all))
	unknown := make([][]corev1.NodeSelectorRequirement, len(all))
	anyKnown := false
	for i, term := range all {
		for j, e := range term.MatchExpressions {
			r := labelReq{key: e.Key, op: e.Operator, values: e.Values, loc: reqLoc{kind: locRequired, term: i, expr: j}}
			k, good := t.known(r)
			ok = ok && good
			if k {
				known[i] = append(known[i], r)
				anyKnown = true
			} else {
				unknown[i] = append(unknown[i], e)
			}
		}
	}
	switch {
	case !anyKnown:
	case len(all) == 1:
		t.base = append(t.base, known[0]...)
	case slices.ContainsFunc(all, func(term corev1.NodeSelectorTerm) bool { return len(term.MatchFields) > 0 }) ||
		slices.ContainsFunc(unknown, func(u []corev1.NodeSelectorRequirement) bool { return !slices.EqualFunc(u, unknown[0], reqEqual) }):
		if !t.mixedTerms(all, known, unknown) {
			return nil, false, false
		}
	default:
		terms, multiTerm = known, true
	}
	return terms, multiTerm, ok
}

// mixedTerms says why ORed required terms that also differ in labels or
// fields the policy does not map cannot become alternatives. A term cannot
// be split: its device labels would have to become a selector for the nodes
// of that term only, which a claim cannot say. Left in node affinity, they
// match no node once the DRA driver replaces GPU labelling (and the other
// terms get any device). Only a policy that accepts losing nodes (placement
// Subset or Off) takes that; otherwise the pod stays as it is (false)
// unless every term translates.
func (t *translation) mixedTerms(terms []corev1.NodeSelectorTerm, known [][]labelReq, unknown [][]corev1.NodeSelectorRequirement) bool {
	if t.losesNodesOK() {
		t.add(say(ReasonAffinityNotTranslatable, pathRequiredTerms, "the ORed terms also differ in labels or fields the policy does not map (%s), so they cannot become alternatives; node affinity stays as it is, and the policy's placement rule %s accepts that the terms on mapped labels (%s) may match no DRA node",
			strings.Join(unknownKeys(terms, unknown), ", "), t.p.spec.Placement, strings.Join(termKeys(known), ", ")))
		return true
	}
	t.add(say(ReasonAffinityNotTranslatable, pathRequiredTerms, "the ORed terms mix labels the policy maps (%s) with labels or fields it does not map (%s) that differ between terms: a claim cannot select devices for the nodes of one term only, and the mapped labels left in node affinity would match no node once the DRA driver replaces GPU labelling; the pod keeps its device-plugin resources",
		strings.Join(termKeys(known), ", "), strings.Join(unknownKeys(terms, unknown), ", ")))
	return false
}

// labelPref is a preferred node-affinity term's known requirements, with
// its weight.
type labelPref struct {
	weight int32
	reqs   []labelReq
}

// preferredKnown lists the preferred terms that have known requirements
// that translate, by weight (highest first; ties keep their order).
func (t *translation) preferredKnown() []labelPref {
	aff := t.pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil {
		return nil
	}
	var prefs []labelPref
	for i, term := range aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		var reqs []labelReq
		for j, e := range term.Preference.MatchExpressions {
			r := labelReq{key: e.Key, op: e.Operator, values: e.Values, loc: reqLoc{kind: locPreferred, term: i, expr: j}}
			if k, good := t.known(r); k && good {
				reqs = append(reqs, r)
			}
		}
		if len(reqs) > 0 {
			prefs = append(prefs, labelPref{weight: term.Weight, reqs: reqs})
		}
	}
	slices.SortStableFunc(prefs, func(a, b labelPref) int { return int(b.weight) - int(a.weight) })
	return prefs
}

// scenariosOf makes one scenario per future alternative: each preference
// with each required term first (optional), then each required term.
func scenariosOf(base []labelReq, prefs []labelPref, terms [][]labelReq) []scenario {
	var scen []scenario
	for _, p := range prefs {
		for _, rt := range terms {
			scen = append(scen, scenario{reqs: concat(base, p.reqs, rt), optional: true})
		}
	}
	for _, rt := range terms {
		scen = append(scen, scenario{reqs: concat(base, rt)})
	}
	return scen
}

// oneFamilyVaries checks which families each scenario changes.
// Alternatives of two families cannot be correlated (each request chooses
// on its own), so then only the common part is used and node affinity
// stays as it is (varies). ok is false when ORed required terms would stay
// in node affinity with their device labels, which no DRA node carries,
// and the placement rule does not accept losing nodes.
func (t *translation) oneFamilyVaries(multiTerm bool) (varies, ok bool) {
	fams := t.varyingFamilies()
	if len(fams) <= 1 {
		return false, true
	}
	if multiTerm && !t.losesNodesOK() {
		t.add(say(ReasonAffinityNotTranslatable, field.NewPath("spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"),
			"the ORed terms change devices of several families (%s) together; requests choose alternatives independently, and the terms left in node affinity would match no node once the DRA drivers replace device labelling; the pod keeps its device-plugin resources", strings.Join(fams, ", ")))
		return true, false
	}
	t.add(say(ReasonAffinityNotTranslatable, field.NewPath("spec", "affinity", "nodeAffinity"),
		"the alternatives of node affinity change devices of several families (%s) together; requests choose alternatives independently, so node affinity stays as it is", strings.Join(fams, ", ")))
	t.scenarios = t.expand([]scenario{{reqs: slices.Clone(t.base)}})
	return true, true
}

// known reports whether a label requirement concerns a device family of the
// pod. good is false when it does but cannot be translated.
func (t *translation) known(r labelReq) (known, good bool) {
	if !t.p.knowsLabel(r.key) {
		return false, true
	}
	// The values of an In list whose rule makes alternatives become one
	// alternative each (expand), so each converts on its own: a list may
	// mix values that move the request to different DeviceClasses (a full
	// GPU and a MIG slice), which one selector could not say.
	parts := []labelReq{r}
	if r.op == corev1.NodeSelectorOpIn && len(r.values) > 1 && t.splits(r) {
		parts = parts[:0]
		for _, v := range r.values {
			one := r
			one.values = []string{v}
			parts = append(parts, one)
		}
	}
	relevant := false
	for _, part := range parts {
		for _, f := range t.sortedFamilies() {
			c := t.convert(part, f)
			if !c.ok {
				continue
			}
			if c.err != nil {
				t.add(say(ReasonNodeLabelUntranslatable, r.fieldPath(), "%v", c.err))
				return true, false
			}
			if !c.eff.notForUs {
				relevant = true
			}
		}
	}
	if !relevant {
		t.add(say(ReasonNodeLabelKept, r.fieldPath(), "%s does not concern the devices the pod asks for; it stays as it is", r))
	}
	return relevant, true
}

// expand splits In lists of rules with Alternatives into one scenario per
// value, in list order, and drops scenarios that contradict themselves.
func (t *translation) expand(in []scenario) []scenario {
	var out []scenario
	for _, s := range in {
		parts := [][]labelReq{make([]labelReq, 0, len(s.reqs))}
		for _, r := range s.reqs {
			if r.op == corev1.NodeSelectorOpIn && len(r.values) > 1 && t.splits(r) {
				var next [][]labelReq
				for _, p := range parts {
					for _, v := range r.values {
						rr := r
						rr.values = []string{v}
						next = append(next, append(slices.Clone(p), rr))
					}
				}
				parts = next
				continue
			}
			for i := range parts {
				parts[i] = append(parts[i], r)
			}
		}
		for _, p := range parts {
			if !contradicts(p) {
				out = append(out, scenario{reqs: p, optional: s.optional})
			}
		}
	}
	return out
}

func (t *translation) splits(r labelReq) bool {
	for f := range t.families {
		if rule, _, ok := t.p.labelRule(r.key, f); ok && rule.Alternatives {
			return true
		}
	}
	return false
}

// contradicts finds two In requirements on one key with no common value.
func contradicts(reqs []labelReq) bool {
	for i, a := range reqs {
		for _, b := range reqs[i+1:] {
			if a.key != b.key || a.op != corev1.NodeSelectorOpIn || b.op != corev1.NodeSelectorOpIn {
				continue
			}
			if !slices.ContainsFunc(a.values, func(v string) bool { return slices.Contains(b.values, v) }) {
				return true
			}
		}
	}
	return false
}

// varyingFamilies lists the families whose devices differ between scenarios.
func (t *translation) varyingFamilies() []string {
	var out []string
	var parts []string
	for _, f := range t.sortedFamilies() {
		var first string
		for i, s := range t.scenarios {
			parts = parts[:0]
			for _, r := range s.reqs {
				if c := t.convert(r, f); c.ok && c.err == nil && !c.eff.notForUs {
					parts = append(parts, c.devices)
				}
			}
			slices.Sort(parts)
			k := strings.Join(parts, ";")
			if i == 0 {
				first = k
			} else if k != first {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// losesNodesOK: the policy's placement rule accepts a translation that
// lands on fewer nodes than the pod as submitted (Subset, Off), such as one
// whose node affinity keeps requirements on labels the DRA nodes lack.
func (t *translation) losesNodesOK() bool {
	r := t.p.spec.Placement
	return r == v1alpha1.PlacementSubset || r == v1alpha1.PlacementOff
}

// termKeys lists the keys of the known requirements of ORed terms, sorted.
func termKeys(known [][]labelReq) []string {
	set := map[string]bool{}
	for _, rs := range known {
		for _, r := range rs {
			set[r.key] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// unknownKeys lists the keys of the requirements the policy does not map
// and the fields of ORed terms, sorted.
func unknownKeys(terms []corev1.NodeSelectorTerm, unknown [][]corev1.NodeSelectorRequirement) []string {
	set := map[string]bool{}
	for i, rs := range unknown {
		for _, r := range rs {
			set[r.Key] = true
		}
		for _, f := range terms[i].MatchFields {
			set["field "+f.Key] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func reqEqual(a, b corev1.NodeSelectorRequirement) bool {
	return a.Key == b.Key && a.Operator == b.Operator && slices.Equal(a.Values, b.Values)
}

func concat(parts ...[]labelReq) []labelReq {
	var out []labelReq
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

type convKey struct {
	family, key string
	op          corev1.NodeSelectorOperator
	values      string
}

// effectOf is a conversion a translation made (translation.effects).
type effectOf struct {
	key convKey
	c   *convResult
}

type convResult struct {
	rule *v1alpha1.NodeLabelRule
	eff  effect
	err  error
	ok   bool // a rule serves the family

	// What explainLabels says expresses the requirement, made once with
	// the conversion: "DeviceClass <class>" when it moves the request to
	// a class, and expressedBy when it has selectors.
	byClass, bySelectors string
	// devices says what the conversion asks of devices, "<class>|<selectors
	// joined by &>", for varyingFamilies to compare scenarios by.
	devices string
}

// convMemo remembers the policy's conversions across translations: a
// conversion reads only the policy's rule and the requirement (key,
// operator, values), never the pod, and its result is only read.
// Results are held by pointer: a translation looks each up several
// times, and a pointer is what its own list (translation.effects) copies.
type convMemo struct {
	mu   sync.Mutex
	seen map[convKey]*convResult
}

const convMemoMaxEntries = 4096

func (m *convMemo) get(k convKey) (*convResult, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.seen[k]
	return c, ok
}

func (m *convMemo) put(k convKey, c *convResult) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil || len(m.seen) >= convMemoMaxEntries {
		m.seen = map[convKey]*convResult{}
	}
	m.seen[k] = c
}

// convert translates a requirement for a family once per translation, and
// once per policy (convMemo). The result is shared: only read it.
func (t *translation) convert(r labelReq, family string) *convResult {
	key := convKey{family: family, key: r.key, op: r.op}
	switch len(r.values) {
	case 0:
	case 1:
		key.values = r.values[0]
	default:
		key.values = strings.Join(r.values, "\x00")
	}
	// A translation converts a few requirements for a few families: a
	// list searched in order costs less than a map made for them.
	for i := range t.effects {
		if e := &t.effects[i]; e.key == key {
			return e.c
		}
	}
	c, ok := t.p.convs.get(key)
	if !ok {
		c = &convResult{}
		if rule, w, ok := t.p.labelRule(r.key, family); ok {
			c.rule, c.ok = rule, true
			c.eff, c.err = t.p.convert(rule, w, r, family)
			if c.eff.class != "" {
				c.byClass = "DeviceClass " + c.eff.class
			}
			if c.err == nil {
				c.devices = c.eff.class + "|" + strings.Join(c.eff.selectors, "&")
			}
			if len(c.eff.selectors) > 0 {
				c.bySelectors = expressedBy(rule, c.eff)
			}
		}
		t.p.convs.put(key, c)
	}
	if t.effects == nil {
		t.effects = make([]effectOf, 0, 16)
	}
	t.effects = append(t.effects, effectOf{key, c})
	return c
}

// keepDroppedPreferences puts back on the pod the preferred terms whose
// alternatives were all left out to stay within the API's limit: nothing
// expresses them in the claim, so the scheduler keeps scoring by them.
func (t *translation) keepDroppedPreferences() {
	used := map[reqLoc]bool{}
	for _, r := range t.requests {
		for _, a := range r.alts {
			for _, l := range a.labels {
				used[l.loc] = true
			}
		}
	}
	for loc := range t.translated {
		if loc.kind == locPreferred && !used[loc] {
			delete(t.translated, loc)
		}
	}
}
