package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Names claimbridge gives to what it creates or reads.
const (
	// ClaimName is the pod-level claim entry added to translated pods.
	ClaimName = "claimbridge"
	// TemplatePrefix starts the name of every generated template.
	TemplatePrefix = "claimbridge-"
	// AnnotationSkip set to "true" on a pod opts it out.
	AnnotationSkip = "claimbridge.io/skip"
	// AnnotationTemplate on a translated pod names its template.
	AnnotationTemplate = "claimbridge.io/template"
	// LabelManagedBy marks templates claimbridge created.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "claimbridge"

	// mirrorPodAnnotation marks static pods mirrored by the kubelet; they
	// cannot use resource claims.
	mirrorPodAnnotation = "kubernetes.io/config.mirror"

	// deviceClassQuotaSuffix: quota on the devices of a class is
	// "<class>.deviceclass.resource.k8s.io/devices".
	deviceClassQuotaSuffix = ".deviceclass.resource.k8s.io/devices"

	maxAlternatives = resourceapi.FirstAvailableDeviceRequestMaxSize
)

// Input is what [Pod] translates.
type Input struct {
	// Pod to translate; not modified. Required.
	Pod *corev1.Pod
	// Policy to apply. Required.
	Policy *Policy
	// Classes are the cluster's DeviceClasses, used to defer to classes that
	// already serve an extended resource (KEP-5004). Nil when not known.
	Classes []*resourceapi.DeviceClass
	// Quotas are the ResourceQuotas of the pod's namespace. Nil when not known.
	Quotas []*corev1.ResourceQuota
}

// Result is the outcome of translating one pod.
type Result struct {
	Outcome Outcome
	// Pod is the translated pod for OutcomeTranslate, else an unchanged copy.
	Pod *corev1.Pod
	// Template is the ResourceClaimTemplate the pod refers to, only for
	// OutcomeTranslate. Its name is derived from its spec.
	Template *resourceapi.ResourceClaimTemplate
	// Reasons explain every decision, in a stable order.
	Reasons []Reason
}

// Pod translates a pod that asks for devices the legacy way into a pod that
// refers to a ResourceClaimTemplate. It is pure and deterministic. An error
// means the input itself was unusable (no pod, no policy); a pod that cannot
// or should not be translated is a Result with OutcomeKeepLegacy or
// OutcomeSkip and the reasons.
func Pod(in Input) (*Result, error) {
	if in.Pod == nil {
		return nil, errors.New("no pod")
	}
	if in.Policy == nil {
		return nil, errors.New("no policy")
	}
	t := &translation{in: in, p: in.Policy, pod: in.Pod}
	return t.run(), nil
}

// translation holds the state of one call.
type translation struct {
	in      Input
	p       *Policy
	pod     *corev1.Pod
	reasons []Reason

	uses       []*use
	companions []*use
	families   map[string]bool

	// label handling
	base        []labelReq
	scenarios   []scenario
	translated  map[reqLoc]*field.Path // requirements turned into selectors
	multiTerm   bool                   // ORed required terms became alternatives
	prefsUsed   bool                   // preferred terms became alternatives
	affinityOut *corev1.Affinity
	selectorOut map[string]string
	fromLabels  bool // a label changed a request (selector or class)

	requests    []*request
	constraints []*constraint
	crossAlign  bool

	effects map[convKey]convResult // memo of convert, by family and requirement
}

type convKey struct {
	family, key string
	op          corev1.NodeSelectorOperator
	values      string
}

type convResult struct {
	rule *NodeLabelRule
	eff  effect
	err  error
	ok   bool // a rule serves the family
}

// convert translates a requirement for a family once per translation.
func (t *translation) convert(r labelReq, family string) convResult {
	key := convKey{family: family, key: r.key, op: r.op}
	switch len(r.values) {
	case 0:
	case 1:
		key.values = r.values[0]
	default:
		key.values = strings.Join(r.values, "\x00")
	}
	if c, ok := t.effects[key]; ok {
		return c
	}
	var c convResult
	if rule, w, ok := t.p.labelRule(r.key, family); ok {
		c.rule, c.ok = rule, true
		c.eff, c.err = t.p.convert(rule, w, r, family)
	}
	if t.effects == nil {
		t.effects = map[convKey]convResult{}
	}
	t.effects[key] = c
	return c
}

// use is one (container, legacy resource) pair.
type use struct {
	path     *field.Path
	idx      int // index in its container list
	cname    string
	init     bool // a non-restartable init container
	sidecar  bool // a restartable init container
	resource corev1.ResourceName
	rule     *ResourceRule
	suffix   string
	count    int64 // devices; 1 for capacity rules
	capacity int64 // for capacity rules
	req      *request
}

type request struct {
	name string
	use  *use
	alts []*alt
}

func (r *request) maxCount() int64 {
	var m int64
	for _, a := range r.alts {
		m = max(m, a.count)
	}
	return m
}

