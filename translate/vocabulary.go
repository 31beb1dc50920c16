package translate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/claimbridge/claimbridge/translate/gpulabels"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// The label vocabulary, both directions.
//
// Which labels claimbridge knows is data: the nodeLabels rules of the
// profiles (profiles/*.yaml) and of the operator's policy, each naming a
// label key, the device families it concerns, a [Conversion] and the device
// attribute or capacity it corresponds to. How a label and a device
// attribute correspond is the conversion, one entry of the table below
// with three small functions:
//
//   - forward turns a pod's requirement on the label into an effect on a
//     device request of a family: CEL selectors, a move to another
//     DeviceClass (MIG), "implied by the claim", or "not expressible"
//     (the translator, stage analyzeLabels);
//   - backward derives the value the label would have on a node from the
//     devices the node publishes (the placement proof's legacy view of a
//     DRA node);
//   - canonical puts a label value into the form backward derives, so that
//     a pod's requirement and a derived label compare the way the devices
//     would (versions without leading zeros). Canonical values stay valid
//     label values;
//   - device reads a node's label value as what it says of each device of
//     the rule's families: the value (or the possible values) of the
//     attribute or capacity a DRA driver would publish for the same
//     hardware (the forecast of a node's devices before its driver runs,
//     [Policy.ForecastDevices], used by the forecast package).
//
// Adding a label of an existing kind is one rule in a profile and one
// golden case; adding a kind of label is one entry here, its functions in
// conversions.go, conversions_gfd.go or conversions_amd.go, and a golden
// case.

// conversion is one entry of the vocabulary.
type conversion struct {
	forward   func(p *Policy, rule *v1alpha1.NodeLabelRule, wildcard string, req labelReq, family string) (effect, error)
	backward  func(p *Policy, rule *v1alpha1.NodeLabelRule, wildcard string, n legacyNode) (string, bool)
	canonical func(rule *v1alpha1.NodeLabelRule, value string) string
	device    func(p *Policy, rule *v1alpha1.NodeLabelRule, wildcard string, value string) (deviceFact, error)
}

// vocabulary maps every Conversion to its functions.
var vocabulary = map[v1alpha1.Conversion]conversion{
	v1alpha1.ConvString:       {forward: forwardScalar(v1alpha1.AttrString), backward: backwardAttribute, canonical: asIs, device: deviceScalar(v1alpha1.AttrString)},
	v1alpha1.ConvInt:          {forward: forwardScalar(v1alpha1.AttrInt), backward: backwardAttribute, canonical: canonicalInt, device: deviceScalar(v1alpha1.AttrInt)},
	v1alpha1.ConvBool:         {forward: forwardScalar(v1alpha1.AttrBool), backward: backwardAttribute, canonical: asIs, device: deviceScalar(v1alpha1.AttrBool)},
	v1alpha1.ConvMap:          {forward: forwardMap, backward: backwardMap, canonical: canonicalMap, device: deviceMap},
	v1alpha1.ConvVersion:      {forward: forwardVersion, backward: backwardAttribute, canonical: canonicalVersion, device: deviceVersion},
	v1alpha1.ConvVersionMajor: {forward: forwardVersionPart("major"), backward: backwardAttribute, canonical: canonicalInt, device: deviceVersionPart(partMajor)},
	v1alpha1.ConvVersionMinor: {forward: forwardVersionPart("minor"), backward: backwardAttribute, canonical: canonicalInt, device: deviceVersionPart(partMinor)},
	v1alpha1.ConvVersionPatch: {forward: forwardVersionPart("patch"), backward: backwardAttribute, canonical: canonicalInt, device: deviceVersionPart(partPatch)},
	v1alpha1.ConvGFDProduct:   {forward: forwardGFDProduct, backward: backwardGFDProduct, canonical: asIs, device: deviceGFDProduct},
	v1alpha1.ConvMiB:          {forward: forwardMiB, backward: backwardMiB, canonical: canonicalInt, device: deviceMiB},
	v1alpha1.ConvGFDFamily:    {forward: forwardGFDFamily, backward: backwardAttribute, canonical: asIs, device: deviceGFDFamily},
	v1alpha1.ConvMIGProfile:   {forward: forwardMIGProfile, backward: backwardMIGProfile, canonical: asIs, device: deviceMIGProfile},
	v1alpha1.ConvMIGStrategy:  {forward: forwardMIGStrategy, backward: backwardMIGStrategy, canonical: asIs, device: deviceNothing},
	v1alpha1.ConvPCIPresent:   {forward: forwardPCIPresent, backward: backwardPCIPresent, canonical: asIs, device: deviceNothing},
	v1alpha1.ConvPresent:      {forward: forwardPresent, backward: backwardPresent, canonical: asIs, device: deviceNothing},
	v1alpha1.ConvImplied:      {forward: forwardPresent, backward: backwardPresent, canonical: asIs, device: deviceNothing},
	v1alpha1.ConvCount:        {forward: forwardCount, backward: backwardCount, canonical: canonicalInt, device: deviceNothing},
	v1alpha1.ConvReplicas:     {forward: forwardReplicas, backward: backwardReplicas, canonical: canonicalReplicas, device: deviceNothing},
	v1alpha1.ConvSharingStrategy: {forward: forwardSharingStrategy, backward: backwardSharingStrategy, canonical: asIs,
		device: deviceNothing},
	v1alpha1.ConvHexID:      {forward: forwardHexID, backward: backwardHexID, canonical: canonicalHexID, device: deviceHexID},
	v1alpha1.ConvRoundedGiB: {forward: forwardRoundedGiB, backward: backwardRoundedGiB, canonical: canonicalRoundedGiB, device: deviceRoundedGiB},
}

