package translate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/claimbridge/claimbridge/translate/gpulabels"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// The generic conversions of the vocabulary (vocabulary.go): scalar
// attributes, mapped values, versions, presence and counts. GPU Feature
// Discovery's own forms (product names, MiB, families, MIG) are in
// conversions_gfd.go.

// forwardScalar compares the value with a string, int or bool attribute.
func forwardScalar(t v1alpha1.AttributeType) func(*Policy, *v1alpha1.NodeLabelRule, string, labelReq, string) (effect, error) {
	return func(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
		if (req.op == corev1.NodeSelectorOpGt || req.op == corev1.NodeSelectorOpLt) && t != v1alpha1.AttrInt {
			return effect{}, notTranslatable("%s compares a %s attribute with %s", req.key, t, req.op)
		}
		expr, err := celgen.Requirement(celgen.SplitAttr(rule.Attribute), t, string(req.op), req.values)
		if err != nil {
			return effect{}, notTranslatable("%s: %v", req.key, err)
		}
		return effect{selectors: []string{expr}}, nil
	}
}

// forwardMap maps label values to attribute values through the rule's table.
func forwardMap(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
	a := celgen.SplitAttr(rule.Attribute)
	switch req.op {
	case corev1.NodeSelectorOpExists:
		return effect{selectors: []string{a.Guard()}}, nil
	case corev1.NodeSelectorOpDoesNotExist:
		return effect{selectors: []string{"!" + a.Guard()}}, nil
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
	default:
		return effect{}, notTranslatable("%s: operator %s on a mapped value", req.key, req.op)
	}
	var mapped []string
	for _, v := range req.values {
		m, ok := rule.Values[v]
		if !ok {
			return effect{}, notTranslatable("%s: the policy has no mapping for %q", req.key, v)
		}
		if req.op == corev1.NodeSelectorOpNotIn && len(mapTwins(rule, v)) > 0 {
			// Excluding its devices would exclude its twins' too: the
			// requirement stays on the pod and says it (ambiguous.go).
			continue
		}
		for _, x := range m {
			if !slices.Contains(mapped, x) {
				mapped = append(mapped, x)
			}
		}
	}
	if len(mapped) == 0 {
		return effect{implied: true}, nil
	}
	pred, err := celgen.StringIn(a.Ref(), mapped)
	if err != nil {
		return effect{}, notTranslatable("%s: %v", req.key, err)
	}
	return effect{selectors: []string{celgen.Guarded(a.Guard(), pred, req.op == corev1.NodeSelectorOpNotIn)}}, nil
}

// forwardVersion compares a full dotted version (leading zeros dropped).
func forwardVersion(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
	if req.op == corev1.NodeSelectorOpGt || req.op == corev1.NodeSelectorOpLt {
		// Gt/Lt on labels compare integers; a full version is not one.
		return effect{}, notTranslatable("%s %s compares integers, not versions", req.key, req.op)
	}
	expr, err := celgen.Requirement(celgen.SplitAttr(rule.Attribute), v1alpha1.AttrVersion, string(req.op), req.values)
	if err != nil {
		return effect{}, notTranslatable("%s: %v", req.key, err)
	}
	return effect{selectors: []string{expr}}, nil
}

// forwardVersionPart compares one component (major, minor, patch) of a
// version attribute.
func forwardVersionPart(fn string) func(*Policy, *v1alpha1.NodeLabelRule, string, labelReq, string) (effect, error) {
	return func(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
		return convertVersionPart(rule, req, fn)
	}
}

// presence translates Exists and DoesNotExist into a presence test.
func presence(req labelReq, guard string) (effect, bool) {
	switch req.op {
	case corev1.NodeSelectorOpExists:
		return effect{selectors: []string{guard}}, true
	case corev1.NodeSelectorOpDoesNotExist:
		return effect{selectors: []string{"!" + guard}}, true
	}
	return effect{}, false
}

