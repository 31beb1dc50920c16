package translate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Quota. A translated pod stops counting against requests.<legacy resource>
// (the pod evaluator no longer sees the resource), and its claim counts
// against the quota of its DeviceClasses. The claim is charged when the
// resourceclaim controller creates it from the template (quota admission of
// the ResourceClaim CREATE), not when the pod is admitted: a claim over
// quota leaves the pod Pending with the event FailedResourceClaimCreation,
// where the pod as submitted would have been admitted or refused at once.
//
// What a claim is charged, as kube-apiserver's claim evaluator computes it
// (pkg/quota/v1/evaluator/core/resource_claims.go, v1.37.2):
//   - count/resourceclaims.resource.k8s.io: 1;
//   - <class>.deviceclass.resource.k8s.io/devices: the count of an exactly
//     request; for a firstAvailable request, per class, the largest count
//     among its subrequests of that class ("the worst case per device
//     class"), and the per-class maxima add up over the requests;
//     allocationMode All counts 32 (AllocationResultsMaxSize; claimbridge
//     never makes one);
//   - with DRAExtendedResource (GA and locked on in 1.37), for a class that
//     maps an extended resource (extendedResourceName), the same amount as
//     requests.deviceclass.resource.kubernetes.io/<class> and
//     requests.<extendedResourceName>.
//
// Quotas with scopes never match claims (the claim evaluator matches no
// scope), so only unscoped quotas limit them.

// claimCountQuota is the object-count quota of ResourceClaims.
const claimCountQuota corev1.ResourceName = "count/resourceclaims.resource.k8s.io"

// quotaCovered runs the two quota rules: continuity (a quota on a legacy
// resource the pod gives up must be matched by one on the claim's devices)
// and the claim's charge against what the quotas have left. It records the
// charge (Result.Charge) either way. Assumes the classes of all
// alternatives are final; reads Input.Quotas and Input.Classes.
func (t *translation) quotaCovered() bool {
	t.charge = t.claimCharge()
	return t.quotaContinuity() && t.claimFits()
}

// extendedResourceOf is the extendedResourceName a DeviceClass maps, "" when
// none or the class is not known.
func (t *translation) extendedResourceOf(class string) string {
	for _, c := range t.in.Classes {
		if c != nil && c.Name == class && c.Spec.ExtendedResourceName != nil {
			return *c.Spec.ExtendedResourceName
		}
	}
	return ""
}

// claimCharge is what the claim would be charged (see above).
func (t *translation) claimCharge() map[corev1.ResourceName]int64 {
	charge := map[corev1.ResourceName]int64{claimCountQuota: 1}
	// A request is charged, per class, the most devices one of its
	// alternatives asks for; the sums do not depend on the order classes
	// come in, so the few classes of a request are kept in a list.
	type classMax struct {
		class string
		n     int64
	}
	var perClass []classMax
	for _, r := range t.requests {
		perClass = perClass[:0]
		for _, a := range r.alts {
			if i := slices.IndexFunc(perClass, func(c classMax) bool { return c.class == a.class }); i >= 0 {
				perClass[i].n = max(perClass[i].n, a.count)
			} else {
				perClass = append(perClass, classMax{a.class, a.count})
			}
		}
		for _, c := range perClass {
			class, n := c.class, c.n
			charge[corev1.ResourceName(class+corev1.ResourceClaimsPerClass)] += n
			if ern := t.extendedResourceOf(class); ern != "" {
				charge[corev1.ResourceName(corev1.ResourceImplicitExtendedClaimsPerClass+class)] += n
				charge[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+ern)] += n
			}
		}
	}
	return charge
}

func unscoped(q *corev1.ResourceQuota) bool {
	return len(q.Spec.Scopes) == 0 && q.Spec.ScopeSelector == nil
}

