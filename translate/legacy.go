package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The legacy view reads the vocabulary backwards: from the devices a DRA
// node publishes, what the device plugins and GPU Feature Discovery, Node
// Feature Discovery or GKE would have shown on that node — the labels and
// the extended resources. The placement proof compares where a legacy pod
// could land on that view with where its translation lands on the real node.
//
// Each conversion has its forward direction (a label requirement becomes a
// device selector, labels.go) and its backward one here (device attributes
// become a label value), so a label added to a profile serves both.

// LegacyDevice is one DRA device as the legacy view reads it.
type LegacyDevice struct {
	// Name of the device in its pool; devices are read in name order, as
	// GPU Feature Discovery reads GPUs in index order.
	Name string
	// Driver that publishes it: attributes without a domain are the
	// driver's.
	Driver     string
	Attributes map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	Capacity   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
}

// attribute looks up "<domain>/<name>"; a device stores the attributes of
// its own driver's domain without the domain.
func (d *LegacyDevice) attribute(qualified string) (resourceapi.DeviceAttribute, bool) {
	if a, ok := d.Attributes[resourceapi.QualifiedName(qualified)]; ok {
		return a, true
	}
	domain, id, _ := strings.Cut(qualified, "/")
	if domain == d.Driver {
		a, ok := d.Attributes[resourceapi.QualifiedName(id)]
		return a, ok
	}
	return resourceapi.DeviceAttribute{}, false
}

func (d *LegacyDevice) capacity(qualified string) (resource.Quantity, bool) {
	if c, ok := d.Capacity[resourceapi.QualifiedName(qualified)]; ok {
		return c.Value, true
	}
	domain, id, _ := strings.Cut(qualified, "/")
	if domain == d.Driver {
		c, ok := d.Capacity[resourceapi.QualifiedName(id)]
		return c.Value, ok
	}
	return resource.Quantity{}, false
}

// FamilyDevices returns the devices of a node that belong to a device
// family (those matching the DeviceClass and selectors of one of the
// family's resource rules, see [Policy.FamilyDeviceRules]), in name order.
type FamilyDevices func(family string) []LegacyDevice

// DeviceRule says which devices a legacy resource counts: those of the
// DeviceClass that also match Selectors.
type DeviceRule struct {
	// Resource is the extended resource name (or pattern) of the rule.
	Resource string
	Family   string
	// DeviceClassName whose selectors the devices must match.
	DeviceClassName string
	// Selectors are CEL expressions, ANDed with the class's: the rule's own
	// selectors and, for a pattern, the suffix attribute.
	Selectors []string
	// Shared is true when the resource is a share of a device rather than a
	// device (time-slicing replicas, RDMA shared devices): its count on a
	// node cannot be derived from the devices.
	Shared bool
}

// FamilyDeviceRules lists, per family, the rules whose devices make up the
// family on a node: every device-count rule (not capacity or companion
// rules), patterns without their suffix.
func (p *Policy) FamilyDeviceRules() map[string][]DeviceRule {
	out := map[string][]DeviceRule{}
	for i := range p.spec.Resources {
		r := &p.spec.Resources[i]
		if r.Capacity != "" || len(r.OnlyWith) > 0 {
			continue
		}
		dr, err := deviceRule(r, r.Name, "")
		if err != nil {
			continue
		}
		if !slices.ContainsFunc(out[r.Family], func(o DeviceRule) bool {
			return o.DeviceClassName == dr.DeviceClassName && slices.Equal(o.Selectors, dr.Selectors)
		}) {
			out[r.Family] = append(out[r.Family], dr)
		}
	}
	return out
}

// LegacyResource says how the device plugin's resource name would be
// counted on a DRA node; ok is false when the policy does not map it as a
// device count.
func (p *Policy) LegacyResource(name corev1.ResourceName) (DeviceRule, bool) {
	rule, suffix, ok := p.resourceRule(string(name))
	if !ok || rule.Capacity != "" || len(rule.OnlyWith) > 0 {
		return DeviceRule{}, false
	}
	dr, err := deviceRule(rule, string(name), suffix)
	if err != nil {
		return DeviceRule{}, false
	}
	return dr, true
}

