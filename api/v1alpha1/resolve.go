package v1alpha1

import (
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Decode reads one TranslationPolicy document from YAML or JSON. Unknown
// and duplicate fields are rejected with their paths; the document is not
// validated ([Resolve] does).
func Decode(data []byte) (*TranslationPolicy, error) {
	var tp TranslationPolicy
	if err := decodeStrict(data, &tp); err != nil {
		return nil, fmt.Errorf("decode policy: %w", err)
	}
	return &tp, nil
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

// Resolve validates a TranslationPolicy and returns its effective rules:
// those of the built-in profiles it names, in order, then its own, with the
// defaults filled in (gfdFamilyScheme Current, the default-scheduler). An
// error is the first invalid part of the document, with its field path.
func Resolve(tp *TranslationPolicy) (PolicySpec, error) { return resolveSpec(tp, true) }

// ResolveRules is [Resolve] for a policy that names its profiles for their
// rules alone (the default policy, which names every profile): what the
// profiles say of the target cluster (implicitTolerations) does not count.
func ResolveRules(tp *TranslationPolicy) (PolicySpec, error) { return resolveSpec(tp, false) }

func resolveSpec(tp *TranslationPolicy, profilesSpeak bool) (PolicySpec, error) {
	if errs := validatePolicyDocument(tp); len(errs) > 0 {
		return PolicySpec{}, fmt.Errorf("invalid policy: %w", errs.ToAggregate())
	}
	merged := PolicySpec{
		KeepTranslatedNodeLabels: tp.Spec.KeepTranslatedNodeLabels,
		GFDFamilyScheme:          tp.Spec.GFDFamilyScheme,
		Placement:                tp.Spec.Placement,
		Schedulers:               tp.Spec.Schedulers,
		Preemption:               tp.Spec.Preemption,
		ImplicitTolerations:      tp.Spec.ImplicitTolerations,
		Kueue:                    tp.Spec.Kueue,
		Deference:                tp.Spec.Deference,
		WhenDRABusy:              tp.Spec.WhenDRABusy,
		OnUnservable:             tp.Spec.OnUnservable,
		Autoscaling:              tp.Spec.Autoscaling,
	}
	profilesTolerate := false
	for _, name := range tp.Spec.Profiles {
		prof, err := builtinProfile(name)
		if err != nil {
			return PolicySpec{}, err
		}
		appendRules(&merged, &prof.Spec)
		if prof.Spec.ImplicitTolerations != nil && *prof.Spec.ImplicitTolerations {
			profilesTolerate = true
		}
	}
	appendRules(&merged, &tp.Spec)
	if merged.GFDFamilyScheme == "" {
		merged.GFDFamilyScheme = GFDFamilyCurrent
	}
	if len(merged.Schedulers) == 0 {
		merged.Schedulers = SchedulerNames(DefaultScheduler)
	}
	if merged.ImplicitTolerations == nil && profilesTolerate && profilesSpeak {
		// Unset and no profile that names the cluster: nothing is said,
		// and each pod's own node selection may still tell
		// (Policy.RunsExtendedResourceToleration).
		merged.ImplicitTolerations = &profilesTolerate
	}
	if errs := validateReferences(&tp.Spec, &merged); len(errs) > 0 {
		return PolicySpec{}, fmt.Errorf("invalid policy: %w", errs.ToAggregate())
	}
	if errs := resolveCapacityRules(&merged); len(errs) > 0 {
		return PolicySpec{}, fmt.Errorf("invalid policy: %w", errs.ToAggregate())
	}
	return merged, nil
}

func appendRules(dst, src *PolicySpec) {
	dst.Resources = append(dst.Resources, src.Resources...)
	dst.NodeLabels = append(dst.NodeLabels, src.NodeLabels...)
	dst.Alignment = append(dst.Alignment, src.Alignment...)
	dst.Fallbacks = append(dst.Fallbacks, src.Fallbacks...)
	dst.Partitions = append(dst.Partitions, src.Partitions...)
	dst.ShareCapacities = append(dst.ShareCapacities, src.ShareCapacities...)
	dst.ConsumableShares = append(dst.ConsumableShares, src.ConsumableShares...)
	dst.MemoryShares = append(dst.MemoryShares, src.MemoryShares...)
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
	switch tp.Spec.Placement {
	case "", PlacementExact, PlacementSubset, PlacementOff:
	default:
		errs = append(errs, field.NotSupported(spec.Child("placement"), tp.Spec.Placement, []PlacementRule{PlacementExact, PlacementSubset, PlacementOff}))
	}
	if _, ok := ParseWhenDRABusy(string(tp.Spec.WhenDRABusy)); !ok && tp.Spec.WhenDRABusy != "" {
		errs = append(errs, field.NotSupported(spec.Child("whenDRABusy"), tp.Spec.WhenDRABusy, []WhenDRABusy{WhenDRABusyKeepLegacy, WhenDRABusyWait}))
	}
	switch tp.Spec.GFDFamilyScheme {
	case "", GFDFamilyCurrent, GFDFamilyLegacy:
	default:
		errs = append(errs, field.NotSupported(spec.Child("gfdFamilyScheme"), tp.Spec.GFDFamilyScheme, []GFDFamilyScheme{GFDFamilyCurrent, GFDFamilyLegacy}))
	}
	errs = append(errs, validateSchedulers(spec.Child("schedulers"), tp.Spec.Schedulers)...)
	errs = append(errs, validateKueue(spec.Child("kueue"), &tp.Spec.Kueue)...)
	errs = append(errs, validateAutoscaling(spec.Child("autoscaling"), &tp.Spec.Autoscaling)...)
	errs = append(errs, validateRules(spec, &tp.Spec)...)
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
	for i, r := range s.Resources {
		if r.CapacityOf == "" {
			continue
		}
		if _, why := CountedRule(merged.Resources, r.CapacityOf); why != "" {
			errs = append(errs, field.Invalid(spec.Child("resources").Index(i).Child("capacityOf"), r.CapacityOf, why))
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
	for i, r := range s.Partitions {
		for j, f := range r.Families {
			if !families[f] {
				errs = append(errs, field.NotFound(spec.Child("partitions").Index(i).Child("families").Index(j), f))
			}
		}
	}
	shareable, byMemory := map[string]bool{}, map[string]bool{}
	for _, r := range merged.ShareCapacities {
		for _, f := range r.Families {
			shareable[f], byMemory[f] = true, r.Memory != ""
		}
	}
	for i, r := range s.ShareCapacities {
		for j, f := range r.Families {
			if !families[f] {
				errs = append(errs, field.NotFound(spec.Child("shareCapacities").Index(i).Child("families").Index(j), f))
			}
		}
	}
	for i, r := range s.ConsumableShares {
		errs = append(errs, sharedFamilies(spec.Child("consumableShares").Index(i).Child("families"), r.Families, families, shareable,
			"no shareCapacities rule says how its devices count their shares")...)
	}
	for i, r := range s.MemoryShares {
		errs = append(errs, sharedFamilies(spec.Child("memoryShares").Index(i).Child("families"), r.Families, families, byMemory,
			"no shareCapacities rule names the memory capacity of its devices (memory)")...)
	}
	for i, r := range s.Resources {
		if r.Sharing != nil && r.Sharing.Mode == SharingConsumableShares && !shareable[r.Family] {
			errs = append(errs, field.Invalid(spec.Child("resources").Index(i).Child("sharing", "mode"), r.Sharing.Mode,
				fmt.Sprintf("family %s has no share capacity (shareCapacities)", r.Family)))
		}
	}
	for i, r := range s.Fallbacks {
		fp := spec.Child("fallbacks").Index(i)
		if _, _, ok := MatchResourceRule(merged.Resources, r.Match.Resource); !ok {
			errs = append(errs, field.NotFound(fp.Child("match", "resource"), r.Match.Resource))
		}
		for j, a := range r.Alternatives {
			if a.Resource == "" {
				continue
			}
			if _, _, ok := MatchResourceRule(merged.Resources, a.Resource); !ok {
				errs = append(errs, field.NotFound(fp.Child("alternatives").Index(j).Child("resource"), a.Resource))
			}
		}
	}
	return errs
}

// CountedRule is the rule in force for the device-count resource a
// capacityOf rule refers to (the last exact rule of that name), or why
// there is none.
func CountedRule(rules []ResourceRule, name string) (*ResourceRule, string) {
	for i := len(rules) - 1; i >= 0; i-- {
		r := &rules[i]
		if r.Name != name {
			continue
		}
		if r.CapacityOf != "" || r.Capacity != "" || len(r.OnlyWith) > 0 || r.Shared {
			return nil, "must name a device-count rule (not a capacity, companion or shared rule)"
		}
		return r, ""
	}
	return nil, "no resource rule maps it"
}

// resolveCapacityRules gives every capacityOf rule the family and class of
// the rule it refers to, so that lookups by family see it where its devices
// are. The policy's own rules were checked by validateReferences; an error
// here is in a built-in profile.
func resolveCapacityRules(spec *PolicySpec) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.Resources {
		r := &spec.Resources[i]
		if r.CapacityOf == "" {
			continue
		}
		counted, why := CountedRule(spec.Resources, r.CapacityOf)
		if counted == nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "resources").Key(r.Name).Child("capacityOf"), r.CapacityOf, why))
			continue
		}
		r.Family, r.DeviceClassName = counted.Family, counted.DeviceClassName
	}
	return errs
}

// sharedFamilies checks the families of a sharing rule: each one the
// policy has (known), and whose devices a shareCapacities rule describes
// (described; missing says what it lacks).
func sharedFamilies(p *field.Path, fams []string, known, described map[string]bool, missing string) field.ErrorList {
	var errs field.ErrorList
	for j, f := range fams {
		switch {
		case !known[f]:
			errs = append(errs, field.NotFound(p.Index(j), f))
		case !described[f]:
			errs = append(errs, field.Invalid(p.Index(j), f, missing))
		}
	}
	return errs
}
