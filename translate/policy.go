package translate

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// PolicyAPIVersion and PolicyKind identify a TranslationPolicy document.
const (
	PolicyAPIVersion = "claimbridge.io/v1alpha1"
	PolicyKind       = "TranslationPolicy"
)

// TranslationPolicy says how legacy device requests (extended resources and
// node labels) map to DRA device requests. It is read from YAML with
// [LoadPolicy]; unknown fields are rejected.
type TranslationPolicy struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   PolicyMetadata `json:"metadata,omitempty"`
	Spec       PolicySpec     `json:"spec"`
}

// PolicyMetadata names a policy. Only the name is used (in reasons and logs).
type PolicyMetadata struct {
	Name string `json:"name,omitempty"`
}

// PolicySpec holds the rules. Rules of the named built-in profiles come first,
// then the rules written here; for a resource name or label key that two rules
// map, the later rule wins.
type PolicySpec struct {
	// Profiles are built-in profiles whose rules are included, in this order.
	// Default: none. A policy file that names no profile and has no rules is
	// rejected; use [DefaultPolicy] for "all built-in profiles".
	Profiles []string `json:"profiles,omitempty"`

	// KeepTranslatedNodeLabels leaves node-label requirements in the pod after
	// they were turned into device selectors. Default false: they are removed,
	// because DRA nodes do not carry the labels of device plugins.
	KeepTranslatedNodeLabels bool `json:"keepTranslatedNodeLabels,omitempty"`

	// GFDFamilyScheme says which GPU Feature Discovery release labelled the
	// nodes, because nvidia.com/gpu.family changed meaning: "Current" (default)
	// labels compute capability 8.9 as ada-lovelace, "Legacy" labels every 8.x
	// as ampere.
	GFDFamilyScheme GFDFamilyScheme `json:"gfdFamilyScheme,omitempty"`

	// Resources map extended-resource names to device requests.
	Resources []ResourceRule `json:"resources,omitempty"`

	// NodeLabels map node-label keys to device attributes or capacities.
	NodeLabels []NodeLabelRule `json:"nodeLabels,omitempty"`

	// Alignment rules add matchAttribute constraints.
	Alignment []AlignmentRule `json:"alignment,omitempty"`

	// Fallbacks add prioritized alternatives after a matching one.
	Fallbacks []FallbackRule `json:"fallbacks,omitempty"`
}

// GFDFamilyScheme selects how nvidia.com/gpu.family values map to compute capabilities.
type GFDFamilyScheme string

// GFD family schemes.
const (
	GFDFamilyCurrent GFDFamilyScheme = "Current"
	GFDFamilyLegacy  GFDFamilyScheme = "Legacy"
)

// ResourceRule maps one extended-resource name (or a family of names) to a
// DeviceClass.
type ResourceRule struct {
	// Name is the extended resource, e.g. "nvidia.com/gpu", or a pattern with
	// one trailing "*", e.g. "nvidia.com/mig-*"; the text matched by "*" is
	// the suffix that SuffixAttribute compares against. Required.
	Name string `json:"name"`

	// Family groups resources of one kind of device. Node-label rules,
	// alignment rules and fallbacks refer to families. Required, DNS label.
	Family string `json:"family"`

	// DeviceClassName is the DeviceClass of the generated request. Required.
	DeviceClassName string `json:"deviceClassName"`

	// RequestName is the short name used in generated request names
	// ("<container>-<requestName>"). Default: the part of Name after "/",
	// made a DNS label.
	RequestName string `json:"requestName,omitempty"`

	// SuffixAttribute is the device attribute ("<domain>/<name>") that must
	// equal the suffix matched by a pattern Name. Only for patterns; without
	// it the suffix does not narrow the devices.
	SuffixAttribute string `json:"suffixAttribute,omitempty"`

	// Selectors are extra requirements on device attributes, ANDed.
	Selectors []AttributeRequirement `json:"selectors,omitempty"`

	// Config is opaque driver configuration attached to the generated requests.
	Config []OpaqueConfig `json:"config,omitempty"`

	// Capacity, when set, turns the container's quantity into a capacity
	// request ("<domain>/<name>") on one device instead of a device count;
	// the quantity must be a whole number. Used for CPUs from dra.cpu.
	Capacity string `json:"capacity,omitempty"`

	// KeepInPod leaves the legacy resource in the container (dra-driver-cpu
	// needs the pod to keep its cpu requests). Only together with OnlyWith,
	// which makes the rule a companion of other devices.
	KeepInPod bool `json:"keepInPod,omitempty"`

	// OnlyWith makes the rule a companion: it is applied only when the pod
	// also gets a request of one of these families and an alignment rule ties
	// the two. A companion never makes a pod translatable on its own.
	OnlyWith []string `json:"onlyWith,omitempty"`
}

