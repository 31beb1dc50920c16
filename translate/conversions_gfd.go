package translate

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The conversions of GPU Feature Discovery's and GKE's GPU labels
// (vocabulary.go): product names, memory in MiB, architecture families and
// MIG partitions.

// familyOfMIGRule is the family whose requests already use the MIG class.
func familyOfMIGRule(p *Policy, rule *NodeLabelRule) string {
	for _, r := range p.spec.Resources {
		if r.DeviceClassName == rule.MIGDeviceClassName {
			return r.Family
		}
	}
	return ""
}

var gfdMIGSuffix = regexp.MustCompile(`^(.+)-MIG-([0-9a-z.+-]+)$`)

// parseGFDProduct splits a GFD product label value into the product (in
// label form: spaces as dashes) and the MIG profile of the single strategy.
// A "-SHARED" suffix (time-sliced GPUs) is dropped; a pod that asks for a
// shared product is kept legacy before labels are converted (shared.go),
// and NotIn on a shared product holds on every DRA device.
func parseGFDProduct(v string) (product, migProfile string) {
	v = strings.TrimSuffix(v, "-SHARED")
	if m := gfdMIGSuffix.FindStringSubmatch(v); m != nil {
		return m[1], m[2]
	}
	return v, ""
}

// forwardGFDProduct compares a GFD product label (spaces as dashes, an
// optional -MIG-<profile> suffix of the single strategy) with productName.
func forwardGFDProduct(_ *Policy, rule *NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
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
		if req.op == corev1.NodeSelectorOpNotIn && strings.HasSuffix(v, "-SHARED") {
			// A shared (time-sliced) product is a device-plugin setting no
			// DRA device has: "not a shared T4" holds on every device.
			continue
		}
		prod, prof := parseGFDProduct(v)
		if !slices.Contains(products, prod) {
			products = append(products, prod)
		}
		if !slices.Contains(profiles, prof) {
			profiles = append(profiles, prof)
		}
	}
	if len(products) == 0 {
		return effect{implied: true}, nil
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

// backwardGFDProduct is GFD's product label of the node's first GPU.
func backwardGFDProduct(_ *Policy, rule *NodeLabelRule, _ string, devices FamilyDevices) (string, bool) {
	for _, f := range rule.Families {
		if ds := devices(f); len(ds) > 0 {
			a, ok := ds[0].attribute(rule.Attribute)
			if !ok || a.StringValue == nil {
				return "", false
			}
			return gfdSanitise(*a.StringValue), true
		}
	}
	return "", false
}

// gfdSanitise is GPU Feature Discovery's label sanitising of a product
// name (internal/lm/resource.go): characters outside [A-Za-z0-9-_. ] are
// dropped and the whitespace-separated fields are joined with "-".
func gfdSanitise(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.', r == ' ':
			b.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(b.String()), "-")
}

// forwardMIGProfile says the device is a MIG slice of the given profile
// (GKE's gke-gpu-partition-size).
func forwardMIGProfile(_ *Policy, rule *NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
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

// backwardMIGProfile is the profile of the node's first MIG device.
func backwardMIGProfile(p *Policy, rule *NodeLabelRule, _ string, devices FamilyDevices) (string, bool) {
	for _, d := range devices(familyOfMIGRule(p, rule)) {
		if a, ok := d.attribute(rule.MIGProfileAttribute); ok && a.StringValue != nil {
			return *a.StringValue, true
		}
	}
	return "", false
}

// forwardMIGStrategy: under "single" the legacy GPU resource is a MIG slice.
func forwardMIGStrategy(p *Policy, rule *NodeLabelRule, _ string, req labelReq, family string) (effect, error) {
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

// backwardMIGStrategy: which strategy the device plugin ran with is
// configuration, not hardware. A node with MIG devices is read as "mixed";
// without, GFD sets no label.
func backwardMIGStrategy(p *Policy, rule *NodeLabelRule, _ string, devices FamilyDevices) (string, bool) {
	if len(devices(familyOfMIGRule(p, rule))) > 0 {
		return "mixed", true
	}
	return "", false
}

// forwardMiB compares GFD's memory in MiB with a capacity in bytes.
func forwardMiB(_ *Policy, rule *NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
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

// backwardMiB is the first device's capacity in whole MiB, rounded down as
// GFD labels it.
func backwardMiB(_ *Policy, rule *NodeLabelRule, _ string, devices FamilyDevices) (string, bool) {
	for _, f := range rule.Families {
		for _, d := range devices(f) {
			if q, ok := d.capacity(rule.Capacity); ok {
				return strconv.FormatInt(q.Value()>>20, 10), true
			}
		}
	}
	return "", false
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

// forwardGFDFamily maps an architecture family to its compute-capability
// ranges under the policy's GFD scheme.
func forwardGFDFamily(p *Policy, rule *NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
	scheme := p.spec.GFDFamilyScheme
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

// gfdFamilyOf is the GFD family of a compute capability (GFD's getArchFamily
// says "undefined" for the rest).
func gfdFamilyOf(major, minor int64, scheme GFDFamilyScheme) string {
	cc := major*1000 + minor
	fams := gfdFamilies(scheme)
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		for _, r := range fams[name] {
			if cc >= r.loMajor*1000+r.loMinor && cc < r.hiMajor*1000+r.hiMinor {
				return name
			}
		}
	}
	return "undefined"
}