// convert turns a label requirement into an effect on a request of family.
func (p *Policy) convert(rule *v1alpha1.NodeLabelRule, wildcard string, req labelReq, family string) (effect, error) {
	c, ok := vocabulary[rule.Conversion]
	if !ok {
		return effect{}, notTranslatable("conversion %q is not implemented", rule.Conversion)
	}
	return c.forward(p, rule, wildcard, req, family)
}

// LegacyLabel derives the value that the label key would have on a node
// with these labels and devices, reading the policy's rule for the key
// backwards.
// ok is false when no rule derives the key or the node would not carry the
// label. Values come in the canonical form of [Policy.CanonicalLabelValue].
func (p *Policy) LegacyLabel(key string, nodeLabels map[string]string, devices FamilyDevices) (string, bool) {
	return p.LegacyLabelOfShares(key, nodeLabels, devices, nil)
}

// LegacyLabelOfShares is [Policy.LegacyLabel] for a pod that asks for the
// families in plainShares under their plain resource name, which a shared
// GPU is offered under only without renaming (see [Policy.LegacyShares]):
// GFD then marks the product of a shared GPU with -SHARED.
func (p *Policy) LegacyLabelOfShares(key string, nodeLabels map[string]string, devices FamilyDevices, plainShares map[string]bool) (string, bool) {
	rule, wildcard, ok := p.labelRuleAny(key)
	if !ok {
		return "", false
	}
	if k := rule.OnlyOnNodesWithLabel; k != "" {
		if _, ok := nodeLabels[k]; !ok {
			return "", false
		}
	}
	c, ok := vocabulary[rule.Conversion]
	if !ok {
		return "", false
	}
	return c.backward(p, rule, wildcard, legacyNode{labels: nodeLabels, devices: devices, plainShares: plainShares})
}

// legacyNode is what the backward direction of a conversion reads of a
// node: its labels (for the MIG strategy, see [Policy.LegacyMIGStrategies])
// and its devices by family.
type legacyNode struct {
	labels  map[string]string
	devices FamilyDevices
	// plainShares are the families the pod asks for under their plain
	// resource name ([Policy.LegacyShares]).
	plainShares map[string]bool
}