// AttributeRequirement is a typed requirement on one device attribute. It is
// turned into CEL by claimbridge; no user-written CEL is accepted.
type AttributeRequirement struct {
	// Attribute is "<domain>/<name>", e.g. "gpu.intel.com/driver". Required.
	Attribute string `json:"attribute"`
	// Type of the attribute: String (default), Int, Bool or Version.
	Type AttributeType `json:"type,omitempty"`
	// Operator: In (default), NotIn, Exists, DoesNotExist, Gt, Lt.
	Operator string `json:"operator,omitempty"`
	// Values compared against; one or more for In/NotIn, exactly one for
	// Gt/Lt, none for Exists/DoesNotExist.
	Values []string `json:"values,omitempty"`
}

// AttributeType is the type of a device attribute value.
type AttributeType string

// Attribute types.
const (
	AttrString  AttributeType = "String"
	AttrInt     AttributeType = "Int"
	AttrBool    AttributeType = "Bool"
	AttrVersion AttributeType = "Version"
)

// OpaqueConfig is driver configuration passed through to the claim.
type OpaqueConfig struct {
	// Driver the configuration is for. Required.
	Driver string `json:"driver"`
	// Parameters, any JSON object, at most 10Ki. Required.
	Parameters runtime.RawExtension `json:"parameters"`
}

// NodeLabelRule maps one node-label key to a requirement on devices.
type NodeLabelRule struct {
	// Key is the label key, or a pattern with one "*", e.g.
	// "feature.node.kubernetes.io/pci-*.present". Required.
	Key string `json:"key"`

	// Families whose requests get the selector. Required.
	Families []string `json:"families"`

	// Conversion names how a label value becomes a selector (see
	// [Conversion]). Required.
	Conversion Conversion `json:"conversion"`

	// Attribute is the device attribute "<domain>/<name>" the conversion
	// compares against. Required unless the conversion is Capacity-based,
	// Implied, PCIPresent or MIGStrategy.
	Attribute string `json:"attribute,omitempty"`

	// Capacity is the device capacity "<domain>/<name>" for MiB.
	Capacity string `json:"capacity,omitempty"`

	// Values maps label values to attribute values for Map and PCIPresent
	// (PCI vendor ID → driver names).
	Values map[string][]string `json:"values,omitempty"`

	// MIGDeviceClassName is the DeviceClass a request moves to when the label
	// says the device is a MIG slice (MIGProfile, MIGStrategy, GFDProduct with
	// a "-MIG-<profile>" value).
	MIGDeviceClassName string `json:"migDeviceClassName,omitempty"`

	// MIGProfileAttribute is the attribute holding the MIG profile.
	MIGProfileAttribute string `json:"migProfileAttribute,omitempty"`

	// Alternatives turns an In list into prioritized alternatives, in list
	// order, instead of one selector. Default false.
	Alternatives bool `json:"alternatives,omitempty"`
}

// Conversion names how a label value becomes a device requirement.
type Conversion string

