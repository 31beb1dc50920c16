package v1alpha1

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validation of attribute requirements, node-label, alignment, partition
// and fallback rules, and the name checks they share.

func validateAttributeRequirement(p *field.Path, a *AttributeRequirement) field.ErrorList {
	errs := validateQualifiedAttribute(p.Child("attribute"), a.Attribute)
	switch a.Type {
	case "", AttrString, AttrInt, AttrBool, AttrVersion:
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), a.Type, []AttributeType{AttrString, AttrInt, AttrBool, AttrVersion}))
	}
	op := a.Operator
	if op == "" {
		op = "In"
	}
	switch op {
	case "In", "NotIn":
		if len(a.Values) == 0 {
			errs = append(errs, field.Required(p.Child("values"), "at least one value for "+op))
		}
	case "Exists", "DoesNotExist":
		if len(a.Values) != 0 {
			errs = append(errs, field.Forbidden(p.Child("values"), "no values for "+op))
		}
	case "Gt", "Lt":
		if len(a.Values) != 1 {
			errs = append(errs, field.Invalid(p.Child("values"), a.Values, "exactly one value for "+op))
		}
		if a.Type != AttrInt && a.Type != AttrVersion {
			errs = append(errs, field.Invalid(p.Child("operator"), op, "Gt and Lt need type Int or Version"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("operator"), op, []string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}))
	}
	for i, v := range a.Values {
		if err := a.ValueType().CheckValue(v); err != nil {
			errs = append(errs, field.Invalid(p.Child("values").Index(i), v, err.Error()))
		}
	}
	return errs
}

func validateNodeLabelRule(p *field.Path, r *NodeLabelRule) field.ErrorList {
	var errs field.ErrorList
	if r.Key == "" {
		errs = append(errs, field.Required(p.Child("key"), ""))
	} else {
		if strings.Count(r.Key, "*") > 1 {
			errs = append(errs, field.Invalid(p.Child("key"), r.Key, "at most one '*'"))
		}
		for _, msg := range validation.IsQualifiedName(strings.ReplaceAll(r.Key, "*", "x")) {
			errs = append(errs, field.Invalid(p.Child("key"), r.Key, msg))
		}
	}
	if len(r.Families) == 0 {
		errs = append(errs, field.Required(p.Child("families"), ""))
	}
	for i, f := range r.Families {
		errs = append(errs, validateDNSLabel(p.Child("families").Index(i), f)...)
	}
	if !slices.Contains(Conversions(), r.Conversion) {
		errs = append(errs, field.NotSupported(p.Child("conversion"), r.Conversion, Conversions()))
		return errs
	}
	switch r.Conversion.Reads() {
	case "attribute":
		if r.Attribute == "" {
			errs = append(errs, field.Required(p.Child("attribute"), "conversion "+string(r.Conversion)+" compares an attribute"))
		}
	case "capacity":
		if r.Capacity == "" {
			errs = append(errs, field.Required(p.Child("capacity"), "conversion "+string(r.Conversion)+" compares a capacity"))
		}
	}
	if r.Attribute != "" {
		errs = append(errs, validateQualifiedAttribute(p.Child("attribute"), r.Attribute)...)
	}
	if r.Capacity != "" {
		errs = append(errs, validateQualifiedAttribute(p.Child("capacity"), r.Capacity)...)
	}
	if (r.Conversion == ConvMap || r.Conversion == ConvPCIPresent) && len(r.Values) == 0 {
		errs = append(errs, field.Required(p.Child("values"), "conversion "+string(r.Conversion)+" needs a value table"))
	}
	for _, k := range slices.Sorted(maps.Keys(r.Values)) {
		if len(r.Values[k]) == 0 {
			errs = append(errs, field.Required(p.Child("values").Key(k), "at least one value"))
		}
		for i, v := range r.Values[k] {
			if !isPrintable(v) || len(v) > 64 {
				errs = append(errs, field.Invalid(p.Child("values").Key(k).Index(i), v, "at most 64 printable characters"))
			}
		}
	}
	if r.Conversion == ConvMIGProfile || r.Conversion == ConvMIGStrategy {
		if r.MIGDeviceClassName == "" {
			errs = append(errs, field.Required(p.Child("migDeviceClassName"), "conversion "+string(r.Conversion)+" moves requests to a MIG class"))
		}
		if r.Conversion == ConvMIGProfile && r.MIGProfileAttribute == "" {
			errs = append(errs, field.Required(p.Child("migProfileAttribute"), ""))
		}
	}
	if (r.MIGDeviceClassName == "") != (r.MIGProfileAttribute == "") && r.Conversion == ConvGFDProduct {
		errs = append(errs, field.Invalid(p.Child("migDeviceClassName"), r.MIGDeviceClassName, "migDeviceClassName and migProfileAttribute go together"))
	}
	if r.MIGDeviceClassName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(r.MIGDeviceClassName) {
			errs = append(errs, field.Invalid(p.Child("migDeviceClassName"), r.MIGDeviceClassName, msg))
		}
	}
	if r.MIGProfileAttribute != "" {
		errs = append(errs, validateQualifiedAttribute(p.Child("migProfileAttribute"), r.MIGProfileAttribute)...)
	}
	if r.OnlyOnNodesWithLabel != "" {
		for _, msg := range validation.IsQualifiedName(r.OnlyOnNodesWithLabel) {
			errs = append(errs, field.Invalid(p.Child("onlyOnNodesWithLabel"), r.OnlyOnNodesWithLabel, msg))
		}
	}
	return errs
}