func convertVersionPart(rule *v1alpha1.NodeLabelRule, req labelReq, fn string) (effect, error) {
	a := celgen.SplitAttr(rule.Attribute)
	if eff, ok := presence(req, a.Guard()); ok {
		return eff, nil
	}
	var nums []string
	for _, v := range req.values {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return effect{}, notTranslatable("%s: %q is not a version component", req.key, v)
		}
		nums = append(nums, strconv.FormatInt(n, 10))
	}
	if len(nums) == 0 {
		return effect{}, notTranslatable("%s: no value", req.key)
	}
	ref := a.Ref() + "." + fn + "()"
	var pred string
	switch {
	case req.op == corev1.NodeSelectorOpGt || req.op == corev1.NodeSelectorOpLt:
		pred = ref + " " + celgen.CmpOp(string(req.op)) + " " + nums[0]
	case len(nums) == 1:
		pred = ref + " == " + nums[0]
	default:
		pred = ref + " in [" + strings.Join(nums, ", ") + "]"
	}
	return effect{selectors: []string{celgen.Guarded(a.Guard(), pred, req.op == corev1.NodeSelectorOpNotIn)}}, nil
}

// forwardPresent: the label says the node has devices of the family, which
// a request for such a device implies.
func forwardPresent(_ *Policy, _ *v1alpha1.NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
	if (req.op == corev1.NodeSelectorOpIn && slices.Equal(req.values, []string{"true"})) || req.op == corev1.NodeSelectorOpExists {
		return effect{implied: true}, nil
	}
	return effect{}, notTranslatable("%s with operator %s is not implied by a claim", req.key, req.op)
}

// forwardCount: no device attribute holds the number of devices of a node.
// The label leaves the pod without a selector, and the placement check
// compares the nodes the pod can land on with and without it.
func forwardCount(_ *Policy, _ *v1alpha1.NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
	if req.op == corev1.NodeSelectorOpDoesNotExist || req.op == corev1.NodeSelectorOpNotIn {
		return effect{}, notTranslatable("%s asks for nodes without devices of the family, which contradicts the device request", req)
	}
	return effect{implied: true, dropped: true}, nil
}

// forwardPCIPresent: an NFD PCI presence label, satisfied when the request's
// family is one the rule lists for the vendor ID in the key.
func forwardPCIPresent(_ *Policy, rule *v1alpha1.NodeLabelRule, wildcard string, req labelReq, family string) (effect, error) {
	if !slices.Contains(rule.Values[pciVendor(wildcard)], family) {
		return effect{notForUs: true}, nil
	}
	if (req.op == corev1.NodeSelectorOpIn && slices.Equal(req.values, []string{"true"})) || req.op == corev1.NodeSelectorOpExists {
		return effect{implied: true}, nil
	}
	return effect{}, notTranslatable("%s asks for nodes without the vendor's devices, which contradicts the device request", req)
}

// pciVendor is the vendor ID in what "*" matched of an NFD key:
// "10de" in pci-10de.present, pci-0302_10de.present.
func pciVendor(wildcard string) string {
	if i := strings.LastIndex(wildcard, "_"); i >= 0 {
		wildcard = wildcard[i+1:]
	}
	return strings.ToLower(wildcard)
}

// backwardAttribute reads the attribute of the first device, in the order of
// the rule's families, that has it: GFD labels what its first GPU reports.
func backwardAttribute(p *Policy, rule *v1alpha1.NodeLabelRule, _ string, n legacyNode) (string, bool) {
	for _, f := range rule.Families {
		for _, d := range n.devices(f) {
			if a, ok := d.attribute(rule.Attribute); ok {
				return p.attributeLabel(rule, a)
			}
		}
	}
	return "", false
}