// Conversions.
const (
	// ConvString compares the value with a string attribute.
	ConvString Conversion = "String"
	// ConvInt compares the value with an int attribute (Gt/Lt allowed).
	ConvInt Conversion = "Int"
	// ConvBool compares "true"/"false" with a bool attribute.
	ConvBool Conversion = "Bool"
	// ConvGFDProduct compares a GPU Feature Discovery product label
	// (spaces as dashes, optional -MIG-<profile> or -SHARED suffix) with the
	// productName attribute.
	ConvGFDProduct Conversion = "GFDProduct"
	// ConvMiB compares a MiB number with a byte capacity.
	ConvMiB Conversion = "MiB"
	// ConvGFDFamily maps an architecture family to a compute capability range.
	ConvGFDFamily Conversion = "GFDFamily"
	// ConvVersionMajor, ConvVersionMinor and ConvVersionPatch compare one
	// component of a version attribute.
	ConvVersionMajor Conversion = "VersionMajor"
	ConvVersionMinor Conversion = "VersionMinor"
	ConvVersionPatch Conversion = "VersionPatch"
	// ConvVersion compares a full dotted version (leading zeros dropped).
	ConvVersion Conversion = "Version"
	// ConvMap maps label values to attribute values through Values.
	ConvMap Conversion = "Map"
	// ConvMIGProfile says the device is a MIG slice of the given profile.
	ConvMIGProfile Conversion = "MIGProfile"
	// ConvMIGStrategy: "single" means the legacy GPU resource is a MIG slice.
	ConvMIGStrategy Conversion = "MIGStrategy"
	// ConvPCIPresent: an NFD PCI presence label, satisfied when a request's
	// driver is one that Values lists for the vendor ID in the key.
	ConvPCIPresent Conversion = "PCIPresent"
	// ConvImplied: the label is implied by the claim itself (for example a
	// device count); it is removed without a selector.
	ConvImplied Conversion = "Implied"
)

var conversions = []Conversion{ConvString, ConvInt, ConvBool, ConvGFDProduct, ConvMiB, ConvGFDFamily,
	ConvVersionMajor, ConvVersionMinor, ConvVersionPatch, ConvVersion, ConvMap, ConvMIGProfile,
	ConvMIGStrategy, ConvPCIPresent, ConvImplied}

// AlignmentRule makes co-requested devices share an attribute.
type AlignmentRule struct {
	// Name identifies the rule in reasons. Required, DNS label.
	Name string `json:"name"`
	// Families: with one family, all devices of each request of that family
	// that asks for more than one device share the attribute; with several,
	// the rule applies when the pod requests devices of at least two of them,
	// and all those devices share the attribute. Required.
	Families []string `json:"families"`
	// Attribute is the fully qualified attribute, e.g.
	// "resource.kubernetes.io/pcieRoot". Required.
	Attribute string `json:"attribute"`
	// Mode: Required, or Preferred (default): an aligned alternative first,
	// then the unaligned one.
	Mode AlignmentMode `json:"mode,omitempty"`
	// MaxCount, when set, applies the rule only if no involved request asks
	// for more devices than this (a pcieRoot is shared by one GPU and one
	// NIC, so aligning two GPUs with two NICs on one root cannot succeed).
	MaxCount int64 `json:"maxCount,omitempty"`
}

// AlignmentMode is Required or Preferred.
type AlignmentMode string

// Alignment modes.
const (
	AlignRequired  AlignmentMode = "Required"
	AlignPreferred AlignmentMode = "Preferred"
)

// FallbackRule adds alternatives after an alternative that matches.
type FallbackRule struct {
	// Name identifies the rule in reasons. Required, DNS label.
	Name string `json:"name"`
	// Match selects the alternatives to extend.
	Match LegacyShape `json:"match"`
	// Alternatives are tried after the matched one, in order. Each is written
	// in the legacy vocabulary and translated with the same rules.
	Alternatives []LegacyShape `json:"alternatives"`
}

