package translate

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// labelReq is one node-label requirement of the pod: a nodeSelector entry
// (operator In with one value) or a node-affinity expression.
type labelReq struct {
	key    string
	op     corev1.NodeSelectorOperator
	values []string
	path   *field.Path
	loc    reqLoc
}

// reqLoc says where a requirement stands in the pod, cheaply comparable.
type reqLoc struct {
	kind       reqKind
	term, expr int
	key        string // nodeSelector key
}

type reqKind int

const (
	locOther reqKind = iota
	locSelector
	locRequired
	locPreferred
)

func (r labelReq) String() string {
	switch r.op {
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		return fmt.Sprintf("%s %s", r.key, r.op)
	case corev1.NodeSelectorOpIn:
		if len(r.values) == 1 {
			return r.key + "=" + r.values[0]
		}
	}
	return fmt.Sprintf("%s %s [%s]", r.key, r.op, strings.Join(r.values, ","))
}

func (r labelReq) equal(o labelReq) bool {
	return r.key == o.key && r.op == o.op && slices.Equal(r.values, o.values)
}

// effect is what one label requirement means for one request.
type effect struct {
	selectors []string // CEL, ANDed
	class     string   // DeviceClass override (MIG), "" = keep
	implied   bool     // no selector needed: the claim implies it
	dropped   bool     // no selector can express it: the label is dropped
	notForUs  bool     // the rule serves the family, but not this value (NFD vendor)
}

// errNotTranslatable wraps reasons a value cannot be expressed on devices.
var errNotTranslatable = errors.New("not translatable")

func notTranslatable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNotTranslatable, fmt.Sprintf(format, args...))
}

// convert turns a label requirement into an effect on a request of family.
func (p *Policy) convert(rule *NodeLabelRule, wildcard string, req labelReq, family string) (effect, error) {
	op := string(req.op)
	switch rule.Conversion {
	case ConvImplied, ConvPresent:
		if (req.op == corev1.NodeSelectorOpIn && slices.Equal(req.values, []string{"true"})) || req.op == corev1.NodeSelectorOpExists {
			return effect{implied: true}, nil
		}
		return effect{}, notTranslatable("%s with operator %s is not implied by a claim", req.key, op)

	case ConvCount:
		// No device attribute holds the number of devices of a node; the
		// label leaves the pod and the placement check compares the nodes.
		if req.op == corev1.NodeSelectorOpDoesNotExist || req.op == corev1.NodeSelectorOpNotIn {
			return effect{}, notTranslatable("%s asks for nodes without devices of the family, which contradicts the device request", req)
		}
		return effect{implied: true, dropped: true}, nil

	case ConvPCIPresent:
		vendor := wildcard
		if i := strings.LastIndex(vendor, "_"); i >= 0 {
			vendor = vendor[i+1:]
		}
		if !slices.Contains(rule.Values[strings.ToLower(vendor)], family) {
			return effect{notForUs: true}, nil
		}
		if (req.op == corev1.NodeSelectorOpIn && slices.Equal(req.values, []string{"true"})) || req.op == corev1.NodeSelectorOpExists {
			return effect{implied: true}, nil
		}
		return effect{}, notTranslatable("%s asks for nodes without the vendor's devices, which contradicts the device request", req)

	case ConvString, ConvInt, ConvBool:
		t := map[Conversion]AttributeType{ConvString: AttrString, ConvInt: AttrInt, ConvBool: AttrBool}[rule.Conversion]
		if (req.op == corev1.NodeSelectorOpGt || req.op == corev1.NodeSelectorOpLt) && t != AttrInt {
			return effect{}, notTranslatable("%s compares a %s attribute with %s", req.key, t, op)
		}
		expr, err := requirementExpr(splitAttr(rule.Attribute), t, op, req.values)
		if err != nil {
			return effect{}, notTranslatable("%s: %v", req.key, err)
		}
		return effect{selectors: []string{expr}}, nil

	case ConvMap:
		return convertMap(rule, req)

	case ConvGFDProduct:
		return convertGFDProduct(rule, req, family)

	case ConvMiB:
		return convertMiB(rule, req)

	case ConvGFDFamily:
		return convertGFDFamily(rule, req, p.spec.GFDFamilyScheme)

	case ConvVersion:
		if req.op == corev1.NodeSelectorOpGt || req.op == corev1.NodeSelectorOpLt {
			// Gt/Lt on labels compare integers; a full version is not one.
			return effect{}, notTranslatable("%s %s compares integers, not versions", req.key, op)
		}
		expr, err := requirementExpr(splitAttr(rule.Attribute), AttrVersion, op, req.values)
		if err != nil {
			return effect{}, notTranslatable("%s: %v", req.key, err)
		}
		return effect{selectors: []string{expr}}, nil

	case ConvVersionMajor, ConvVersionMinor, ConvVersionPatch:
		fn := map[Conversion]string{ConvVersionMajor: "major", ConvVersionMinor: "minor", ConvVersionPatch: "patch"}[rule.Conversion]
		return convertVersionPart(rule, req, fn)

	case ConvMIGProfile:
		return convertMIGProfile(rule, req, family)

	case ConvMIGStrategy:
		if req.op != corev1.NodeSelectorOpIn || len(req.values) != 1 {
			return effect{}, notTranslatable("%s: only a single value can be translated", req)
		}
		switch req.values[0] {
		case "single":
			if family == familyOfMIGRule(p, rule) {
				return effect{implied: true}, nil
			}
			// Under the single strategy the GPU resource is a MIG slice.
			return effect{class: rule.MIGDeviceClassName}, nil
		case "mixed", "none":
			return effect{implied: true}, nil
		}
		return effect{}, notTranslatable("%s: unknown MIG strategy", req)
	}
	return effect{}, fmt.Errorf("conversion %q is not implemented", rule.Conversion)
}