// quotaContinuity keeps the pod legacy when a ResourceQuota of its namespace
// limits a legacy resource it asks for and no quota that can match a claim
// limits the devices of a class it would get instead: translation must not
// escape a quota. A class's devices are limited by
// <class>.deviceclass.resource.k8s.io/devices or, for a class that maps an
// extended resource, by requests.<that resource> or
// requests.deviceclass.resource.kubernetes.io/<class>.
func (t *translation) quotaContinuity() bool {
	limits := map[corev1.ResourceName]bool{}      // any quota: the pod as submitted
	claimLimits := map[corev1.ResourceName]bool{} // unscoped quotas: the claim
	for _, q := range t.in.Quotas {
		if q == nil {
			continue
		}
		for n := range q.Spec.Hard {
			limits[n] = true
			if unscoped(q) {
				claimLimits[n] = true
			}
		}
	}
	if len(limits) == 0 {
		return true
	}
	var missing []string
	for _, r := range t.requests {
		limited := limits[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(r.use.resource))] || limits[r.use.resource]
		if r.use.rule.KeepInPod || !limited {
			continue
		}
		for _, a := range r.alts {
			q := a.class + corev1.ResourceClaimsPerClass
			covered := claimLimits[corev1.ResourceName(q)]
			if ern := t.extendedResourceOf(a.class); ern != "" {
				covered = covered || claimLimits[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+ern)] ||
					claimLimits[corev1.ResourceName(corev1.ResourceImplicitExtendedClaimsPerClass+a.class)]
			}
			if !covered && !slices.Contains(missing, q) {
				missing = append(missing, q)
			}
		}
	}
	if len(missing) == 0 {
		return true
	}
	slices.Sort(missing)
	t.add(say(ReasonQuotaNotCovered, nil, "a ResourceQuota limits the legacy resource, and none limits %s (scoped quotas never limit claims); translating would let the pod escape its quota", strings.Join(missing, ", ")))
	return false
}

// quotaUse is one quota resource against one ResourceQuota.
type quotaUse struct {
	quota             string
	key               corev1.ResourceName
	charge, hard, use int64
}

func (u quotaUse) String() string {
	return fmt.Sprintf("%s: %d (ResourceQuota %s: hard %d, used %d)", u.key, u.charge, u.quota, u.hard, u.use)
}

// against compares a charge with what the quotas have left (hard − used, as
// their status last recorded), in quota and resource name order.
func against(quotas []*corev1.ResourceQuota, charge map[corev1.ResourceName]int64, claim bool) (within, over []quotaUse) {
	qs := slices.DeleteFunc(slices.Clone(quotas), func(q *corev1.ResourceQuota) bool { return q == nil || (claim && !unscoped(q)) })
	slices.SortFunc(qs, func(a, b *corev1.ResourceQuota) int { return strings.Compare(a.Name, b.Name) })
	for _, q := range qs {
		for _, key := range slices.Sorted(maps.Keys(charge)) {
			hard, ok := q.Spec.Hard[key]
			if !ok {
				continue
			}
			used := q.Status.Used[key]
			u := quotaUse{quota: q.Name, key: key, charge: charge[key], hard: hard.Value(), use: used.Value()}
			if u.charge > u.hard-u.use {
				over = append(over, u)
			} else {
				within = append(within, u)
			}
		}
	}
	return within, over
}

// claimFits keeps the pod legacy when its claim's charge is over what an
// unscoped ResourceQuota of the namespace has left (hard − used): the
// resourceclaim controller could not create the claim, and the pod would
// wait Pending. That holds whether or not the pod as submitted fits its
// quota: one that fits runs as submitted; one that does not is refused at
// admission, as before, instead of being admitted to wait. The pod as
// submitted "fits" when its own requests of the resources translation
// removes (requests.<resource>, its effective request) are within what the
// quotas have left; the rest of the pod (CPU, memory) is the same either
// way. The answer is advisory, as the quota status is what the quota
// controller last recorded and other pods may be created meanwhile.
func (t *translation) claimFits() bool {
	within, over := against(t.in.Quotas, t.charge, true)
	if len(over) == 0 {
		for _, u := range within {
			t.add(say(ReasonQuotaCharge, nil, "the claim would be charged %s, within what is left", u))
		}
		return true
	}
	var parts []string
	for _, u := range over {
		parts = append(parts, u.String())
	}
	legacy := map[corev1.ResourceName]int64{}
	requested := t.p.DevicesRequested(t.pod)
	for _, r := range t.requests {
		if !r.use.rule.KeepInPod && requested[r.use.resource] > 0 {
			legacy[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(r.use.resource))] = requested[r.use.resource]
		}
	}
	_, legacyOver := against(t.in.Quotas, legacy, false)
	var asSubmitted string
	if len(legacyOver) == 0 {
		asSubmitted = "the pod as submitted fits its quota and stays as it is"
	} else {
		var lp []string
		for _, u := range legacyOver {
			lp = append(lp, u.String())
		}
		asSubmitted = "the pod as submitted is over its quota too (" + strings.Join(lp, "; ") + ") and stays as it is, so that quota admission refuses it as before instead of admitting it to wait"
	}
	worst := ""
	if slices.ContainsFunc(t.requests, func(r *request) bool { return len(r.alts) > 1 }) {
		worst = " (a firstAvailable request is charged its largest alternative of each class)"
	}
	t.add(say(ReasonQuotaWouldBlockClaim, nil,
		"the claim would be charged %s%s, more than is left: the resourceclaim controller could not create it and the pod would wait Pending (FailedResourceClaimCreation); %s",
		strings.Join(parts, "; "), worst, asSubmitted))
	return false
}