// LegacyShape describes a device request the legacy way.
type LegacyShape struct {
	// Resource is the extended resource name. In Match it is required; in an
	// alternative the default is the matched one.
	Resource string `json:"resource,omitempty"`
	// NodeSelector: in Match, labels the alternative must have been selected
	// with; in an alternative, labels that replace those of Match.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// CountMultiplier multiplies the container's device count (alternatives
	// only). Default 1.
	CountMultiplier int64 `json:"countMultiplier,omitempty"`
}

// LoadPolicy decodes and validates one TranslationPolicy document. Unknown
// fields are rejected; every error carries a field path.
func LoadPolicy(data []byte) (*Policy, error) {
	var tp TranslationPolicy
	if err := decodeStrict(data, &tp); err != nil {
		return nil, fmt.Errorf("decode policy: %w", err)
	}
	return NewPolicy(&tp)
}

// decodeStrict reads YAML or JSON into v, rejecting unknown and duplicate
// fields with their paths.
func decodeStrict(data []byte, v any) error {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(js, v, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// NewPolicy validates a TranslationPolicy and compiles it, with the rules of
// its profiles included.
func NewPolicy(tp *TranslationPolicy) (*Policy, error) {
	if errs := validatePolicyDocument(tp); len(errs) > 0 {
		return nil, fmt.Errorf("invalid policy: %w", errs.ToAggregate())
	}
	merged := PolicySpec{
		KeepTranslatedNodeLabels: tp.Spec.KeepTranslatedNodeLabels,
		GFDFamilyScheme:          tp.Spec.GFDFamilyScheme,
	}
	for _, name := range tp.Spec.Profiles {
		prof, err := builtinProfile(name)
		if err != nil {
			return nil, err
		}
		appendRules(&merged, &prof.Spec)
	}
	appendRules(&merged, &tp.Spec)
	if merged.GFDFamilyScheme == "" {
		merged.GFDFamilyScheme = GFDFamilyCurrent
	}
	if errs := validateReferences(&tp.Spec, &merged); len(errs) > 0 {
		return nil, fmt.Errorf("invalid policy: %w", errs.ToAggregate())
	}
	name := tp.Metadata.Name
	if name == "" {
		name = "unnamed"
	}
	return compilePolicy(name, merged), nil
}

func appendRules(dst, src *PolicySpec) {
	dst.Resources = append(dst.Resources, src.Resources...)
	dst.NodeLabels = append(dst.NodeLabels, src.NodeLabels...)
	dst.Alignment = append(dst.Alignment, src.Alignment...)
	dst.Fallbacks = append(dst.Fallbacks, src.Fallbacks...)
}

func validatePolicyDocument(tp *TranslationPolicy) field.ErrorList {
	var errs field.ErrorList
	if tp.APIVersion != PolicyAPIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), tp.APIVersion, []string{PolicyAPIVersion}))
	}
	if tp.Kind != PolicyKind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), tp.Kind, []string{PolicyKind}))
	}
	spec := field.NewPath("spec")
	for i, p := range tp.Spec.Profiles {
		if !slices.Contains(ProfileNames(), p) {
			errs = append(errs, field.NotSupported(spec.Child("profiles").Index(i), p, ProfileNames()))
		}
	}
	if len(tp.Spec.Profiles) == 0 && len(tp.Spec.Resources) == 0 {
		errs = append(errs, field.Required(spec.Child("resources"), "a policy needs at least one resource rule or one profile"))
	}
	switch tp.Spec.GFDFamilyScheme {
	case "", GFDFamilyCurrent, GFDFamilyLegacy:
	default:
		errs = append(errs, field.NotSupported(spec.Child("gfdFamilyScheme"), tp.Spec.GFDFamilyScheme, []GFDFamilyScheme{GFDFamilyCurrent, GFDFamilyLegacy}))
	}
	errs = append(errs, validateRules(spec, &tp.Spec)...)
	return errs
}

