package v1alpha1

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validation of the rules for the rest of the stack: schedulers, Kueue and
// node autoscalers.

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

// validateKueueMappings checks deviceClassMappings, of the policy or of a
// Kueue Configuration.
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

func validateAutoscaling(p *field.Path, a *AutoscalingRule) field.ErrorList {
	var errs field.ErrorList
	if a.DRAAware && len(a.PoolLabels) > 0 {
		errs = append(errs, field.Invalid(p.Child("poolLabels"), a.PoolLabels, "must be empty when draAware is true: no pool is then treated as autoscaled"))
	}
	seen := map[string]bool{}
	for i, k := range a.PoolLabels {
		kp := p.Child("poolLabels").Index(i)
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(kp, k, msg))
		}
		if seen[k] {
			errs = append(errs, field.Duplicate(kp, k))
		}
		seen[k] = true
	}
	return errs
}