// familyOfMIGRule is the family whose requests already use the MIG class.
func familyOfMIGRule(p *Policy, rule *NodeLabelRule) string {
	for _, r := range p.spec.Resources {
		if r.DeviceClassName == rule.MIGDeviceClassName {
			return r.Family
		}
	}
	return ""
}

func convertMap(rule *NodeLabelRule, req labelReq) (effect, error) {
	a := splitAttr(rule.Attribute)
	switch req.op {
	case corev1.NodeSelectorOpExists:
		return effect{selectors: []string{a.guard()}}, nil
	case corev1.NodeSelectorOpDoesNotExist:
		return effect{selectors: []string{"!" + a.guard()}}, nil
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
		for _, x := range m {
			if !slices.Contains(mapped, x) {
				mapped = append(mapped, x)
			}
		}
	}
	pred, err := stringIn(a.ref(), mapped)
	if err != nil {
		return effect{}, notTranslatable("%s: %v", req.key, err)
	}
	return effect{selectors: []string{guarded(a.guard(), pred, req.op == corev1.NodeSelectorOpNotIn)}}, nil
}

var gfdMIGSuffix = regexp.MustCompile(`^(.+)-MIG-([0-9a-z.+-]+)$`)

// parseGFDProduct splits a GFD product label value into the product (in
// label form: spaces as dashes) and the MIG profile of the single strategy.
// A "-SHARED" suffix (time-sliced GPUs) is dropped.
func parseGFDProduct(v string) (product, migProfile string) {
	v = strings.TrimSuffix(v, "-SHARED")
	if m := gfdMIGSuffix.FindStringSubmatch(v); m != nil {
		return m[1], m[2]
	}
	return v, ""
}

