package translate

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/podfacts"
)

// collectUses finds the legacy device requests of every container. It
// returns true when the pod asks for devices in a way that cannot be
// translated faithfully (the pod then stays as it is).
func (t *translation) collectUses() (invalid bool) {
	asked := podfacts.ResourceNames(t.pod)
	visit := func(list []corev1.Container, path *field.Path, isInit bool) {
		for i := range list {
			c := &list[i]
			cp := path.Index(i)
			sidecar := isInit && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
			for _, n := range podfacts.ContainerResourceNames(c) {
				rule, suffix, ok := t.p.resourceRule(string(n))
				if !ok {
					if !podfacts.IsExtendedResource(n) {
						continue
					}
					rp := cp.Child("resources", "limits").Key(string(n))
					if mapped, ok := t.p.mappedInDomain(n, asked); ok {
						hint := companionHints[n]
						if hint == "" {
							hint = "map it in the policy (for a capacity of the device: capacityOf) to translate the pod"
						}
						t.add(say(ReasonUnmappedCompanionResource, rp,
							"the policy maps %s but not %s of the same domain, which a device plugin reads with it: translated, the device would lose it and no node offers it alone; %s", mapped, n, hint))
						invalid = true
						continue
					}
					t.add(say(ReasonUnmappedResource, rp, "the policy does not map %s; it stays as it is", n))
					continue
				}
				u := &use{path: cp, idx: i, cname: c.Name, init: isInit && !sidecar, sidecar: sidecar, resource: n, rule: rule, suffix: suffix}
				if len(rule.OnlyWith) > 0 {
					if t.companionQuantity(c, u) {
						t.companions = append(t.companions, u)
					}
					continue
				}
				if rule.CapacityOf != "" {
					if !t.capacityQuantity(c, u) {
						invalid = true
					} else if u.capacity > 0 {
						t.capacityUses = append(t.capacityUses, u)
					}
					continue
				}
				if !t.deviceQuantity(c, u) {
					invalid = true
					continue
				}
				if u.count > 0 {
					if !t.sharedUse(u) {
						invalid = true
						continue
					}
					t.uses = append(t.uses, u)
				}
			}
		}
	}
	visit(t.pod.Spec.InitContainers, pathInitContainers, true)
	visit(t.pod.Spec.Containers, pathContainers, false)
	if t.attachCapacities() {
		invalid = true
	}
	return invalid
}

// companionHints say what to do about known companion resources.
var companionHints = map[corev1.ResourceName]string{
	"nvidia.com/gpumem":            "it is HAMi's memory per GPU in MiB: the hami profile maps it",
	"nvidia.com/gpucores":          "it is HAMi's share of each GPU's cores in percent: the hami profile maps it",
	"nvidia.com/gpumem-percentage": "it is HAMi's share of each GPU's memory in percent, which becomes bytes only on a known GPU, and a claim requests bytes (HAMi's own DRA webhook does not translate it either)",
	"nvidia.com/priority":          "it is HAMi's task priority, which DRA has no counterpart for",
}

// mappedInDomain finds a resource the pod asks for, in the domain of an
// unmapped extended resource, that the policy maps ("nvidia.com/gpu" for
// nvidia.com/gpumem): the two are probably read together by one device
// plugin. A resource the pod does not ask for is never named: a pod that
// asks only for gpu.intel.com/dxg has no companion of gpu.intel.com/i915,
// its resource is simply not mapped.
func (p *Policy) mappedInDomain(n corev1.ResourceName, asked []corev1.ResourceName) (string, bool) {
	domain, _, _ := strings.Cut(string(n), "/")
	for _, a := range asked {
		d, _, ok := strings.Cut(string(a), "/")
		if !ok || d != domain || a == n {
			continue
		}
		if rule, _, ok := p.resourceRule(string(a)); ok && len(rule.OnlyWith) == 0 {
			return string(a), true
		}
	}
	return "", false
}

// deviceQuantity reads a device count the way the API validates extended
// resources: a whole number, and a request (if given) equal to the limit.
func (t *translation) deviceQuantity(c *corev1.Container, u *use) bool {
	lim, hasLim := c.Resources.Limits[u.resource]
	req, hasReq := c.Resources.Requests[u.resource]
	lp := func() *field.Path { return u.limitPath() }
	switch {
	case hasReq && !hasLim:
		t.add(say(ReasonRequestLimitMismatch, u.path.Child("resources", "requests").Key(string(u.resource)), "%s has a request but no limit; extended resources need a limit equal to the request", u.resource))
		return false
	case hasReq && req.Cmp(lim) != 0:
		t.add(say(ReasonRequestLimitMismatch, lp(), "%s request %s differs from limit %s; extended resources cannot be overcommitted", u.resource, req.String(), lim.String()))
		return false
	}
	n, ok := wholeNumber(lim)
	switch {
	case !ok:
		t.add(say(ReasonInvalidQuantity, lp(), "%s %s is not a whole number of devices", u.resource, lim.String()))
		return false
	case n < 0:
		t.add(say(ReasonInvalidQuantity, lp(), "%s %s is negative", u.resource, lim.String()))
		return false
	case n > resourceapi.AllocationResultsMaxSize:
		t.add(say(ReasonTooManyDevices, lp(), "%s %d is more than the %d devices one claim can hold", u.resource, n, resourceapi.AllocationResultsMaxSize))
		return false
	}
	u.count = n
	if u.rule.Capacity != "" {
		u.capacity, u.count = n, 1
	}
	return true
}

// companionQuantity reads a companion resource (CPUs): it is only added for
// whole numbers with request equal to limit; otherwise it is left out.
func (t *translation) companionQuantity(c *corev1.Container, u *use) bool {
	lim, hasLim := c.Resources.Limits[u.resource]
	req, hasReq := c.Resources.Requests[u.resource]
	p := u.path.Child("resources", "limits").Key(string(u.resource))
	if u.init {
		return false
	}
	if !hasLim || !hasReq || req.Cmp(lim) != 0 {
		t.add(say(ReasonCompanionNotAdded, p, "%s is added to the claim only with a request equal to its limit", u.resource))
		return false
	}
	n, ok := wholeNumber(lim)
	if !ok || n <= 0 {
		t.add(say(ReasonCompanionNotAdded, p, "%s %s is not a whole positive number", u.resource, lim.String()))
		return false
	}
	u.count, u.capacity = 1, n
	return true
}

func wholeNumber(q resource.Quantity) (int64, bool) {
	if q.MilliValue()%1000 != 0 {
		return 0, false
	}
	v, ok := q.AsInt64()
	if !ok {
		// Too large for int64 or fractional: not a device count.
		return 0, false
	}
	return v, true
}

// limitPath is the field path of the use's limit, made for a reason that
// names it.
func (u *use) limitPath() *field.Path {
	return u.path.Child("resources", "limits").Key(string(u.resource))
}

// pathString is u.path.String() written directly: the container's path,
// which a reason of most translated pods names.
func (u *use) pathString() string {
	prefix := "spec.containers["
	if u.init || u.sidecar {
		prefix = "spec.initContainers["
	}
	return prefix + strconv.Itoa(u.idx) + "]"
}