// CanonicalLabelValue puts a label value into the form LegacyLabel derives,
// so that a pod's requirement and a node's label compare the way the
// devices would: versions without leading zeros ("550.107.02" is
// "550.107.2"). Values of a Map rule stand for themselves, also where
// several map to one attribute value (ambiguous.go). Values of keys the
// policy does not know, and values a rule cannot read, stay as they are.
func (p *Policy) CanonicalLabelValue(key, value string) string {
	rule, _, ok := p.labelRuleAny(key)
	if !ok {
		return value
	}
	c, ok := vocabulary[rule.Conversion]
	if !ok {
		return value
	}
	return c.canonical(rule, value)
}

// KnowsLabel reports whether the policy maps the node-label key for some
// device family.
func (p *Policy) KnowsLabel(key string) bool { return p.knowsLabel(key) }

// labelRuleAny is the rule for key of the first family (in name order) that
// has one.
func (p *Policy) labelRuleAny(key string) (*v1alpha1.NodeLabelRule, string, bool) {
	for _, f := range p.Families() {
		if r, w, ok := p.labelRule(key, f); ok {
			return r, w, true
		}
	}
	return nil, "", false
}

// The device direction: what a node's labels say of its devices.

// DeviceForecast is what a node's labels say of each device of one family,
// read with the policy's label rules in the device direction of the
// vocabulary: the attributes and capacities a DRA driver would publish for
// the same hardware, where the labels tell them. Names are qualified
// ("gpu.nvidia.com/productName", "gpu.nvidia.com/memory").
type DeviceForecast struct {
	Attributes map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	Capacity   map[resourceapi.QualifiedName]resource.Quantity
	// MIGProfile is the MIG profile the labels give the family's devices, in
	// the driver's spelling: GFD's single strategy ("-MIG-1g.10gb" product
	// suffix), GKE's gke-gpu-partition-size. Empty when none does.
	MIGProfile string
	// Notes say which label values could not be read, which labels
	// contradict each other (the attribute is then left out) and which
	// values are written in a form the labels cannot tell exactly; sorted.
	Notes []string
}

// ForecastDevices reads the node's labels that the policy maps for family
// as what they say of each of the family's devices. A value the labels do
// not tell is left out, never guessed: a label that cannot be read, labels
// that disagree (or allow several values) leave the attribute out with a
// note. Version components (major, minor, revision labels) combine into one
// version when every component the policy has a rule for is labelled (a
// component without a rule is 0: CUDA 12.4 is 12.4.0); a full version label
// and its components must agree. The architecture comes from the family
// label and from the compute capability (GFDFamily rules tie the two), and
// both must agree. Labels of rules with onlyOnNodesWithLabel count only on
// nodes with that label, as in the legacy view. The stages: readLabels,
// joinVersions, resolveAttributes, resolveCapacities, then the MIG profile.
func (p *Policy) ForecastDevices(family string, nodeLabels map[string]string) DeviceForecast {
	out := DeviceForecast{
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{},
		Capacity:   map[resourceapi.QualifiedName]resource.Quantity{},
	}
	lc := p.readLabels(family, nodeLabels)
	p.joinVersions(family, lc)
	p.resolveAttributes(family, lc, &out)
	lc.resolveCapacities(&out)
	if len(lc.profiles) > 0 {
		if c, note, ok := resolveClaims("MIG profile", lc.profiles); ok {
			out.MIGProfile = *c.value.StringValue
		} else if note != "" {
			lc.notes[note] = true
		}
	}
	out.Notes = slices.Sorted(maps.Keys(lc.notes))
	return out
}

// labelClaims are what a node's labels claim of each device of one family,
// as ForecastDevices gathers them: by attribute, by component of a version
// attribute, by capacity, and the MIG profile; notes say what could not be
// read or was left out.
type labelClaims struct {
	claims     map[string][]attrClaim
	parts      map[string]map[versionPart][]attrClaim
	capacities map[string][]attrClaim
	profiles   []attrClaim
	notes      map[string]bool
}

