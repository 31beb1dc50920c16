package translate

import (
	"bytes"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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
	if r.CapacityOf != "" {
		// A capacity of another rule's devices: family and class are that rule's.
		return append(errs, validateCapacityOfRule(p, r, pattern)...)
	}
	errs = append(errs, validateDNSLabel(p.Child("family"), r.Family)...)
	if r.DeviceClassName == "" {
		errs = append(errs, field.Required(p.Child("deviceClassName"), ""))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(r.DeviceClassName) {
			errs = append(errs, field.Invalid(p.Child("deviceClassName"), r.DeviceClassName, msg))
		}
	}
	if r.Unit != nil {
		errs = append(errs, field.Forbidden(p.Child("unit"), "only for capacityOf rules"))
	}
	if r.AbsentValue != nil {
		errs = append(errs, field.Forbidden(p.Child("absentValue"), "only for capacityOf rules"))
	}
	errs = append(errs, validateSharing(p, r)...)
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
		errs = append(errs, validateCapacityName(p.Child("capacity"), r.Capacity)...)
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

// validateCapacityOfRule checks a rule whose quantity is a capacity of the
// devices of another rule (HAMi's gpumem of nvidia.com/gpu).
func validateCapacityOfRule(p *field.Path, r *ResourceRule, pattern bool) field.ErrorList {
	var errs field.ErrorList
	if pattern {
		errs = append(errs, field.Invalid(p.Child("name"), r.Name, "a capacityOf rule names one resource, not a pattern"))
	}
	if strings.HasSuffix(r.CapacityOf, "*") || !strings.Contains(r.CapacityOf, "/") {
		errs = append(errs, field.Invalid(p.Child("capacityOf"), r.CapacityOf, "must name the extended resource of a device-count rule, such as nvidia.com/gpu"))
	}
	if r.CapacityOf == r.Name {
		errs = append(errs, field.Invalid(p.Child("capacityOf"), r.CapacityOf, "a resource cannot be a capacity of itself"))
	}
	if r.Capacity == "" {
		errs = append(errs, field.Required(p.Child("capacity"), "the capacity requested on each device, as the driver publishes it"))
	} else {
		errs = append(errs, validateCapacityName(p.Child("capacity"), r.Capacity)...)
	}
	if r.Unit != nil && r.Unit.Sign() <= 0 {
		errs = append(errs, field.Invalid(p.Child("unit"), r.Unit.String(), "must be positive"))
	}
	if r.AbsentValue != nil && r.AbsentValue.Sign() < 0 {
		errs = append(errs, field.Invalid(p.Child("absentValue"), r.AbsentValue.String(), "must not be negative"))
	}
	forbidden := map[string]bool{
		"family": r.Family != "", "deviceClassName": r.DeviceClassName != "", "requestName": r.RequestName != "",
		"suffixAttribute": r.SuffixAttribute != "", "selectors": len(r.Selectors) > 0, "config": len(r.Config) > 0,
		"keepInPod": r.KeepInPod, "onlyWith": len(r.OnlyWith) > 0, "shared": r.Shared, "sharing": r.Sharing != nil,
	}
	for _, f := range slices.Sorted(maps.Keys(forbidden)) {
		if forbidden[f] {
			errs = append(errs, field.Forbidden(p.Child(f), "a capacityOf rule takes the devices, class and family of its rule"))
		}
	}
	return errs
}

// validateSharing checks shared and sharing: a sharing mode only for a
// shared resource, and what each mode needs.
func validateSharing(p *field.Path, r *ResourceRule) field.ErrorList {
	var errs field.ErrorList
	sp := p.Child("sharing")
	if r.Sharing == nil {
		if r.Shared && len(r.Config) > 0 {
			errs = append(errs, field.Required(sp.Child("mode"), "a shared resource with config is translated only with sharing mode ClaimConfig, which gives every pod a device of its own"))
		}
		return errs
	}
	if !r.Shared {
		errs = append(errs, field.Forbidden(sp, "only for shared resources (shared: true)"))
	}
	if r.Capacity != "" || len(r.OnlyWith) > 0 {
		errs = append(errs, field.Forbidden(sp, "not for capacity or companion rules"))
	}
	switch r.Sharing.Mode {
	case SharingConsumableCapacity:
		for _, k := range slices.Sorted(maps.Keys(r.Sharing.CapacityRequests)) {
			kp := sp.Child("capacityRequests").Key(k)
			errs = append(errs, validateCapacityName(kp, k)...)
			if q := r.Sharing.CapacityRequests[k]; q.Sign() < 0 {
				errs = append(errs, field.Invalid(kp, q.String(), "must not be negative"))
			}
		}
	case SharingClaimConfig:
		if len(r.Config) == 0 {
			errs = append(errs, field.Required(p.Child("config"), "sharing mode ClaimConfig passes the rule's config (e.g. a GpuConfig with TimeSlicing) to the claim"))
		}
		if len(r.Sharing.CapacityRequests) > 0 {
			errs = append(errs, field.Forbidden(sp.Child("capacityRequests"), "only for mode ConsumableCapacity"))
		}
	case "":
		errs = append(errs, field.Required(sp.Child("mode"), ""))
	default:
		errs = append(errs, field.NotSupported(sp.Child("mode"), r.Sharing.Mode, []SharingMode{SharingConsumableCapacity, SharingClaimConfig}))
	}
	return errs
}

// validateCapacityName checks a capacity name as the DRA API accepts one in
// capacity requests: "<name>" (the driver's domain) or "<domain>/<name>".
func validateCapacityName(p *field.Path, v string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if !strings.Contains(v, "/") {
		if len(v) > 32 || !isCIdentifier(v) {
			return field.ErrorList{field.Invalid(p, v, "must be a C identifier of at most 32 characters, or \"<domain>/<name>\"")}
		}
		return nil
	}
	return validateQualifiedAttribute(p, v)
}

// validateSchedulers checks the scheduler entries: each name a DNS
// subdomain, as the API validates spec.schedulerName, none twice; a known
// output; class rules with resources and a value.
func validateSchedulers(p *field.Path, entries []SchedulerEntry) field.ErrorList {
	var errs field.ErrorList
	for i, e := range entries {
		ip := p.Index(i)
		np := ip // a plain name is the entry itself
		if e.Output != "" || e.ClassNameContains != nil || e.ConsumableCapacity != nil {
			np = ip.Child("name")
		}
		if e.Name == "" {
			errs = append(errs, field.Required(np, "a schedulerName"))
			continue
		}
		for _, msg := range validation.IsDNS1123Subdomain(e.Name) {
			errs = append(errs, field.Invalid(np, e.Name, msg))
		}
		if slices.IndexFunc(entries, func(o SchedulerEntry) bool { return o.Name == e.Name }) != i {
			errs = append(errs, field.Duplicate(np, e.Name))
		}
		if e.Output != "" && !slices.Contains(outputProfiles, e.Output) {
			errs = append(errs, field.NotSupported(ip.Child("output"), e.Output, outputProfiles))
		}
		for j, r := range e.ClassNameContains {
			rp := ip.Child("classNameContains").Index(j)
			if len(r.Resources) == 0 {
				errs = append(errs, field.Required(rp.Child("resources"), "the legacy resources the rule is about"))
			}
			for k, n := range r.Resources {
				base, _ := strings.CutSuffix(n, "*")
				if n == "" || strings.Contains(base, "*") || !strings.Contains(base, "/") {
					errs = append(errs, field.Invalid(rp.Child("resources").Index(k), n, "an extended resource name, or a pattern with one trailing '*'"))
				}
			}
			if r.Value == "" {
				errs = append(errs, field.Required(rp.Child("value"), "the string the class name must contain"))
			}
		}
	}
	return errs
}

// validateKueue checks the Kueue rule: an output Kueue accepts, mappings
// with names and classes.
func validateKueue(p *field.Path, k *KueueRule) field.ErrorList {
	var errs field.ErrorList
	switch k.Output {
	case "", OutputExactlyOnly, OutputSkip:
	case OutputFull:
		errs = append(errs, field.Invalid(p.Child("output"), k.Output, "Kueue rejects claims with firstAvailable or allocationMode All (pkg/dra/claims.go); use ExactlyOnly or Skip"))
	default:
		errs = append(errs, field.NotSupported(p.Child("output"), k.Output, []OutputProfile{OutputExactlyOnly, OutputSkip}))
	}
	errs = append(errs, validateKueueMappings(p.Child("deviceClassMappings"), k.DeviceClassMappings)...)
	return errs
}

func validateKueueMappings(p *field.Path, ms []KueueDeviceClassMapping) field.ErrorList {
	var errs field.ErrorList
	for i, m := range ms {
		mp := p.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(mp.Child("name"), "the resource name of the ClusterQueue quota"))
		}
		if len(m.DeviceClassNames) == 0 {
			errs = append(errs, field.Required(mp.Child("deviceClassNames"), ""))
		}
		for j, c := range m.DeviceClassNames {
			for _, msg := range validation.IsDNS1123Subdomain(c) {
				errs = append(errs, field.Invalid(mp.Child("deviceClassNames").Index(j), c, msg))
			}
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
	switch vocabulary[r.Conversion].reads {
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