// alt is one alternative of a request (a subrequest when there are several).
type alt struct {
	resource  corev1.ResourceName
	rule      *ResourceRule
	class     string
	selectors []string
	count     int64
	labels    []labelReq
	optional  bool   // may be dropped to stay within 8 alternatives
	variantOf string // preferred-alignment rule this variant honours
	fallback  string // fallback rule that added it
	name      string
	k         string // key(), once computed
}

// key identifies what the allocator would see; alternatives are complete
// when it is first asked for.
func (a *alt) key() string {
	if a.k == "" {
		a.k = a.computeKey()
	}
	return a.k
}

func (a *alt) computeKey() string {
	return a.class + "\x00" + strings.Join(a.selectors, "\x00") + "\x00" + strconv.FormatInt(a.count, 10) + "\x00" + a.variantOf
}

type scenario struct {
	reqs     []labelReq
	optional bool
}

type constraint struct {
	rule      *AlignmentRule
	whole     []*request // requests named as a whole
	variantOf *request   // request whose variants are named
	variants  []*alt     // of variantOf
}

func (t *translation) run() *Result {
	pod := t.pod
	keep := func(o Outcome) *Result {
		return &Result{Outcome: o, Pod: pod.DeepCopy(), Reasons: t.reasons}
	}
	switch {
	case pod.Annotations[AnnotationSkip] == "true":
		t.add(info(ReasonOptedOut, field.NewPath("metadata", "annotations").Key(AnnotationSkip), "the pod opted out"))
		return keep(OutcomeSkip)
	case pod.Annotations[mirrorPodAnnotation] != "":
		t.add(info(ReasonMirrorPod, field.NewPath("metadata", "annotations").Key(mirrorPodAnnotation), "mirror pods cannot use resource claims"))
		return keep(OutcomeSkip)
	case pod.Annotations[AnnotationTemplate] != "":
		t.add(info(ReasonAlreadyTranslated, field.NewPath("metadata", "annotations").Key(AnnotationTemplate), "the pod was translated already"))
		return keep(OutcomeSkip)
	}
	for i, c := range pod.Spec.ResourceClaims {
		if c.Name == ClaimName {
			t.add(info(ReasonAlreadyTranslated, field.NewPath("spec", "resourceClaims").Index(i), "the pod already has a claim named %q", ClaimName))
			return keep(OutcomeSkip)
		}
	}

	invalid := t.collectUses()
	if invalid {
		return keep(OutcomeKeepLegacy)
	}
	if len(t.uses) == 0 {
		t.add(info(ReasonNoLegacyResources, nil, "no container asks for an extended resource the policy maps"))
		return keep(OutcomeSkip)
	}
	t.families = map[string]bool{}
	for _, u := range t.uses {
		t.families[u.rule.Family] = true
	}
	if !t.analyzeLabels() {
		return keep(OutcomeKeepLegacy)
	}
	t.shareInitRequests()
	if !t.buildRequests() {
		return keep(OutcomeKeepLegacy)
	}
	t.addCompanions()
	t.align()
	if !t.limitAlternatives() {
		return keep(OutcomeKeepLegacy)
	}
	t.keepDroppedPreferences()
	t.rewriteNodeConstraints(t.multiTerm, t.prefsUsed)
	t.nameAll()
	if !t.checkLimits() {
		return keep(OutcomeKeepLegacy)
	}
	if t.defer5004() {
		return keep(OutcomeKeepLegacy)
	}
	if !t.quotaCovered() {
		return keep(OutcomeKeepLegacy)
	}
	tmpl := t.template()
	out := t.mutate(tmpl.Name)
	t.add(info(ReasonTranslated, nil, "%s", t.summary(tmpl.Name)))
	return &Result{Outcome: OutcomeTranslate, Pod: out, Template: tmpl, Reasons: t.reasons}
}

func (t *translation) add(r ...Reason) { t.reasons = append(t.reasons, r...) }

// collectUses finds the legacy device requests of every container. It
// returns true when the pod asks for devices in a way that cannot be
// translated faithfully (the pod then stays as it is).
func (t *translation) collectUses() (invalid bool) {
	visit := func(list []corev1.Container, path *field.Path, isInit bool) {
		for i := range list {
			c := &list[i]
			cp := path.Index(i)
			sidecar := isInit && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
			names := map[corev1.ResourceName]bool{}
			for n := range c.Resources.Limits {
				names[n] = true
			}
			for n := range c.Resources.Requests {
				names[n] = true
			}
			for _, n := range slices.Sorted(maps.Keys(names)) {
				rule, suffix, ok := t.p.resourceRule(string(n))
				if !ok {
					if isExtendedResource(n) {
						t.add(info(ReasonUnmappedResource, cp.Child("resources", "limits").Key(string(n)), "the policy does not map %s; it stays as it is", n))
					}
					continue
				}
				u := &use{path: cp, idx: i, cname: c.Name, init: isInit && !sidecar, sidecar: sidecar, resource: n, rule: rule, suffix: suffix}
				if len(rule.OnlyWith) > 0 {
					if t.companionQuantity(c, u) {
						t.companions = append(t.companions, u)
					}
					continue
				}
				if !t.deviceQuantity(c, u) {
					invalid = true
					continue
				}
				if u.count > 0 {
					t.uses = append(t.uses, u)
				}
			}
		}
	}
	visit(t.pod.Spec.InitContainers, field.NewPath("spec", "initContainers"), true)
	visit(t.pod.Spec.Containers, field.NewPath("spec", "containers"), false)
	return invalid
}