// readLabels reads each label of the node (in key order) that a rule of the
// family maps, with the device direction of its conversion, as a claim.
func (p *Policy) readLabels(family string, nodeLabels map[string]string) *labelClaims {
	lc := &labelClaims{claims: map[string][]attrClaim{}, parts: map[string]map[versionPart][]attrClaim{},
		capacities: map[string][]attrClaim{}, notes: map[string]bool{}}
	for _, k := range slices.Sorted(maps.Keys(nodeLabels)) {
		rule, w, ok := p.labelRule(k, family)
		if !ok {
			continue
		}
		if only := rule.OnlyOnNodesWithLabel; only != "" {
			if _, ok := nodeLabels[only]; !ok {
				continue
			}
		}
		c, ok := vocabulary[rule.Conversion]
		if !ok || c.device == nil {
			continue
		}
		f, err := c.device(p, rule, w, nodeLabels[k])
		if err != nil {
			lc.notes[fmt.Sprintf("%s=%s: %v; left out", k, nodeLabels[k], err)] = true
			continue
		}
		key := k + "=" + nodeLabels[k]
		switch {
		case f.capacity != "":
			lc.capacities[f.capacity] = append(lc.capacities[f.capacity], attrClaim{key: key, quantity: f.quantity, note: f.note})
		case f.attribute != "" && f.part != partNone:
			if lc.parts[f.attribute] == nil {
				lc.parts[f.attribute] = map[versionPart][]attrClaim{}
			}
			lc.parts[f.attribute][f.part] = append(lc.parts[f.attribute][f.part], attrClaim{key: key, part: f.partValue})
		case f.attribute != "":
			lc.claims[f.attribute] = append(lc.claims[f.attribute], attrClaim{key: key, cands: f.candidates})
		}
		if f.migProfile != "" {
			lc.profiles = append(lc.profiles, attrClaim{key: key, cands: []candidate{{value: stringAttr(f.migProfile)}}})
		}
	}
	return lc
}

// joinVersions makes the version components of each attribute one version
// claim when they are complete; without a full version label, an
// incomplete one is unknown.
func (p *Policy) joinVersions(family string, lc *labelClaims) {
	for _, attr := range slices.Sorted(maps.Keys(lc.parts)) {
		v, missing, conflict := p.joinVersion(family, attr, lc.parts[attr])
		switch {
		case conflict != "":
			lc.notes[conflict] = true
		case missing != "" && len(lc.claims[attr]) == 0:
			lc.notes[missing] = true
		case missing == "":
			lc.claims[attr] = append(lc.claims[attr], v)
		}
	}
}

// resolveAttributes settles each attribute the labels claim (resolveClaims),
// the architecture last: it also follows from the compute capability
// (GFDFamily rules tie the two).
func (p *Policy) resolveAttributes(family string, lc *labelClaims, out *DeviceForecast) {
	derived := map[string]string{} // architecture attribute → compute-capability attribute
	for _, r := range p.labels {
		if r.Conversion == v1alpha1.ConvGFDFamily && slices.Contains(r.Families, family) {
			derived[architectureOf(r)] = r.Attribute
		}
	}
	resolve := func(attr string) {
		c, note, ok := resolveClaims(attr, lc.claims[attr])
		if note != "" {
			lc.notes[note] = true
		}
		if ok {
			out.Attributes[resourceapi.QualifiedName(attr)] = c.value
			if c.loose && c.note != "" {
				lc.notes[c.note] = true
			}
		}
	}
	for _, attr := range slices.Sorted(maps.Keys(lc.claims)) {
		if _, ok := derived[attr]; !ok {
			resolve(attr)
		}
	}
	for _, arch := range slices.Sorted(maps.Keys(derived)) {
		if cc, ok := out.Attributes[resourceapi.QualifiedName(derived[arch])]; ok && cc.VersionValue != nil {
			if major, minor, _, err := parseSemver(*cc.VersionValue); err == nil {
				if name := gpulabels.ArchitectureOfCC(major, minor); name != "" {
					lc.claims[arch] = append(lc.claims[arch], attrClaim{key: "compute capability " + *cc.VersionValue, cands: []candidate{{value: stringAttr(name)}}})
				}
			}
		}
		if len(lc.claims[arch]) > 0 {
			resolve(arch)
		}
	}
}