func deviceRule(r *ResourceRule, name, suffix string) (DeviceRule, error) {
	dr := DeviceRule{Resource: name, Family: r.Family, DeviceClassName: r.DeviceClassName, Shared: r.sharedDevice()}
	for _, s := range r.Selectors {
		expr, err := requirementExpr(splitAttr(s.Attribute), s.typeOrDefault(), s.Operator, s.Values)
		if err != nil {
			return DeviceRule{}, err
		}
		dr.Selectors = append(dr.Selectors, expr)
	}
	if suffix != "" && r.SuffixAttribute != "" {
		attr := splitAttr(r.SuffixAttribute)
		pred, err := stringIn(attr.ref(), []string{suffix})
		if err != nil {
			return DeviceRule{}, err
		}
		dr.Selectors = append(dr.Selectors, guarded(attr.guard(), pred, false))
	}
	return dr, nil
}

// sharedDevice: the resource is a share of a device. The NVIDIA device
// plugin names time-sliced GPUs <resource>.shared.
func (r *ResourceRule) sharedDevice() bool {
	return strings.HasSuffix(r.Name, ".shared")
}

// KnowsLabel reports whether the policy maps the node-label key for some
// device family.
func (p *Policy) KnowsLabel(key string) bool { return p.knowsLabel(key) }

// LegacyLabel derives the value that the label key would have on a node
// with these devices, reading the policy's rule for the key backwards.
// ok is false when no rule derives the key or the node would not carry the
// label. Values come in the canonical form of [Policy.CanonicalLabelValue].
func (p *Policy) LegacyLabel(key string, devices FamilyDevices) (string, bool) {
	rule, wildcard, ok := p.labelRuleAny(key)
	if !ok {
		return "", false
	}
	first := func(families ...string) (*LegacyDevice, string) {
		for _, f := range families {
			if ds := devices(f); len(ds) > 0 {
				return &ds[0], f
			}
		}
		return nil, ""
	}
	switch rule.Conversion {
	case ConvString, ConvInt, ConvBool, ConvVersion, ConvVersionMajor, ConvVersionMinor, ConvVersionPatch, ConvGFDFamily, ConvMap:
		// The first device that has the attribute: GFD labels what its
		// first GPU reports.
		for _, f := range rule.Families {
			for _, d := range devices(f) {
				if a, ok := d.attribute(rule.Attribute); ok {
					return p.attributeLabel(rule, a)
				}
			}
		}
		return "", false
	case ConvGFDProduct:
		d, _ := first(rule.Families...)
		if d == nil {
			return "", false
		}
		a, ok := d.attribute(rule.Attribute)
		if !ok || a.StringValue == nil {
			return "", false
		}
		return gfdSanitise(*a.StringValue), true
	case ConvMiB:
		for _, f := range rule.Families {
			for _, d := range devices(f) {
				if q, ok := d.capacity(rule.Capacity); ok {
					return strconv.FormatInt(q.Value()>>20, 10), true
				}
			}
		}
		return "", false
	case ConvMIGProfile:
		fam := familyOfMIGRule(p, rule)
		for _, d := range devices(fam) {
			if a, ok := d.attribute(rule.MIGProfileAttribute); ok && a.StringValue != nil {
				return *a.StringValue, true
			}
		}
		return "", false
	case ConvMIGStrategy:
		// Which strategy the device plugin ran with is configuration, not
		// hardware: a node with MIG devices is read as "mixed".
		if len(devices(familyOfMIGRule(p, rule))) > 0 {
			return "mixed", true
		}
		return "none", true
	case ConvPCIPresent:
		vendor := wildcard
		if i := strings.LastIndex(vendor, "_"); i >= 0 {
			vendor = vendor[i+1:]
		}
		for _, f := range rule.Values[strings.ToLower(vendor)] {
			if len(devices(f)) > 0 {
				return "true", true
			}
		}
		return "", false
	case ConvImplied, ConvPresent:
		if d, _ := first(rule.Families...); d != nil {
			return "true", true
		}
		return "", false
	case ConvCount:
		// The number of devices of the rule's first family (full GPUs for
		// nvidia.com/gpu.count).
		if n := len(devices(rule.Families[0])); n > 0 {
			return strconv.Itoa(n), true
		}
		return "", false
	}
	return "", false
}

