package v1alpha1

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateRules checks each rule on its own; validateReferences checks references
// between rules once profiles are included.
func validateRules(spec *field.Path, s *PolicySpec) field.ErrorList {
	var errs field.ErrorList
	if _, ok := ParseOnUnservable(string(s.OnUnservable)); !ok && s.OnUnservable != "" {
		errs = append(errs, field.NotSupported(spec.Child("onUnservable"), s.OnUnservable, []OnUnservable{OnUnservableAdmit, OnUnservableDeny}))
	}
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
	for i := range s.Partitions {
		errs = append(errs, validatePartitionRule(spec.Child("partitions").Index(i), &s.Partitions[i])...)
	}
	seen := map[string]bool{}
	for i := range s.ShareCapacities {
		errs = append(errs, validateShareCapacityRule(spec.Child("shareCapacities").Index(i), &s.ShareCapacities[i], seen)...)
	}
	seen = map[string]bool{}
	for i := range s.ConsumableShares {
		errs = append(errs, validateConsumableSharesRule(spec.Child("consumableShares").Index(i), &s.ConsumableShares[i], seen)...)
	}
	seen = map[string]bool{}
	for i := range s.MemoryShares {
		r := &s.MemoryShares[i]
		p := spec.Child("memoryShares").Index(i)
		errs = append(errs, validateFamilies(p.Child("families"), r.Families, seen)...)
		if r.Shares < 1 || r.Shares > maxMemoryShares {
			errs = append(errs, field.Invalid(p.Child("shares"), r.Shares, fmt.Sprintf("must be 1 to %d (the time-slicing replicas the workloads ran with)", maxMemoryShares)))
		}
	}
	return errs
}

// validateFamilies checks a rule's list of families: at least one, DNS
// labels, none twice in the list nor named by an earlier rule of the same
// kind (seen).
func validateFamilies(p *field.Path, families []string, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	if len(families) == 0 {
		errs = append(errs, field.Required(p, ""))
	}
	for i, f := range families {
		errs = append(errs, validateDNSLabel(p.Index(i), f)...)
		if seen[f] {
			errs = append(errs, field.Duplicate(p.Index(i), f))
		}
		seen[f] = true
	}
	return errs
}

func validateShareCapacityRule(p *field.Path, r *ShareCapacityRule, seen map[string]bool) field.ErrorList {
	errs := validateFamilies(p.Child("families"), r.Families, seen)
	errs = append(errs, validateQualifiedAttribute(p.Child("capacity"), r.Capacity)...)
	if r.Memory != "" {
		errs = append(errs, validateQualifiedAttribute(p.Child("memory"), r.Memory)...)
	}
	return errs
}

// maxMemoryShares: the most claims a memory share lets share one device.
const maxMemoryShares = 64

// maxShareCounts: a request for a whole device where devices are shared N
// ways takes one alternative per N besides the one for devices that are
// not shared, within firstAvailable's 8.
const maxShareCounts = maxFirstAvailable - 1

// maxFirstAvailable is the most subrequests one firstAvailable list holds
// (the DRA API's limit).
const maxFirstAvailable = resourceapi.FirstAvailableDeviceRequestMaxSize

func validateConsumableSharesRule(p *field.Path, r *ConsumableSharesRule, seen map[string]bool) field.ErrorList {
	errs := validateFamilies(p.Child("families"), r.Families, seen)
	sp := p.Child("shares")
	switch {
	case len(r.Shares) == 0:
		errs = append(errs, field.Required(sp, "the shares each device publishes (the NVIDIA DRA driver's --consumable-shares)"))
	case len(r.Shares) > maxShareCounts:
		errs = append(errs, field.TooMany(sp, len(r.Shares), maxShareCounts))
	}
	for i, n := range r.Shares {
		if n < 1 {
			errs = append(errs, field.Invalid(sp.Index(i), n, "must be at least 1"))
		}
		if slices.Index(r.Shares, n) != i {
			errs = append(errs, field.Duplicate(sp.Index(i), n))
		}
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
	switch {
	case r.SuffixConversion != "" && r.SuffixAttribute == "":
		errs = append(errs, field.Forbidden(p.Child("suffixConversion"), "only with suffixAttribute"))
	case r.SuffixConversion != "" && !slices.Contains(suffixConversions, r.SuffixConversion):
		errs = append(errs, field.NotSupported(p.Child("suffixConversion"), r.SuffixConversion, suffixConversions))
	}
	for i := range r.Selectors {
		errs = append(errs, validateAttributeRequirement(p.Child("selectors").Index(i), &r.Selectors[i])...)
	}
	if r.WholeNodeCount != "" {
		errs = append(errs, validateQualifiedAttribute(p.Child("wholeNodeCount"), r.WholeNodeCount)...)
	}
	if r.Capacity != "" {
		errs = append(errs, validateCapacityName(p.Child("capacity"), r.Capacity)...)
	}
	if r.KeepInPod && len(r.OnlyWith) == 0 {
		errs = append(errs, field.Required(p.Child("onlyWith"), "keepInPod is only for companion rules"))
	}
	if c := r.CardType; c != nil {
		cp := p.Child("cardType")
		switch {
		case r.Capacity != "" || len(r.OnlyWith) > 0:
			errs = append(errs, field.Forbidden(cp, "only for device-count rules"))
		case c.Use == "":
			errs = append(errs, field.Required(cp.Child("use"), "the pod annotation that lists the types the pod may use"))
		}
		for _, a := range [][2]string{{"use", c.Use}, {"noUse", c.NoUse}} {
			if a[1] == "" {
				continue
			}
			for _, msg := range validation.IsQualifiedName(a[1]) {
				errs = append(errs, field.Invalid(cp.Child(a[0]), a[1], msg))
			}
		}
		if c.Attribute == "" {
			errs = append(errs, field.Required(cp.Child("attribute"), "the device attribute that holds the card's type"))
		} else {
			errs = append(errs, validateQualifiedAttribute(cp.Child("attribute"), c.Attribute)...)
		}
		if c.Prefix != "" && strings.ContainsFunc(c.Prefix, func(r rune) bool { return r < 0x20 || r >= 0x7f }) {
			errs = append(errs, field.Invalid(cp.Child("prefix"), c.Prefix, "must be printable ASCII"))
		}
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
		"cardType": r.CardType != nil, "wholeNodeCount": r.WholeNodeCount != "",
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
	case SharingConsumableShares:
		if len(r.Sharing.CapacityRequests) > 0 {
			errs = append(errs, field.Forbidden(sp.Child("capacityRequests"), "mode ConsumableShares requests one share of the family's share capacity (shareCapacities)"))
		}
		if len(r.Config) > 0 {
			errs = append(errs, field.Forbidden(p.Child("config"), "the NVIDIA DRA driver prepares the claims that share a device only when their configurations are equal, and refuses MPS on shared devices"))
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
		errs = append(errs, field.NotSupported(sp.Child("mode"), r.Sharing.Mode, []SharingMode{SharingConsumableShares, SharingConsumableCapacity, SharingClaimConfig}))
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