// resolveCapacities keeps each capacity the labels agree on.
func (lc *labelClaims) resolveCapacities(out *DeviceForecast) {
	for _, name := range slices.Sorted(maps.Keys(lc.capacities)) {
		cs := lc.capacities[name]
		if slices.ContainsFunc(cs[1:], func(c attrClaim) bool { return c.quantity.Cmp(cs[0].quantity) != 0 }) {
			lc.notes[disagreement(name, cs)] = true
			continue
		}
		out.Capacity[resourceapi.QualifiedName(name)] = cs[0].quantity
		for _, c := range cs {
			if c.note != "" {
				lc.notes[c.note] = true
			}
		}
	}
}

// versionPart names a component of a version attribute.
type versionPart int

const (
	partNone versionPart = iota
	partMajor
	partMinor
	partPatch
)

// deviceFact is what one label value says of every device of a family. A
// fact with neither attribute, capacity nor MIG profile says nothing of a
// device (counts, presence, the MIG strategy).
type deviceFact struct {
	// attribute or capacity concerned, "<domain>/<name>".
	attribute, capacity string
	// candidates are the values the attribute may have: one when the label
	// tells it, several when it narrows it down (a GFD family under the
	// Legacy scheme, a Map value with several names).
	candidates []candidate
	quantity   resource.Quantity
	// part and partValue: the label is one component of a version.
	part      versionPart
	partValue int64
	// migProfile the label gives the devices, in the driver's spelling.
	migProfile string
	// note says how a value the label does not tell exactly is written.
	note string
}

// candidate is one possible attribute value. A loose string is known only
// up to GPU Feature Discovery's sanitising (spaces written as dashes): it
// agrees with every value of the same sanitised form, and an exact value
// it agrees with wins; note says how a loose value is written when it is.
type candidate struct {
	value resourceapi.DeviceAttribute
	loose bool
	note  string
}

// attrClaim is what one label (key=value) claims about one attribute.
type attrClaim struct {
	key      string
	cands    []candidate
	quantity resource.Quantity
	part     int64
	note     string
}

// resolveClaims intersects the claims of the labels about one attribute:
// one value left is the attribute's; none (the labels disagree) or several
// (they do not tell) leave it out with a note.
func resolveClaims(attr string, claims []attrClaim) (candidate, string, bool) {
	if len(claims) == 0 {
		return candidate{}, "", false
	}
	cur := claims[0].cands
	for _, c := range claims[1:] {
		cur = intersect(cur, c.cands)
	}
	switch {
	case len(cur) == 1:
		return cur[0], "", true
	case len(cur) == 0:
		return candidate{}, disagreement(attr, claims), false
	}
	var vals []string
	for _, c := range cur {
		vals = append(vals, attributeText(c.value))
	}
	var keys []string
	for _, c := range claims {
		keys = append(keys, c.key)
	}
	return candidate{}, fmt.Sprintf("%s: %s allow %s; left out", shortName(attr), strings.Join(keys, ", "), strings.Join(vals, " or ")), false
}

func disagreement(attr string, claims []attrClaim) string {
	var says []string
	for _, c := range claims {
		var vals []string
		for _, v := range c.cands {
			vals = append(vals, attributeText(v.value))
		}
		if len(c.cands) == 0 {
			vals = append(vals, c.quantity.String())
		}
		says = append(says, c.key+" says "+strings.Join(vals, " or "))
	}
	return fmt.Sprintf("%s: the labels disagree (%s); left out", shortName(attr), strings.Join(says, "; "))
}