// attributeLabel formats an attribute as the label shows it.
func (p *Policy) attributeLabel(rule *v1alpha1.NodeLabelRule, a resourceapi.DeviceAttribute) (string, bool) {
	switch rule.Conversion {
	case v1alpha1.ConvString:
		if a.StringValue != nil {
			return *a.StringValue, true
		}
	case v1alpha1.ConvInt:
		if a.IntValue != nil {
			return strconv.FormatInt(*a.IntValue, 10), true
		}
	case v1alpha1.ConvBool:
		if a.BoolValue != nil {
			return strconv.FormatBool(*a.BoolValue), true
		}
	case v1alpha1.ConvVersion, v1alpha1.ConvVersionMajor, v1alpha1.ConvVersionMinor, v1alpha1.ConvVersionPatch, v1alpha1.ConvGFDFamily:
		if a.VersionValue == nil {
			return "", false
		}
		major, minor, patch, err := parseSemver(*a.VersionValue)
		if err != nil {
			return "", false
		}
		switch rule.Conversion {
		case v1alpha1.ConvVersionMajor:
			return strconv.FormatInt(major, 10), true
		case v1alpha1.ConvVersionMinor:
			return strconv.FormatInt(minor, 10), true
		case v1alpha1.ConvVersionPatch:
			return strconv.FormatInt(patch, 10), true
		case v1alpha1.ConvGFDFamily:
			return gpulabels.FamilyOf(major, minor, p.spec.GFDFamilyScheme), true
		}
		return strconv.FormatInt(major, 10) + "." + strconv.FormatInt(minor, 10) + "." + strconv.FormatInt(patch, 10), true
	}
	return "", false
}

// backwardPresent: "true" when the node has a device of one of the rule's families.
func backwardPresent(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, n legacyNode) (string, bool) {
	for _, f := range rule.Families {
		if len(n.devices(f)) > 0 {
			return "true", true
		}
	}
	return "", false
}

// backwardCount counts the physical devices of the rule's families: a
// partition (a device with a parentUUID, such as a MIG slice) counts its
// parent once, as GFD's nvidia.com/gpu.count counts MIG-enabled GPUs under
// the mixed strategy. Under the single strategy GFD counts the MIG devices
// of a node whose GPUs are all MIG with one profile (the resource is the
// slice), and writes 0 for any other layout with MIG devices (see
// singleMIGLayout).
func backwardCount(p *Policy, rule *v1alpha1.NodeLabelRule, _ string, n legacyNode) (string, bool) {
	if p.migStrategy(n) == migSingle {
		switch migs, _, invalid := p.singleMIGLayout(rule.Families, n); {
		case invalid:
			return "0", true
		case len(migs) > 0:
			return strconv.Itoa(len(migs)), true
		}
	}
	parents := map[string]bool{}
	count := 0
	for _, f := range rule.Families {
		for _, d := range n.devices(f) {
			if a, ok := d.attribute(d.Driver + "/parentUUID"); ok && a.StringValue != nil {
				if !parents[*a.StringValue] {
					parents[*a.StringValue] = true
					count++
				}
				continue
			}
			count++
		}
	}
	if count == 0 {
		return "", false
	}
	return strconv.Itoa(count), true
}

// backwardPCIPresent: "true" when the node has a device of a family the rule
// lists for the key's vendor.
func backwardPCIPresent(_ *Policy, rule *v1alpha1.NodeLabelRule, wildcard string, n legacyNode) (string, bool) {
	for _, f := range rule.Values[pciVendor(wildcard)] {
		if len(n.devices(f)) > 0 {
			return "true", true
		}
	}
	return "", false
}

func asIs(_ *v1alpha1.NodeLabelRule, v string) string { return v }

// canonicalInt drops leading zeros of a number ("06" is "6").
func canonicalInt(_ *v1alpha1.NodeLabelRule, v string) string {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return strconv.FormatInt(n, 10)
	}
	return v
}

// canonicalVersion writes a version as major.minor.patch without leading
// zeros, as the DRA drivers publish it.
func canonicalVersion(_ *v1alpha1.NodeLabelRule, v string) string {
	if major, minor, patch, err := v1alpha1.ParseVersion(v); err == nil {
		return strconv.FormatInt(major, 10) + "." + strconv.FormatInt(minor, 10) + "." + strconv.FormatInt(patch, 10)
	}
	return v
}

// canonicalMap: every value of a Map rule stands for itself. Two values
// that map to a common attribute value (nvidia-h100-80gb and
// nvidia-h100-mega-80gb are both the H100) are different nodes, which only
// the node's own label tells apart (ambiguous.go).
func canonicalMap(_ *v1alpha1.NodeLabelRule, v string) string { return v }

