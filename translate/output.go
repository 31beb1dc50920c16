package translate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxCombinations bounds Result.Combinations; combinations past it are never
// tried (decide tries far fewer).
const maxCombinations = 1 << 20

// singleAlternative makes each request one `exactly` request when the pod's
// output profile is ExactlyOnly: Volcano's queue quota skips firstAvailable
// requests, KAI-Scheduler's allocator fails them, and Kueue rejects them.
// The combinations of one alternative per request are ordered as the
// allocator tries them (the first request's alternatives in preference
// order, each with every combination of the later requests'), and
// Input.Alternative picks one; decide tries them in that order and keeps
// the first the placement check accepts. A preferred-alignment constraint
// stays, on whole requests, when the chosen alternative is its aligned
// variant, and goes when it is not. Assumes the alternatives are final
// (limitAlternatives ran) and not yet named.
func (t *translation) singleAlternative() bool {
	if !t.out.single() {
		return true
	}
	// How many combinations, and which one is each request's only mandatory alternative.
	t.combinations, t.faithful = 1, 0
	for _, r := range t.requests {
		n := len(r.alts)
		mandatory := -1
		for i, a := range r.alts {
			if !a.optional {
				if mandatory >= 0 {
					mandatory = -2
					break
				}
				mandatory = i
			}
		}
		if t.faithful >= 0 && mandatory >= 0 && t.combinations <= maxCombinations/n {
			t.faithful = t.faithful*n + mandatory
		} else {
			t.faithful = -1
		}
		t.combinations = min(t.combinations*n, maxCombinations)
	}
	i := t.in.Alternative
	if i < 0 || i >= t.combinations {
		t.add(say(ReasonNoSingleAlternative, nil, "%s no firstAvailable, and the pod has %d single-alternative translations, not %d", t.out.takesNo(), t.combinations, i+1))
		return false
	}
	// Decode i: the last request's alternative varies fastest.
	choice := make([]int, len(t.requests))
	for j := len(t.requests) - 1; j >= 0; j-- {
		n := len(t.requests[j].alts)
		choice[j] = i % n
		i /= n
	}
	for j, r := range t.requests {
		n := len(r.alts)
		if n == 1 {
			continue
		}
		a := r.alts[choice[j]]
		r.alts = []*alt{a}
		t.chosen = append(t.chosen, requestLabel(r)+": "+describeAlt(a))
		t.add(say(ReasonSingleAlternative, r.use.path, "%s no firstAvailable (output ExactlyOnly): %s keeps alternative %d of %d, %s", t.out.takesNo(), requestLabel(r), choice[j]+1, n, describeAlt(a)))
	}
	// Constraints on variants: whole requests when the variant was chosen.
	cross := false
	t.constraints = slices.DeleteFunc(t.constraints, func(c *constraint) bool {
		if c.variantOf != nil {
			if !slices.Contains(c.variants, c.variantOf.alts[0]) {
				return true // the unaligned alternative: no constraint
			}
			c.whole = append(c.whole, c.variantOf)
			c.variantOf, c.variants = nil, nil
		}
		if len(c.whole) > 1 {
			cross = true
		}
		return false
	})
	t.crossAlign = t.crossAlign && cross
	return true
}

// stackAccepts checks the claim against what the pod's scheduler and Kueue
// can serve and count (the scheduler's profile, SchedulerEntry, and
// KueueRule): classes whose name the scheduler's accounting requires,
// capacity requests only where its allocator honours them, and for a
// Kueue-managed pod only classes Kueue's deviceClassMappings list. Assumes
// the classes of all alternatives are final.
func (t *translation) stackAccepts() bool {
	ok := true
	for _, r := range t.requests {
		for _, rule := range t.out.scheduler.ClassNameContains {
			if !matchesResource(rule.Resources, r.use.resource) {
				continue
			}
			var bad []string
			for _, a := range r.alts {
				if !strings.Contains(strings.ToLower(a.class), strings.ToLower(rule.Value)) {
					bad = appendNew(bad, a.class)
				}
			}
			if len(bad) > 0 {
				t.add(say(ReasonClassNotCountedByScheduler, r.use.limitPath(),
					"scheduler %s accounts %s only on DeviceClasses whose name contains %q, and the translation asks for %s: the pod's devices would escape its queue's quota; it keeps its device-plugin resources",
					t.out.scheduler.Name, r.use.resource, rule.Value, strings.Join(bad, ", ")))
				ok = false
			}
		}
		if cc := t.out.scheduler.ConsumableCapacity; cc != nil && !*cc && (len(r.use.capacities) > 0 || sharedBySelector(r.use.rule) || r.readsSharing()) {
			t.add(say(ReasonCapacityNotSupported, r.use.limitPath(),
				"scheduler %s's allocator does not honour consumable capacity (its profile's consumableCapacity: false): it would ignore the capacity requests of %s and hand the device out whole; the pod keeps its device-plugin resources",
				t.out.scheduler.Name, requestLabel(r)))
			ok = false
		}
	}
	if t.out.kueue != "" {
		mapped := map[string]bool{}
		for _, m := range t.p.spec.Kueue.DeviceClassMappings {
			for _, c := range m.DeviceClassNames {
				mapped[c] = true
			}
		}
		var missing []string
		for _, r := range t.requests {
			for _, a := range r.alts {
				if !mapped[a.class] {
					missing = appendNew(missing, a.class)
				}
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			known := "no mappings are known (set spec.kueue.deviceClassMappings, or pass --kueue-config with Kueue's Configuration)"
			if len(mapped) > 0 {
				known = fmt.Sprintf("the mappings list only %s", strings.Join(slices.Sorted(maps.Keys(mapped)), ", "))
			}
			t.add(say(ReasonKueueClassNotMapped, field.NewPath("metadata", "labels").Key(t.out.kueueKey),
				"the pod is managed by Kueue (%s), which finds a workload inadmissible when a DeviceClass of its claims is not in its Configuration's resources.deviceClassMappings: the translation would use %s, and %s; the pod keeps its device-plugin resources",
				t.out.kueue, strings.Join(missing, ", "), known))
			ok = false
		}
	}
	return ok
}