func intersect(a, b []candidate) []candidate {
	var out []candidate
	for _, x := range a {
		for _, y := range b {
			if !agree(x, y) {
				continue
			}
			m := x
			if x.loose && !y.loose {
				m = y
			}
			if !slices.ContainsFunc(out, func(o candidate) bool { return sameAttribute(o.value, m.value) }) {
				out = append(out, m)
			}
		}
	}
	return out
}

func agree(x, y candidate) bool {
	if (x.loose || y.loose) && x.value.StringValue != nil && y.value.StringValue != nil {
		return gpulabels.Sanitise(*x.value.StringValue) == gpulabels.Sanitise(*y.value.StringValue)
	}
	return sameAttribute(x.value, y.value)
}

func sameAttribute(a, b resourceapi.DeviceAttribute) bool {
	eq := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return eq(a.StringValue, b.StringValue) && eq(a.VersionValue, b.VersionValue) &&
		(a.IntValue == nil) == (b.IntValue == nil) && (a.IntValue == nil || *a.IntValue == *b.IntValue) &&
		(a.BoolValue == nil) == (b.BoolValue == nil) && (a.BoolValue == nil || *a.BoolValue == *b.BoolValue)
}

func attributeText(a resourceapi.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return strconv.Quote(*a.StringValue)
	case a.VersionValue != nil:
		return *a.VersionValue
	case a.IntValue != nil:
		return strconv.FormatInt(*a.IntValue, 10)
	case a.BoolValue != nil:
		return strconv.FormatBool(*a.BoolValue)
	}
	return "nothing"
}

// shortName is the attribute's name without its domain, as notes show it.
func shortName(qualified string) string {
	if _, id, ok := strings.Cut(qualified, "/"); ok {
		return id
	}
	return qualified
}

func stringAttr(s string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{StringValue: &s}
}

// joinVersion joins the labelled components of a version attribute into
// one claim. Every component the policy has a rule for (for the family)
// must be labelled, else missing says which is not; the others are 0.
// conflict says which labels of one component disagree.
func (p *Policy) joinVersion(family, attr string, got map[versionPart][]attrClaim) (claim attrClaim, missing, conflict string) {
	ruled := map[versionPart]bool{}
	for _, r := range p.labels {
		if r.Attribute != attr || !slices.Contains(r.Families, family) {
			continue
		}
		switch r.Conversion {
		case v1alpha1.ConvVersionMajor:
			ruled[partMajor] = true
		case v1alpha1.ConvVersionMinor:
			ruled[partMinor] = true
		case v1alpha1.ConvVersionPatch:
			ruled[partPatch] = true
		}
	}
	var nums [3]int64
	var keys []string
	for i, part := range []versionPart{partMajor, partMinor, partPatch} {
		cs := got[part]
		if len(cs) == 0 {
			if ruled[part] && missing == "" {
				missing = fmt.Sprintf("%s: no label gives its %s component; left out", shortName(attr), [...]string{"major", "minor", "patch"}[i])
			}
			continue
		}
		for _, c := range cs[1:] {
			if c.part != cs[0].part {
				var says []string
				for _, c := range cs {
					says = append(says, c.key)
				}
				return attrClaim{}, "", fmt.Sprintf("%s: the labels disagree (%s); left out", shortName(attr), strings.Join(says, "; "))
			}
		}
		nums[i] = cs[0].part
		for _, c := range cs {
			keys = append(keys, c.key)
		}
	}
	if missing != "" {
		return attrClaim{}, missing, ""
	}
	v := fmt.Sprintf("%d.%d.%d", nums[0], nums[1], nums[2])
	return attrClaim{key: strings.Join(keys, ", "), cands: []candidate{{value: resourceapi.DeviceAttribute{VersionValue: &v}}}}, "", ""
}