// backwardMap is the label value that maps to the first device's attribute
// value; none when several do (the devices cannot tell which: only a node's
// real label says) or none does.
func backwardMap(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, n legacyNode) (string, bool) {
	for _, f := range rule.Families {
		for _, d := range n.devices(f) {
			a, ok := d.attribute(rule.Attribute)
			if !ok || a.StringValue == nil {
				continue
			}
			var keys []string
			for _, k := range slices.Sorted(maps.Keys(rule.Values)) {
				if slices.Contains(rule.Values[k], *a.StringValue) {
					keys = append(keys, k)
				}
			}
			if len(keys) != 1 {
				return "", false
			}
			return keys[0], true
		}
	}
	return "", false
}

// parseSemver reads a DRA version attribute ("8.9.0", "580.65.6"); a
// pre-release or build suffix is ignored.
func parseSemver(v string) (major, minor, patch int64, err error) {
	v, _, _ = strings.Cut(v, "+")
	v, _, _ = strings.Cut(v, "-")
	return v1alpha1.ParseVersion(v)
}

// The device direction of the generic conversions (see ForecastDevices in
// vocabulary.go).

// deviceScalar reads the value as a string, int or bool attribute.
func deviceScalar(t v1alpha1.AttributeType) func(*Policy, *v1alpha1.NodeLabelRule, string, string) (deviceFact, error) {
	return func(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, v string) (deviceFact, error) {
		var a resourceapi.DeviceAttribute
		switch t {
		case v1alpha1.AttrInt:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return deviceFact{}, fmt.Errorf("%q is not an integer", v)
			}
			a.IntValue = &n
		case v1alpha1.AttrBool:
			b, err := strconv.ParseBool(v)
			if err != nil || (v != "true" && v != "false") {
				return deviceFact{}, fmt.Errorf("%q is not true or false", v)
			}
			a.BoolValue = &b
		default:
			a.StringValue = &v
		}
		return deviceFact{attribute: rule.Attribute, candidates: []candidate{{value: a}}}, nil
	}
}

// deviceMap: the attribute values the rule's table gives the label value.
// Several values that are one name up to spacing (GFD's sanitising) are
// that name, written as the first; several others narrow the attribute
// down, which other labels may settle.
func deviceMap(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, v string) (deviceFact, error) {
	vals, ok := rule.Values[v]
	if !ok || len(vals) == 0 {
		return deviceFact{}, fmt.Errorf("the policy maps no value for %q", v)
	}
	f := deviceFact{attribute: rule.Attribute}
	same := true
	for _, x := range vals[1:] {
		if gpulabels.Sanitise(x) != gpulabels.Sanitise(vals[0]) {
			same = false
		}
	}
	if same && len(vals) > 1 {
		f.candidates = []candidate{{value: stringAttr(vals[0]), loose: true,
			note: fmt.Sprintf("%s: %s=%s maps to %s, one name up to spacing; written as %q", shortName(rule.Attribute), rule.Key, v, strings.Join(vals, ", "), vals[0])}}
		return f, nil
	}
	for _, x := range vals {
		f.candidates = append(f.candidates, candidate{value: stringAttr(x)})
	}
	return f, nil
}

// deviceVersion: a full dotted version, as the driver writes it (leading
// zeros dropped, missing components 0: "12.4" is 12.4.0).
func deviceVersion(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, v string) (deviceFact, error) {
	major, minor, patch, err := v1alpha1.ParseVersion(v)
	if err != nil {
		return deviceFact{}, fmt.Errorf("%q is not a version", v)
	}
	s := fmt.Sprintf("%d.%d.%d", major, minor, patch)
	return deviceFact{attribute: rule.Attribute, candidates: []candidate{{value: resourceapi.DeviceAttribute{VersionValue: &s}}}}, nil
}

// deviceVersionPart: one component of a version, joined with the others.
func deviceVersionPart(part versionPart) func(*Policy, *v1alpha1.NodeLabelRule, string, string) (deviceFact, error) {
	return func(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, v string) (deviceFact, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return deviceFact{}, fmt.Errorf("%q is not a version component", v)
		}
		return deviceFact{attribute: rule.Attribute, part: part, partValue: n}, nil
	}
}

// deviceNothing: the label says nothing of a device's attributes (the
// number of devices, their presence, the device plugin's strategy).
func deviceNothing(*Policy, *v1alpha1.NodeLabelRule, string, string) (deviceFact, error) {
	return deviceFact{}, nil
}