// isExtendedResource follows the API's rule: a domain-prefixed name outside
// kubernetes.io that is not a quota "requests." name.
func isExtendedResource(n corev1.ResourceName) bool {
	s := string(n)
	return strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/") && !strings.HasPrefix(s, "requests.")
}

// deviceQuantity reads a device count the way the API validates extended
// resources: a whole number, and a request (if given) equal to the limit.
func (t *translation) deviceQuantity(c *corev1.Container, u *use) bool {
	lim, hasLim := c.Resources.Limits[u.resource]
	req, hasReq := c.Resources.Requests[u.resource]
	lp := u.path.Child("resources", "limits").Key(string(u.resource))
	switch {
	case hasReq && !hasLim:
		t.add(warning(ReasonRequestLimitMismatch, u.path.Child("resources", "requests").Key(string(u.resource)), "%s has a request but no limit; extended resources need a limit equal to the request", u.resource))
		return false
	case hasReq && req.Cmp(lim) != 0:
		t.add(warning(ReasonRequestLimitMismatch, lp, "%s request %s differs from limit %s; extended resources cannot be overcommitted", u.resource, req.String(), lim.String()))
		return false
	}
	n, ok := wholeNumber(lim)
	switch {
	case !ok:
		t.add(warning(ReasonInvalidQuantity, lp, "%s %s is not a whole number of devices", u.resource, lim.String()))
		return false
	case n < 0:
		t.add(warning(ReasonInvalidQuantity, lp, "%s %s is negative", u.resource, lim.String()))
		return false
	case n > resourceapi.AllocationResultsMaxSize:
		t.add(warning(ReasonTooManyDevices, lp, "%s %d is more than the %d devices one claim can hold", u.resource, n, resourceapi.AllocationResultsMaxSize))
		return false
	}
	u.count = n
	if u.rule.Capacity != "" {
		u.capacity, u.count = n, 1
	}
	return true
}

// companionQuantity reads a companion resource (CPUs): it is only added for
// whole numbers with request equal to limit; otherwise it is left out.
func (t *translation) companionQuantity(c *corev1.Container, u *use) bool {
	lim, hasLim := c.Resources.Limits[u.resource]
	req, hasReq := c.Resources.Requests[u.resource]
	p := u.path.Child("resources", "limits").Key(string(u.resource))
	if u.init {
		return false
	}
	if !hasLim || !hasReq || req.Cmp(lim) != 0 {
		t.add(info(ReasonCompanionNotAdded, p, "%s is added to the claim only with a request equal to its limit", u.resource))
		return false
	}
	n, ok := wholeNumber(lim)
	if !ok || n <= 0 {
		t.add(info(ReasonCompanionNotAdded, p, "%s %s is not a whole positive number", u.resource, lim.String()))
		return false
	}
	u.count, u.capacity = 1, n
	return true
}

func wholeNumber(q resource.Quantity) (int64, bool) {
	if q.MilliValue()%1000 != 0 {
		return 0, false
	}
	v, ok := q.AsInt64()
	if !ok {
		// Too large for int64 or fractional: not a device count.
		return 0, false
	}
	return v, true
}

// shareInitRequests follows the device plugin's semantics for init
// containers: a non-restartable init container runs to completion before the
// app containers start, so its devices may be reused by them. It shares the
// request of an app container (or of an earlier init container) for the same
// resource that asks for at least as many devices, the smallest such one.
// Restartable init containers (sidecars) run alongside the app containers and
// keep their own devices. An init container with nothing to share holds its
// devices for the pod's lifetime, which is more than a device plugin would.
func (t *translation) shareInitRequests() {
	var owners []*use
	for _, u := range t.uses {
		if !u.init {
			owners = append(owners, u)
		}
	}
	for _, u := range t.uses {
		if !u.init {
			continue
		}
		var best *use
		for _, o := range owners {
			// A sidecar declared before this init container is already
			// running beside it: its devices are busy.
			if o == u || o.resource != u.resource || o.count < u.count || (o.sidecar && o.idx < u.idx) {
				continue
			}
			if best == nil || o.count < best.count {
				best = o
			}
		}
		if best != nil {
			u.req = &request{use: best} // resolved to best's request later
			t.add(info(ReasonInitContainerSharesDevices, u.path, "init container %s uses the devices of %s for %s (it finishes before they start)", u.cname, best.cname, u.resource))
			continue
		}
		owners = append(owners, u)
		t.add(info(ReasonInitContainerHoldsDevices, u.path, "init container %s gets its own %s devices, held until the pod ends (a device plugin would hand them on)", u.cname, u.resource))
	}
}