func convertGFDProduct(rule *NodeLabelRule, req labelReq, family string) (effect, error) {
	a := splitAttr(rule.Attribute)
	switch req.op {
	case corev1.NodeSelectorOpExists:
		return effect{implied: true}, nil
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
	default:
		return effect{}, notTranslatable("%s: operator %s on a product name", req.key, req.op)
	}
	var products, profiles []string
	for _, v := range req.values {
		prod, prof := parseGFDProduct(v)
		if !slices.Contains(products, prod) {
			products = append(products, prod)
		}
		if !slices.Contains(profiles, prof) {
			profiles = append(profiles, prof)
		}
	}
	// GFD joins the words of the NVML name with dashes; dashes inside the
	// name stay, so compare in the label's form.
	pred, err := stringIn(a.ref()+`.replace(" ", "-")`, products)
	if err != nil {
		return effect{}, notTranslatable("%s: %v", req.key, err)
	}
	eff := effect{selectors: []string{guarded(a.guard(), pred, req.op == corev1.NodeSelectorOpNotIn)}}
	switch {
	case len(profiles) == 1 && profiles[0] == "":
		return eff, nil
	case req.op == corev1.NodeSelectorOpNotIn || len(profiles) > 1:
		return effect{}, notTranslatable("%s mixes MIG and full-GPU products or negates a MIG product", req)
	case rule.MIGDeviceClassName == "":
		return effect{}, notTranslatable("%s names a MIG slice, and the policy names no MIG class", req)
	}
	prof := splitAttr(rule.MIGProfileAttribute)
	profPred, err := stringIn(prof.ref(), profiles)
	if err != nil {
		return effect{}, notTranslatable("%s: %v", req.key, err)
	}
	eff.selectors = append(eff.selectors, guarded(prof.guard(), profPred, false))
	eff.class = rule.MIGDeviceClassName
	return eff, nil
}

