package translate

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
//     would (versions without leading zeros; Map values that map to the
//     same attribute values as one of them). Canonical values stay valid
//     label values.
//
// Adding a label of an existing kind is one rule in a profile and one
// golden case; adding a kind of label is one entry here, its functions in
// conversions.go or conversions_gfd.go, and a golden case.

// conversion is one entry of the vocabulary.
type conversion struct {
	// reads is what the rule must name: "attribute", "capacity" or "".
	reads     string
	forward   func(p *Policy, rule *NodeLabelRule, wildcard string, req labelReq, family string) (effect, error)
	backward  func(p *Policy, rule *NodeLabelRule, wildcard string, devices FamilyDevices) (string, bool)
	canonical func(rule *NodeLabelRule, value string) string
}

// vocabulary maps every Conversion to its functions.
var vocabulary = map[Conversion]conversion{
	ConvString:       {reads: "attribute", forward: forwardScalar(AttrString), backward: backwardAttribute, canonical: asIs},
	ConvInt:          {reads: "attribute", forward: forwardScalar(AttrInt), backward: backwardAttribute, canonical: canonicalInt},
	ConvBool:         {reads: "attribute", forward: forwardScalar(AttrBool), backward: backwardAttribute, canonical: asIs},
	ConvMap:          {reads: "attribute", forward: forwardMap, backward: backwardMap, canonical: canonicalMap},
	ConvVersion:      {reads: "attribute", forward: forwardVersion, backward: backwardAttribute, canonical: canonicalVersion},
	ConvVersionMajor: {reads: "attribute", forward: forwardVersionPart("major"), backward: backwardAttribute, canonical: canonicalInt},
	ConvVersionMinor: {reads: "attribute", forward: forwardVersionPart("minor"), backward: backwardAttribute, canonical: canonicalInt},
	ConvVersionPatch: {reads: "attribute", forward: forwardVersionPart("patch"), backward: backwardAttribute, canonical: canonicalInt},
	ConvGFDProduct:   {reads: "attribute", forward: forwardGFDProduct, backward: backwardGFDProduct, canonical: asIs},
	ConvMiB:          {reads: "capacity", forward: forwardMiB, backward: backwardMiB, canonical: canonicalInt},
	ConvGFDFamily:    {reads: "attribute", forward: forwardGFDFamily, backward: backwardAttribute, canonical: asIs},
	ConvMIGProfile:   {forward: forwardMIGProfile, backward: backwardMIGProfile, canonical: asIs},
	ConvMIGStrategy:  {forward: forwardMIGStrategy, backward: backwardMIGStrategy, canonical: asIs},
	ConvPCIPresent:   {forward: forwardPCIPresent, backward: backwardPCIPresent, canonical: asIs},
	ConvPresent:      {forward: forwardPresent, backward: backwardPresent, canonical: asIs},
	ConvImplied:      {forward: forwardPresent, backward: backwardPresent, canonical: asIs},
	ConvCount:        {forward: forwardCount, backward: backwardCount, canonical: canonicalInt},
}

// convert turns a label requirement into an effect on a request of family.
func (p *Policy) convert(rule *NodeLabelRule, wildcard string, req labelReq, family string) (effect, error) {
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
	return c.backward(p, rule, wildcard, devices)
}

// CanonicalLabelValue puts a label value into the form LegacyLabel derives,
// so that a pod's requirement and a node's label compare the way the
// devices would: versions without leading zeros ("550.107.02" is
// "550.107.2"); values of a Map rule that map to the same attribute values
// as one (several GKE names map to one product). Values of keys the policy
// does not know, and values a rule cannot read, stay as they are.
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
func (p *Policy) labelRuleAny(key string) (*NodeLabelRule, string, bool) {
	for _, f := range p.Families() {
		if r, w, ok := p.labelRule(key, f); ok {
			return r, w, true
		}
	}
	return nil, "", false
}