// attributeLabel formats an attribute as the label would show it.
func (p *Policy) attributeLabel(rule *NodeLabelRule, a resourceapi.DeviceAttribute) (string, bool) {
	switch rule.Conversion {
	case ConvString, ConvMap:
		// Map labels compare in attribute space: see CanonicalLabelValue.
		if a.StringValue != nil {
			return *a.StringValue, true
		}
	case ConvInt:
		if a.IntValue != nil {
			return strconv.FormatInt(*a.IntValue, 10), true
		}
	case ConvBool:
		if a.BoolValue != nil {
			return strconv.FormatBool(*a.BoolValue), true
		}
	case ConvVersion, ConvVersionMajor, ConvVersionMinor, ConvVersionPatch, ConvGFDFamily:
		if a.VersionValue == nil {
			return "", false
		}
		major, minor, patch, err := parseSemver(*a.VersionValue)
		if err != nil {
			return "", false
		}
		switch rule.Conversion {
		case ConvVersionMajor:
			return strconv.FormatInt(major, 10), true
		case ConvVersionMinor:
			return strconv.FormatInt(minor, 10), true
		case ConvVersionPatch:
			return strconv.FormatInt(patch, 10), true
		case ConvGFDFamily:
			return gfdFamilyOf(major, minor, p.spec.GFDFamilyScheme)
		}
		return fmt.Sprintf("%d.%d.%d", major, minor, patch), true
	}
	return "", false
}

// CanonicalLabelValue puts a label value into the form LegacyLabel derives,
// so that a pod's requirement and a node's label compare the way the
// device would: versions without leading zeros ("550.107.02" is
// "550.107.2"), values of a Map rule as the attribute value they map to
// (several GKE names map to one product). Values of keys the policy does
// not know, and values a rule cannot read, stay as they are.
func (p *Policy) CanonicalLabelValue(key, value string) string {
	rule, _, ok := p.labelRuleAny(key)
	if !ok {
		return value
	}
	switch rule.Conversion {
	case ConvVersion:
		if major, minor, patch, err := parseVersion(value); err == nil {
			return fmt.Sprintf("%d.%d.%d", major, minor, patch)
		}
	case ConvVersionMajor, ConvVersionMinor, ConvVersionPatch, ConvInt, ConvCount, ConvMiB:
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
	case ConvMap:
		if m := rule.Values[value]; len(m) > 0 {
			return m[0]
		}
	}
	return value
}

// labelRuleAny is the rule for key of the first family that has one, in
// the order of the rules' families.
func (p *Policy) labelRuleAny(key string) (*NodeLabelRule, string, bool) {
	for _, f := range p.Families() {
		if r, w, ok := p.labelRule(key, f); ok {
			return r, w, true
		}
	}
	return nil, "", false
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

// gfdFamilyOf is the GFD family of a compute capability (see gfdFamilies).
func gfdFamilyOf(major, minor int64, scheme GFDFamilyScheme) (string, bool) {
	cc := major*1000 + minor
	for name, ranges := range gfdFamilies(scheme) {
		for _, r := range ranges {
			if cc >= r.loMajor*1000+r.loMinor && cc < r.hiMajor*1000+r.hiMinor {
				return name, true
			}
		}
	}
	return "undefined", true
}

// parseSemver reads a DRA version attribute ("8.9.0", "580.65.6"); a
// pre-release or build suffix is ignored.
func parseSemver(v string) (major, minor, patch int64, err error) {
	v, _, _ = strings.Cut(v, "+")
	v, _, _ = strings.Cut(v, "-")
	major, minor, patch, err = parseVersion(v)
	if err == nil && (major > math.MaxInt32 || minor > math.MaxInt32 || patch > math.MaxInt32) {
		err = fmt.Errorf("version %q out of range", v)
	}
	return major, minor, patch, err
}

// Conversions read only by the legacy view's counting and presence rules.
const (
	// ConvPresent: the label says the node has devices of the family; a
	// request for such a device implies it.
	ConvPresent Conversion = "Present"
	// ConvCount: the label is the number of devices of the family on the
	// node. A claim cannot express it; the label is dropped and the
	// placement check tells whether that changes where the pod lands.
	ConvCount Conversion = "Count"
)

// Fingerprint identifies the policy's effective rules: two policies with
// the same fingerprint translate every pod alike. Caches of results that
// depend on the policy key on it.
func (p *Policy) Fingerprint() string { return p.fingerprint }

func specFingerprint(spec *PolicySpec) string {
	data, err := json.Marshal(spec)
	if err != nil {
		panic(err) // plain data types always marshal
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}