func convertMIGProfile(rule *NodeLabelRule, req labelReq, family string) (effect, error) {
	prof := splitAttr(rule.MIGProfileAttribute)
	switch req.op {
	case corev1.NodeSelectorOpExists:
		return effect{selectors: []string{prof.guard()}, class: rule.MIGDeviceClassName}, nil
	case corev1.NodeSelectorOpIn:
	default:
		return effect{}, notTranslatable("%s: operator %s on a MIG partition size", req.key, req.op)
	}
	pred, err := stringIn(prof.ref(), req.values)
	if err != nil {
		return effect{}, notTranslatable("%s: %v", req.key, err)
	}
	return effect{selectors: []string{guarded(prof.guard(), pred, false)}, class: rule.MIGDeviceClassName}, nil
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

func convertMiB(rule *NodeLabelRule, req labelReq) (effect, error) {
	c := splitAttr(rule.Capacity)
	if eff, ok := presence(req, c.capGuard()); ok {
		return eff, nil
	}
	var parts []string
	for _, v := range req.values {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 1<<40 {
			return effect{}, notTranslatable("%s: %q is not a number of MiB", req.key, v)
		}
		// GFD labels the total memory in MiB rounded down; the DRA capacity
		// is exact bytes. Label value N therefore means N Mi <= bytes <
		// (N+1) Mi, "Gt N" means bytes >= (N+1) Mi and "Lt N" bytes < N Mi.
		lo := fmt.Sprintf(`%s.compareTo(quantity("%dMi")) >= 0`, c.capRef(), n)
		hi := fmt.Sprintf(`%s.compareTo(quantity("%dMi")) < 0`, c.capRef(), n+1)
		switch req.op {
		case corev1.NodeSelectorOpGt:
			parts = append(parts, fmt.Sprintf(`%s.compareTo(quantity("%dMi")) >= 0`, c.capRef(), n+1))
		case corev1.NodeSelectorOpLt:
			parts = append(parts, fmt.Sprintf(`%s.compareTo(quantity("%dMi")) < 0`, c.capRef(), n))
		default:
			parts = append(parts, "("+lo+" && "+hi+")")
		}
	}
	if len(parts) == 0 {
		return effect{}, notTranslatable("%s: no value", req.key)
	}
	pred := strings.Join(parts, " || ")
	if len(parts) > 1 {
		pred = "(" + pred + ")"
	}
	return effect{selectors: []string{guarded(c.capGuard(), pred, req.op == corev1.NodeSelectorOpNotIn)}}, nil
}

// ccRange is a half-open compute-capability range [lo, hi) as major.minor.
type ccRange struct{ loMajor, loMinor, hiMajor, hiMinor int64 }

// gfdFamilies mirrors GPU Feature Discovery's getArchFamily:
// 1 tesla, 2 fermi, 3 kepler, 5 maxwell, 6 pascal, 7.0–7.4 volta, 7.5+ turing,
// 8.0–8.8 ampere, 8.9 ada-lovelace, 9 hopper, 10 and 12 blackwell. Releases
// before ada-lovelace existed label every 8.x "ampere" (the Legacy scheme).
func gfdFamilies(scheme GFDFamilyScheme) map[string][]ccRange {
	m := map[string][]ccRange{
		"tesla":        {{1, 0, 2, 0}},
		"fermi":        {{2, 0, 3, 0}},
		"kepler":       {{3, 0, 4, 0}},
		"maxwell":      {{5, 0, 6, 0}},
		"pascal":       {{6, 0, 7, 0}},
		"volta":        {{7, 0, 7, 5}},
		"turing":       {{7, 5, 8, 0}},
		"ampere":       {{8, 0, 8, 9}},
		"ada-lovelace": {{8, 9, 9, 0}},
		"hopper":       {{9, 0, 10, 0}},
		"blackwell":    {{10, 0, 11, 0}, {12, 0, 13, 0}},
	}
	if scheme == GFDFamilyLegacy {
		m["ampere"] = []ccRange{{8, 0, 9, 0}}
		delete(m, "ada-lovelace")
		delete(m, "blackwell")
	}
	return m
}

func convertGFDFamily(rule *NodeLabelRule, req labelReq, scheme GFDFamilyScheme) (effect, error) {
	a := splitAttr(rule.Attribute)
	switch req.op {
	case corev1.NodeSelectorOpExists:
		return effect{selectors: []string{a.guard()}}, nil
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
	default:
		return effect{}, notTranslatable("%s: operator %s on an architecture family", req.key, req.op)
	}
	fams := gfdFamilies(scheme)
	var parts []string
	for _, v := range req.values {
		ranges, ok := fams[v]
		if !ok {
			return effect{}, notTranslatable("%s: %q is not a GPU family that GFD (%s scheme) produces", req.key, v, scheme)
		}
		for _, r := range ranges {
			parts = append(parts, fmt.Sprintf("(%s.compareTo(%s) >= 0 && %s.compareTo(%s) < 0)",
				a.ref(), semverLit(r.loMajor, r.loMinor, 0), a.ref(), semverLit(r.hiMajor, r.hiMinor, 0)))
		}
	}
	pred := strings.Join(parts, " || ")
	if len(parts) > 1 {
		pred = "(" + pred + ")"
	}
	return effect{selectors: []string{guarded(a.guard(), pred, req.op == corev1.NodeSelectorOpNotIn)}}, nil
}

func convertVersionPart(rule *NodeLabelRule, req labelReq, fn string) (effect, error) {
	a := splitAttr(rule.Attribute)
	if eff, ok := presence(req, a.guard()); ok {
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
	ref := a.ref() + "." + fn + "()"
	var pred string
	switch {
	case req.op == corev1.NodeSelectorOpGt || req.op == corev1.NodeSelectorOpLt:
		pred = ref + " " + cmpOp(string(req.op)) + " " + nums[0]
	case len(nums) == 1:
		pred = ref + " == " + nums[0]
	default:
		pred = ref + " in [" + strings.Join(nums, ", ") + "]"
	}
	return effect{selectors: []string{guarded(a.guard(), pred, req.op == corev1.NodeSelectorOpNotIn)}}, nil
}