// validateRules checks each rule on its own; validateReferences checks references
// between rules once profiles are included.
func validateRules(spec *field.Path, s *PolicySpec) field.ErrorList {
	var errs field.ErrorList
	for i := range s.Resources {
		errs = append(errs, validateResourceRule(spec.Child("resources").Index(i), &s.Resources[i])...)
	}
	for i := range s.NodeLabels {
		errs = append(errs, validateNodeLabelRule(spec.Child("nodeLabels").Index(i), &s.NodeLabels[i])...)
	}
	for i := range s.Alignment {
		errs = append(errs, validateAlignmentRule(spec.Child("alignment").Index(i), &s.Alignment[i])...)
	}
	for i := range s.Fallbacks {
		errs = append(errs, validateFallbackRule(spec.Child("fallbacks").Index(i), &s.Fallbacks[i])...)
	}
	return errs
}

func validateResourceRule(p *field.Path, r *ResourceRule) field.ErrorList {
	var errs field.ErrorList
	base, pattern := strings.CutSuffix(r.Name, "*")
	switch {
	case r.Name == "":
		errs = append(errs, field.Required(p.Child("name"), "extended resource name"))
	case strings.Contains(base, "*"):
		errs = append(errs, field.Invalid(p.Child("name"), r.Name, "only one trailing '*' is allowed"))
	case !strings.Contains(base, "/") && (!r.KeepInPod || len(r.OnlyWith) == 0):
		errs = append(errs, field.Invalid(p.Child("name"), r.Name, "must be a domain-prefixed extended resource name such as nvidia.com/gpu (native resources only as companions with keepInPod and onlyWith)"))
	default:
		check := base
		if pattern {
			check += "x"
		}
		for _, msg := range validation.IsQualifiedName(check) {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
		}
		if strings.HasPrefix(base, "kubernetes.io/") || strings.HasPrefix(base, "requests.") {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, "not an extended resource name"))
		}
	}
	errs = append(errs, validateDNSLabel(p.Child("family"), r.Family)...)
	if r.DeviceClassName == "" {
		errs = append(errs, field.Required(p.Child("deviceClassName"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(r.DeviceClassName) {
			errs = append(errs, field.Invalid(p.Child("deviceClassName"), r.DeviceClassName, msg))
		}
	}
	if r.RequestName != "" {
		errs = append(errs, validateDNSLabel(p.Child("requestName"), r.RequestName)...)
		if len(r.RequestName) > 20 {
			errs = append(errs, field.TooLong(p.Child("requestName"), r.RequestName, 20))
		}
	}
	switch {
	case !pattern && r.SuffixAttribute != "":
		errs = append(errs, field.Forbidden(p.Child("suffixAttribute"), "only for pattern names ending in '*'"))
	case r.SuffixAttribute != "":
		errs = append(errs, validateQualifiedAttribute(p.Child("suffixAttribute"), r.SuffixAttribute)...)
	}
	for i := range r.Selectors {
		errs = append(errs, validateAttributeRequirement(p.Child("selectors").Index(i), &r.Selectors[i])...)
	}
	if r.Capacity != "" {
		errs = append(errs, validateQualifiedAttribute(p.Child("capacity"), r.Capacity)...)
	}
	if r.KeepInPod && len(r.OnlyWith) == 0 {
		errs = append(errs, field.Required(p.Child("onlyWith"), "keepInPod is only for companion rules"))
	}
	for i, f := range r.OnlyWith {
		errs = append(errs, validateDNSLabel(p.Child("onlyWith").Index(i), f)...)
	}
	for i, c := range r.Config {
		cp := p.Child("config").Index(i)
		if c.Driver == "" {
			errs = append(errs, field.Required(cp.Child("driver"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Subdomain(c.Driver) {
				errs = append(errs, field.Invalid(cp.Child("driver"), c.Driver, msg))
			}
		}
		raw := bytes.TrimSpace(c.Parameters.Raw)
		switch {
		case len(raw) == 0:
			errs = append(errs, field.Required(cp.Child("parameters"), ""))
		case raw[0] != '{':
			errs = append(errs, field.Invalid(cp.Child("parameters"), string(raw), "must be a JSON object"))
		case len(raw) > 10*1024:
			errs = append(errs, field.TooLong(cp.Child("parameters"), "", 10*1024))
		}
	}
	return errs
}

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
		if _, err := literalFor(a.typeOrDefault(), v); err != nil {
			errs = append(errs, field.Invalid(p.Child("values").Index(i), v, err.Error()))
		}
	}
	return errs
}

func (a *AttributeRequirement) typeOrDefault() AttributeType {
	if a.Type == "" {
		return AttrString
	}
	return a.Type
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
	if !slices.Contains(conversions, r.Conversion) {
		errs = append(errs, field.NotSupported(p.Child("conversion"), r.Conversion, conversions))
		return errs
	}
	needAttr := map[Conversion]bool{ConvString: true, ConvInt: true, ConvBool: true, ConvGFDProduct: true,
		ConvGFDFamily: true, ConvVersionMajor: true, ConvVersionMinor: true, ConvVersionPatch: true,
		ConvVersion: true, ConvMap: true}
	switch {
	case needAttr[r.Conversion]:
		if r.Attribute == "" {
			errs = append(errs, field.Required(p.Child("attribute"), "conversion "+string(r.Conversion)+" compares an attribute"))
		}
	case r.Conversion == ConvMiB:
		if r.Capacity == "" {
			errs = append(errs, field.Required(p.Child("capacity"), "conversion MiB compares a capacity"))
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
	return errs
}

func validateAlignmentRule(p *field.Path, r *AlignmentRule) field.ErrorList {
	errs := validateDNSLabel(p.Child("name"), r.Name)
	if len(r.Families) == 0 {
		errs = append(errs, field.Required(p.Child("families"), ""))
	}
	for i, f := range r.Families {
		errs = append(errs, validateDNSLabel(p.Child("families").Index(i), f)...)
		if slices.Index(r.Families, f) != i {
			errs = append(errs, field.Duplicate(p.Child("families").Index(i), f))
		}
	}
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
	if len(r.Alternatives) > maxAlternatives-1 {
		errs = append(errs, field.TooMany(p.Child("alternatives"), len(r.Alternatives), maxAlternatives-1))
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

// validateReferences checks that the families and resources the policy's own
// rules refer to are defined, by the policy or by the profiles it includes.
// Rules of built-in profiles may refer to families of other profiles (a GPU
// and NIC alignment rule); such a rule is inert when the family is absent.
func validateReferences(s, merged *PolicySpec) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	families := map[string]bool{}
	for _, r := range merged.Resources {
		families[r.Family] = true
	}
	for i, r := range s.Resources {
		for j, f := range r.OnlyWith {
			if !families[f] {
				errs = append(errs, field.NotFound(spec.Child("resources").Index(i).Child("onlyWith").Index(j), f))
			}
		}
	}
	for i, r := range s.NodeLabels {
		for j, f := range r.Families {
			if !families[f] {
				errs = append(errs, field.NotFound(spec.Child("nodeLabels").Index(i).Child("families").Index(j), f))
			}
		}
	}
	for i, r := range s.Alignment {
		for j, f := range r.Families {
			if !families[f] {
				errs = append(errs, field.NotFound(spec.Child("alignment").Index(i).Child("families").Index(j), f))
			}
		}
	}
	for i, r := range s.Fallbacks {
		fp := spec.Child("fallbacks").Index(i)
		if _, ok := matchResourceRule(merged.Resources, r.Match.Resource); !ok {
			errs = append(errs, field.NotFound(fp.Child("match", "resource"), r.Match.Resource))
		}
		for j, a := range r.Alternatives {
			if a.Resource == "" {
				continue
			}
			if _, ok := matchResourceRule(merged.Resources, a.Resource); !ok {
				errs = append(errs, field.NotFound(fp.Child("alternatives").Index(j).Child("resource"), a.Resource))
			}
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