// analyzeLabels turns node-label requirements that the policy knows into
// scenarios (sets of requirements, one per future alternative). It returns
// false when a known label cannot be translated; the pod then stays legacy.
func (t *translation) analyzeLabels() bool {
	spec := &t.pod.Spec
	t.translated = map[reqLoc]*field.Path{}
	ok := true

	// nodeSelector: ANDed equality requirements.
	for _, k := range slices.Sorted(maps.Keys(spec.NodeSelector)) {
		r := labelReq{key: k, op: corev1.NodeSelectorOpIn, values: []string{spec.NodeSelector[k]}, path: field.NewPath("spec", "nodeSelector").Key(k),
			loc: reqLoc{kind: locSelector, key: k}}
		known, good := t.known(r)
		ok = ok && good
		if known {
			t.base = append(t.base, r)
		}
	}

	var reqTerms [][]labelReq
	var aff *corev1.NodeAffinity
	if spec.Affinity != nil {
		aff = spec.Affinity.NodeAffinity
	}
	multiTerm := false
	if aff != nil && aff.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms := aff.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		tp := field.NewPath("spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
		known := make([][]labelReq, len(terms))
		unknown := make([][]corev1.NodeSelectorRequirement, len(terms))
		anyKnown := false
		for i, term := range terms {
			for j, e := range term.MatchExpressions {
				r := labelReq{key: e.Key, op: e.Operator, values: e.Values, path: tp.Index(i).Child("matchExpressions").Index(j),
					loc: reqLoc{kind: locRequired, term: i, expr: j}}
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
		case len(terms) == 1:
			t.base = append(t.base, known[0]...)
		default:
			same := true
			for i := range terms {
				if !slices.EqualFunc(unknown[i], unknown[0], reqEqual) || len(terms[i].MatchFields) > 0 {
					same = false
				}
			}
			if !same {
				// The known requirements stay in the pod, untranslated.
				t.add(warning(ReasonAffinityNotTranslatable, tp, "the ORed terms also differ in labels or fields the policy does not map, so they cannot become alternatives; node affinity stays as it is"))
			} else {
				reqTerms = known
				multiTerm = true
			}
		}
	}
	if !ok {
		return false
	}

	// Preferred terms, by weight (highest first; ties keep their order).
	type pref struct {
		weight int32
		reqs   []labelReq
	}
	var prefs []pref
	if aff != nil {
		pp := field.NewPath("spec", "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
		for i, term := range aff.PreferredDuringSchedulingIgnoredDuringExecution {
			var reqs []labelReq
			for j, e := range term.Preference.MatchExpressions {
				r := labelReq{key: e.Key, op: e.Operator, values: e.Values, path: pp.Index(i).Child("preference", "matchExpressions").Index(j),
					loc: reqLoc{kind: locPreferred, term: i, expr: j}}
				if k, good := t.known(r); k && good {
					reqs = append(reqs, r)
				}
			}
			if len(reqs) > 0 {
				prefs = append(prefs, pref{weight: term.Weight, reqs: reqs})
			}
		}
		slices.SortStableFunc(prefs, func(a, b pref) int { return int(b.weight) - int(a.weight) })
	}

	if len(reqTerms) == 0 {
		reqTerms = [][]labelReq{nil}
	}
	var scen []scenario
	for _, p := range prefs {
		for _, rt := range reqTerms {
			scen = append(scen, scenario{reqs: concat(t.base, p.reqs, rt), optional: true})
		}
	}
	for _, rt := range reqTerms {
		scen = append(scen, scenario{reqs: concat(t.base, rt)})
	}
	t.scenarios = t.expand(scen)

	// Translate the requirements: check which families each scenario
	// changes. Alternatives of two families cannot be correlated (each
	// request chooses on its own), so then only the common part is used.
	if len(prefs) > 0 || multiTerm {
		if fams := t.varyingFamilies(); len(fams) > 1 {
			t.add(warning(ReasonAffinityNotTranslatable, field.NewPath("spec", "affinity", "nodeAffinity"),
				"the alternatives of node affinity change devices of several families (%s) together; requests choose alternatives independently, so node affinity stays as it is", strings.Join(fams, ", ")))
			t.scenarios = []scenario{{reqs: slices.Clone(t.base)}}
			t.scenarios = t.expand(t.scenarios)
			prefs, multiTerm = nil, false
		}
	}
	if len(t.scenarios) == 0 {
		t.add(warning(ReasonNodeLabelUntranslatable, field.NewPath("spec"), "the pod's node-label requirements contradict each other"))
		return false
	}

	// Mark what was translated, for removal from the pod.
	for _, s := range t.scenarios {
		for _, r := range s.reqs {
			t.translated[r.loc] = r.path
		}
	}
	for _, r := range t.base {
		t.translated[r.loc] = r.path
	}
	t.multiTerm, t.prefsUsed = multiTerm, len(prefs) > 0
	return true
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

// known reports whether a label requirement concerns a device family of the
// pod. good is false when it does but cannot be translated.
func (t *translation) known(r labelReq) (known, good bool) {
	if !t.p.knowsLabel(r.key) {
		return false, true
	}
	relevant := false
	for _, f := range slices.Sorted(maps.Keys(t.families)) {
		c := t.convert(r, f)
		if !c.ok {
			continue
		}
		if c.err != nil {
			t.add(warning(ReasonNodeLabelUntranslatable, r.path, "%v", c.err))
			return true, false
		}
		if !c.eff.notForUs {
			relevant = true
		}
	}
	if !relevant {
		t.add(info(ReasonNodeLabelKept, r.path, "%s does not concern the devices the pod asks for; it stays as it is", r))
	}
	return relevant, true
}

// expand splits In lists of rules with Alternatives into one scenario per
// value, in list order, and drops scenarios that contradict themselves.
func (t *translation) expand(in []scenario) []scenario {
	var out []scenario
	for _, s := range in {
		parts := [][]labelReq{nil}
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
	for _, f := range slices.Sorted(maps.Keys(t.families)) {
		var first string
		for i, s := range t.scenarios {
			var parts []string
			for _, r := range s.reqs {
				if c := t.convert(r, f); c.ok && c.err == nil && !c.eff.notForUs {
					parts = append(parts, c.eff.class+"|"+strings.Join(c.eff.selectors, "&"))
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

// rewriteNodeConstraints removes translated requirements from a copy of the
// pod's nodeSelector and node affinity (unless the policy keeps them).
func (t *translation) rewriteNodeConstraints(multiTerm, prefsUsed bool) {
	spec := &t.pod.Spec
	if spec.NodeSelector != nil {
		t.selectorOut = map[string]string{}
		for k, v := range spec.NodeSelector {
			if t.translated[reqLoc{kind: locSelector, key: k}] == nil {
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
				if t.translated[reqLoc{kind: locRequired, term: i, expr: j}] == nil {
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
				if t.translated[reqLoc{kind: locPreferred, term: i, expr: j}] == nil {
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
				t.add(warning(ReasonNodeLabelUntranslatable, u.path, "%v", err))
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
		if o.key() == a.key() {
			o.optional = o.optional && a.optional
			return
		}
	}
	r.alts = append(r.alts, a)
}

// alternative translates one resource under a set of label requirements.
func (t *translation) alternative(res corev1.ResourceName, rule *ResourceRule, suffix string, count int64, reqs []labelReq) (*alt, error) {
	a := &alt{resource: res, rule: rule, class: rule.DeviceClassName, count: count}
	for _, s := range rule.Selectors {
		expr, err := requirementExpr(splitAttr(s.Attribute), s.typeOrDefault(), s.Operator, s.Values)
		if err != nil {
			return nil, fmt.Errorf("policy selector on %s: %w", s.Attribute, err)
		}
		a.selectors = append(a.selectors, expr)
	}
	if suffix != "" && rule.SuffixAttribute != "" {
		attr := splitAttr(rule.SuffixAttribute)
		pred, err := stringIn(attr.ref(), []string{suffix})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", res, err)
		}
		a.selectors = append(a.selectors, guarded(attr.guard(), pred, false))
	}
	for _, r := range reqs {
		c := t.convert(r, rule.Family)
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
						reqs = append(reqs, l)
					}
				}
				for _, k := range slices.Sorted(maps.Keys(fa.NodeSelector)) {
					reqs = append(reqs, labelReq{key: k, op: corev1.NodeSelectorOpIn, values: []string{fa.NodeSelector[k]}, path: field.NewPath("fallbacks").Key(fb.Name)})
				}
				mul := max(fa.CountMultiplier, 1)
				na, err := t.alternative(res, rule, suffix, a.count*mul, reqs)
				if err != nil {
					t.add(warning(ReasonFallbackApplied, r.use.path, "fallback %s: alternative %s left out: %v", fb.Name, res, err))
					continue
				}
				na.optional, na.fallback = true, fb.Name
				t.fromLabels = true
				if !slices.ContainsFunc(out, func(o *alt) bool { return o.key() == na.key() }) {
					out = append(out, na)
				}
			}
			t.add(info(ReasonFallbackApplied, r.use.path, "fallback %s adds %d alternative(s) after %s", fb.Name, len(fb.Alternatives), describeAlt(a)))
		}
	}
	// Keep first occurrences only.
	var dedup []*alt
	for _, a := range out {
		if !slices.ContainsFunc(dedup, func(o *alt) bool { return o.key() == a.key() }) {
			dedup = append(dedup, a)
		}
	}
	r.alts = dedup
}

func fallbackMatches(fb *FallbackRule, a *alt) bool {
	if string(a.resource) != fb.Match.Resource {
		return false
	}
	for k, v := range fb.Match.NodeSelector {
		if !slices.ContainsFunc(a.labels, func(l labelReq) bool {
			return l.key == k && l.op == corev1.NodeSelectorOpIn && slices.Equal(l.values, []string{v})
		}) {
			return false
		}
	}
	return true
}

func describeAlt(a *alt) string {
	var b strings.Builder
	writeAlt(&b, a)
	return b.String()
}

func writeAlt(b *strings.Builder, a *alt) {
	b.WriteString(strconv.FormatInt(a.count, 10))
	b.WriteString("× ")
	b.WriteString(a.class)
	for i, l := range a.labels {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(l.String())
	}
	if len(a.labels) > 0 {
		b.WriteByte(')')
	}
	if a.variantOf != "" {
		b.WriteString(" aligned by ")
		b.WriteString(a.variantOf)
	}
}

// addCompanions adds companion requests (CPUs) when the pod gets a device of
// a family they accompany and an alignment rule ties them together.
func (t *translation) addCompanions() {
	for _, u := range t.companions {
		with := slices.ContainsFunc(u.rule.OnlyWith, func(f string) bool { return t.families[f] })
		tied := slices.ContainsFunc(t.p.spec.Alignment, func(ar AlignmentRule) bool {
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
	}
}

// align applies the policy's alignment rules (matchAttribute constraints).
func (t *translation) align() {
	for i := range t.p.spec.Alignment {
		ar := &t.p.spec.Alignment[i]
		mode := ar.Mode
		if mode == "" {
			mode = AlignPreferred
		}
		var group []*request
		present := map[string]bool{}
		for _, r := range t.requests {
			if slices.Contains(ar.Families, r.use.rule.Family) {
				group = append(group, r)
				present[r.use.rule.Family] = true
			}
		}
		if len(ar.Families) == 1 {
			for _, r := range group {
				mc := r.maxCount()
				if mc <= 1 {
					continue
				}
				if ar.MaxCount > 0 && mc > ar.MaxCount {
					continue
				}
				if mode == AlignRequired {
					t.constraints = append(t.constraints, &constraint{rule: ar, whole: []*request{r}})
				} else {
					t.constraints = append(t.constraints, &constraint{rule: ar, variantOf: r, variants: r.addVariants(ar.Name)})
				}
				t.add(info(ReasonAlignmentApplied, r.use.path, "%s: the devices of request %s share %s (%s)", ar.Name, requestLabel(r), ar.Attribute, mode))
			}
			continue
		}
		if len(present) < 2 {
			continue
		}
		if ar.MaxCount > 0 && slices.ContainsFunc(group, func(r *request) bool { return r.maxCount() > ar.MaxCount }) {
			t.add(info(ReasonAlignmentNotApplied, nil, "%s: applies only when each request asks for at most %d device(s)", ar.Name, ar.MaxCount))
			continue
		}
		if mode == AlignRequired {
			t.constraints = append(t.constraints, &constraint{rule: ar, whole: group})
			t.crossAlign = true
			t.add(info(ReasonAlignmentApplied, nil, "%s: all devices of %s share %s (Required)", ar.Name, requestLabels(group), ar.Attribute))
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
			t.add(info(ReasonAlignmentNotApplied, nil, "%s: preferred alignment needs all but one of the requests to ask for a single device", ar.Name))
			continue
		}
		variants := anchor.addVariants(ar.Name)
		for _, o := range others {
			t.constraints = append(t.constraints, &constraint{rule: ar, whole: []*request{o}, variantOf: anchor, variants: variants})
		}
		t.crossAlign = true
		t.add(info(ReasonAlignmentApplied, nil, "%s: %s share %s when possible (Preferred: aligned alternatives first)", ar.Name, requestLabels(group), ar.Attribute))
	}
}

// addVariants inserts, before each plain alternative, a variant that honours
// the named preferred alignment rule; variants of earlier rules stay first.
func (r *request) addVariants(rule string) []*alt {
	var out, added []*alt
	for _, a := range r.alts {
		if a.variantOf == "" {
			v := *a
			v.variantOf, v.optional, v.k = rule, true, ""
			out = append(out, &v)
			added = append(added, &v)
		}
		out = append(out, a)
	}
	r.alts = out
	return added
}

func requestLabel(r *request) string {
	return r.use.cname + "/" + string(r.use.resource)
}

func requestLabels(rs []*request) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, requestLabel(r))
	}
	return strings.Join(parts, " + ")
}

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
			t.add(warning(ReasonTooManyAlternatives, r.use.path, "%s needs %d alternatives, more than the %d a request may have", requestLabel(r), mandatory, maxAlternatives))
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
			t.add(warning(ReasonAlternativesDropped, r.use.path, "%s: %d lower-priority alternative(s) left out to stay within %d; preferred terms they came from stay on the pod", requestLabel(r), dropped, maxAlternatives))
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

// nameAll gives requests and alternatives deterministic DNS-label names.
func (t *translation) nameAll() {
	used := map[string]bool{}
	for _, r := range t.requests {
		short := r.use.rule.RequestName
		if short == "" {
			_, after, _ := strings.Cut(strings.TrimSuffix(r.use.rule.Name, "*"), "/")
			short = dnsLabel(after, 20)
			if short == "" {
				short = "dev"
			}
		}
		r.name = uniqueName(dnsLabel(r.use.cname+"-"+short, 63), used)
		if len(r.alts) < 2 {
			continue
		}
		subUsed := map[string]bool{}
		for _, a := range r.alts {
			a.name = uniqueName(altSlug(r, a), subUsed)
		}
	}
}

func uniqueName(base string, used map[string]bool) string {
	name := base
	for i := 2; used[name]; i++ {
		suffix := fmt.Sprintf("-%d", i)
		name = strings.TrimRight(base[:min(len(base), 63-len(suffix))], "-") + suffix
	}
	used[name] = true
	return name
}

// altSlug names an alternative by what distinguishes it: the resource when
// it differs, the label values it came from, a count multiplier and the
// alignment it honours.
func altSlug(r *request, a *alt) string {
	var parts []string
	if a.resource != r.use.resource {
		parts = append(parts, a.rule.RequestName)
		if _, s, ok := strings.Cut(string(a.resource), "/"); ok && a.rule.RequestName == "" {
			parts = append(parts, s)
		}
	}
	for _, l := range a.labels {
		common := !slices.ContainsFunc(r.alts, func(o *alt) bool {
			return !slices.ContainsFunc(o.labels, l.equal)
		})
		if l.op == corev1.NodeSelectorOpIn && !common {
			parts = append(parts, l.values...)
		}
	}
	if a.count != r.use.count {
		parts = append(parts, fmt.Sprintf("x%d", a.count))
	}
	s := dnsLabel(strings.Join(parts, "-"), 40)
	if s == "" {
		s = "any"
	}
	if a.variantOf != "" {
		s = dnsLabel(s+"-"+a.variantOf, 63)
	}
	return s
}

// dnsLabel lowercases s, replaces what a DNS label cannot hold by "-", and
// cuts it to n characters.
func dnsLabel(s string, n int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := b.String()
	if len(out) > n {
		out = out[:n]
	}
	return strings.Trim(out, "-")
}

// checkLimits enforces the API's limits on the claim and compiles every
// selector as kube-apiserver would.
func (t *translation) checkLimits() bool {
	if len(t.requests) > resourceapi.DeviceRequestsMaxSize {
		t.add(warning(ReasonTooManyRequests, nil, "the pod needs %d device requests, more than the %d a claim may have", len(t.requests), resourceapi.DeviceRequestsMaxSize))
		return false
	}
	if len(t.constraints) > resourceapi.DeviceConstraintsMaxSize {
		t.add(warning(ReasonTooManyRequests, nil, "the pod needs %d constraints, more than the %d a claim may have", len(t.constraints), resourceapi.DeviceConstraintsMaxSize))
		return false
	}
	var total int64
	for _, r := range t.requests {
		total += r.maxCount()
	}
	if total > resourceapi.AllocationResultsMaxSize {
		t.add(warning(ReasonTooManyDevices, nil, "the pod asks for up to %d devices in all, more than the %d one claim can hold", total, resourceapi.AllocationResultsMaxSize))
		return false
	}
	for _, r := range t.requests {
		for _, a := range r.alts {
			if len(a.selectors) > resourceapi.DeviceSelectorsMaxSize {
				t.add(warning(ReasonInvalidSelector, r.use.path, "%s needs %d selectors, more than %d", requestLabel(r), len(a.selectors), resourceapi.DeviceSelectorsMaxSize))
				return false
			}
			for _, s := range a.selectors {
				if err := t.p.cel.check(s); err != nil {
					t.add(warning(ReasonInvalidSelector, r.use.path, "%v", err))
					return false
				}
			}
		}
	}
	return true
}

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
		if len(r.alts) > 1 || len(r.use.rule.Config) > 0 {
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

// claimSpec builds the claim spec: requests in pod order, all defaulted
// (ExactCount, explicit count) so the stored template equals what was hashed.
func (t *translation) claimSpec() resourceapi.ResourceClaimSpec {
	var spec resourceapi.ResourceClaimSpec
	for _, r := range t.requests {
		dr := resourceapi.DeviceRequest{Name: r.name}
		if len(r.alts) == 1 {
			a := r.alts[0]
			dr.Exactly = &resourceapi.ExactDeviceRequest{
				DeviceClassName: a.class,
				Selectors:       celSelectors(a.selectors),
				AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
				Count:           a.count,
				Capacity:        capacityOf(r.use),
			}
		} else {
			for _, a := range r.alts {
				dr.FirstAvailable = append(dr.FirstAvailable, resourceapi.DeviceSubRequest{
					Name:            a.name,
					DeviceClassName: a.class,
					Selectors:       celSelectors(a.selectors),
					AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
					Count:           a.count,
					Capacity:        capacityOf(r.use),
				})
			}
		}
		spec.Devices.Requests = append(spec.Devices.Requests, dr)
		for _, c := range r.use.rule.Config {
			spec.Devices.Config = append(spec.Devices.Config, resourceapi.DeviceClaimConfiguration{
				Requests: []string{r.name},
				DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
					Driver:     c.Driver,
					Parameters: *c.Parameters.DeepCopy(),
				}},
			})
		}
	}
	for _, c := range t.constraints {
		var names []string
		for _, r := range c.whole {
			names = append(names, r.name)
		}
		if c.variantOf != nil {
			for _, v := range c.variants {
				names = append(names, c.variantOf.name+"/"+v.name)
			}
		}
		attr := resourceapi.FullyQualifiedName(c.rule.Attribute)
		spec.Devices.Constraints = append(spec.Devices.Constraints, resourceapi.DeviceConstraint{Requests: names, MatchAttribute: &attr})
	}
	return spec
}

func celSelectors(exprs []string) []resourceapi.DeviceSelector {
	var out []resourceapi.DeviceSelector
	for _, e := range exprs {
		out = append(out, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	return out
}

func capacityOf(u *use) *resourceapi.CapacityRequirements {
	if u.rule.Capacity == "" {
		return nil
	}
	return &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
		resourceapi.QualifiedName(u.rule.Capacity): *resource.NewQuantity(u.capacity, resource.DecimalSI),
	}}
}

// TemplateName is the content-addressed name of a template with this spec:
// a hash of its protobuf encoding, which Kubernetes generates with sorted
// map keys, so equal specs always give equal names.
func TemplateName(spec *resourceapi.ResourceClaimSpec) string {
	data, err := spec.Marshal()
	if err != nil {
		panic(err) // plain API types always marshal
	}
	sum := sha256.Sum256(data)
	return TemplatePrefix + hex.EncodeToString(sum[:])[:12]
}

func (t *translation) template() *resourceapi.ResourceClaimTemplate {
	spec := t.claimSpec()
	name := TemplateName(&spec)
	labels := map[string]string{LabelManagedBy: ManagedByValue}
	return &resourceapi.ResourceClaimTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.pod.Namespace, Labels: labels},
		Spec: resourceapi.ResourceClaimTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
			Spec:       spec,
		},
	}
}

// mutate returns the translated copy of the pod.
func (t *translation) mutate(tmplName string) *corev1.Pod {
	out := t.pod.DeepCopy()
	type slot struct {
		init bool
		idx  int
	}
	byContainer := map[slot][]*use{}
	for _, u := range append(slices.Clone(t.uses), t.companions...) {
		if u.req == nil || u.req.name == "" {
			continue
		}
		k := slot{init: u.init || u.sidecar, idx: u.idx}
		byContainer[k] = append(byContainer[k], u)
	}
	fix := func(list []corev1.Container, init bool) {
		for i := range list {
			c := &list[i]
			for _, u := range byContainer[slot{init: init, idx: i}] {
				if !u.rule.KeepInPod {
					delete(c.Resources.Limits, u.resource)
					delete(c.Resources.Requests, u.resource)
				}
				ref := corev1.ResourceClaim{Name: ClaimName, Request: u.req.name}
				if !slices.Contains(c.Resources.Claims, ref) {
					c.Resources.Claims = append(c.Resources.Claims, ref)
				}
			}
			if len(c.Resources.Limits) == 0 {
				c.Resources.Limits = nil
			}
			if len(c.Resources.Requests) == 0 {
				c.Resources.Requests = nil
			}
		}
	}
	fix(out.Spec.InitContainers, true)
	fix(out.Spec.Containers, false)
	out.Spec.ResourceClaims = append(out.Spec.ResourceClaims, corev1.PodResourceClaim{Name: ClaimName, ResourceClaimTemplateName: &tmplName})
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[AnnotationTemplate] = tmplName
	if !t.p.spec.KeepTranslatedNodeLabels {
		out.Spec.NodeSelector = t.selectorOut
		out.Spec.Affinity = t.affinityOut
		paths := make([]string, 0, len(t.translated))
		for _, p := range t.translated {
			paths = append(paths, p.String())
		}
		slices.Sort(paths)
		for _, p := range paths {
			t.add(info(ReasonNodeLabelTranslated, nil, "%s became a device selector and was removed from the pod", p))
		}
	}
	return out
}

func (t *translation) summary(tmplName string) string {
	var b strings.Builder
	b.WriteString("ResourceClaimTemplate ")
	b.WriteString(tmplName)
	b.WriteString(": ")
	for i, r := range t.requests {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(requestLabel(r))
		b.WriteString(" → request ")
		b.WriteString(r.name)
		b.WriteString(" [")
		for j, a := range r.alts {
			if j > 0 {
				b.WriteString(" | ")
			}
			writeAlt(&b, a)
		}
		b.WriteByte(']')
	}
	return b.String()
}