// validateNamedFamilies checks the name of an alignment or partition rule
// and its families: at least one, each a DNS label, none twice.
func validateNamedFamilies(p *field.Path, name string, families []string) field.ErrorList {
	errs := validateDNSLabel(p.Child("name"), name)
	if len(families) == 0 {
		errs = append(errs, field.Required(p.Child("families"), ""))
	}
	for i, f := range families {
		errs = append(errs, validateDNSLabel(p.Child("families").Index(i), f)...)
		if slices.Index(families, f) != i {
			errs = append(errs, field.Duplicate(p.Child("families").Index(i), f))
		}
	}
	return errs
}

func validateAlignmentRule(p *field.Path, r *AlignmentRule) field.ErrorList {
	errs := validateNamedFamilies(p, r.Name, r.Families)
	errs = append(errs, validateQualifiedAttribute(p.Child("attribute"), r.Attribute)...)
	switch r.Mode {
	case "", AlignRequired, AlignPreferred:
	default:
		errs = append(errs, field.NotSupported(p.Child("mode"), r.Mode, []AlignmentMode{AlignRequired, AlignPreferred}))
	}
	if r.MaxCount < 0 {
		errs = append(errs, field.Invalid(p.Child("maxCount"), r.MaxCount, "must not be negative"))
	}
	return errs
}

func validatePartitionRule(p *field.Path, r *PartitionRule) field.ErrorList {
	errs := validateNamedFamilies(p, r.Name, r.Families)
	// The longest size makes the longest attribute name.
	longest := int64(1)
	for _, n := range r.Sizes {
		longest = max(longest, n)
	}
	errs = append(errs, validateQualifiedAttribute(p.Child("attributePrefix"), r.AttributePrefix+strconv.FormatInt(longest, 10))...)
	errs = append(errs, validateQualifiedAttribute(p.Child("memberAttribute"), r.MemberAttribute)...)
	if len(r.Sizes) == 0 {
		errs = append(errs, field.Required(p.Child("sizes"), "the sizes the partitions come in"))
	}
	for i, n := range r.Sizes {
		if n < 1 || n > resourceapi.AllocationResultsMaxSize {
			errs = append(errs, field.Invalid(p.Child("sizes").Index(i), n, fmt.Sprintf("must be between 1 and %d", resourceapi.AllocationResultsMaxSize)))
		}
		if slices.Index(r.Sizes, n) != i {
			errs = append(errs, field.Duplicate(p.Child("sizes").Index(i), n))
		}
	}
	return errs
}

func validateFallbackRule(p *field.Path, r *FallbackRule) field.ErrorList {
	errs := validateDNSLabel(p.Child("name"), r.Name)
	if r.Match.Resource == "" {
		errs = append(errs, field.Required(p.Child("match", "resource"), ""))
	}
	if r.Match.CountMultiplier != 0 {
		errs = append(errs, field.Forbidden(p.Child("match", "countMultiplier"), "only for alternatives"))
	}
	if len(r.Alternatives) == 0 {
		errs = append(errs, field.Required(p.Child("alternatives"), ""))
	}
	if len(r.Alternatives) > maxFirstAvailable-1 {
		errs = append(errs, field.TooMany(p.Child("alternatives"), len(r.Alternatives), maxFirstAvailable-1))
	}
	for i, a := range r.Alternatives {
		if a.CountMultiplier < 0 || a.CountMultiplier > 32 {
			errs = append(errs, field.Invalid(p.Child("alternatives").Index(i).Child("countMultiplier"), a.CountMultiplier, "must be between 1 and 32"))
		}
		if a.Resource == "" && len(a.NodeSelector) == 0 && a.CountMultiplier <= 1 {
			errs = append(errs, field.Invalid(p.Child("alternatives").Index(i), "", "an alternative must change the resource, the node selector or the count"))
		}
	}
	return errs
}

func validateDNSLabel(p *field.Path, v string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

// validateQualifiedAttribute checks "<domain>/<C identifier>" as the DRA API
// does for fully qualified names (domain ≤ 63, identifier ≤ 32).
func validateQualifiedAttribute(p *field.Path, v string) field.ErrorList {
	domain, id, ok := strings.Cut(v, "/")
	if v == "" {
		return field.ErrorList{field.Required(p, "\"<domain>/<name>\"")}
	}
	if !ok || domain == "" || id == "" {
		return field.ErrorList{field.Invalid(p, v, "must be a fully qualified name \"<domain>/<name>\"")}
	}
	var errs field.ErrorList
	if len(domain) > 63 {
		errs = append(errs, field.TooLong(p, domain, 63))
	}
	for _, msg := range validation.IsDNS1123Subdomain(domain) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	if len(id) > 32 || !isCIdentifier(id) {
		errs = append(errs, field.Invalid(p, v, "the name must be a C identifier of at most 32 characters"))
	}
	return errs
}

func isCIdentifier(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
