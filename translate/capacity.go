package translate

import (
	"maps"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// Capacities of devices (ResourceRule.CapacityOf). HAMi's device plugin
// reads nvidia.com/gpumem (MiB of each GPU) and nvidia.com/gpucores (percent
// of each GPU's cores) together with nvidia.com/gpu: N, and its DRA driver
// publishes GPUs that allow multiple allocations with the consumable
// capacities memory (bytes) and cores (percent). A capacity use becomes a
// capacity request of the request its container's device use makes, so each
// of the N devices gets that capacity.

// capacityQuantity reads the quantity of a capacity use the way
// deviceQuantity reads a device count: a whole, non-negative number, with a
// request (if given) equal to the limit. Zero counts as not set, as a
// device count of zero does.
func (t *translation) capacityQuantity(c *corev1.Container, u *use) bool {
	lim, hasLim := c.Resources.Limits[u.resource]
	req, hasReq := c.Resources.Requests[u.resource]
	lp := u.path.Child("resources", "limits").Key(string(u.resource))
	if !hasLim {
		lim, lp = req, u.path.Child("resources", "requests").Key(string(u.resource))
	}
	if hasLim && hasReq && req.Cmp(lim) != 0 {
		t.add(say(ReasonRequestLimitMismatch, lp, "%s request %s differs from limit %s; extended resources cannot be overcommitted", u.resource, req.String(), lim.String()))
		return false
	}
	n, ok := wholeNumber(lim)
	if !ok || n < 0 {
		t.add(say(ReasonCapacityNotTranslatable, lp, "%s %s is not a whole, non-negative number", u.resource, lim.String()))
		return false
	}
	unit := int64(1)
	format := resource.DecimalSI
	if u.rule.Unit != nil {
		unit, format = u.rule.Unit.Value(), u.rule.Unit.Format
	}
	if n > math.MaxInt64/unit {
		t.add(say(ReasonCapacityNotTranslatable, lp, "%s %s is too large", u.resource, lim.String()))
		return false
	}
	u.capacity = n
	u.capacities = map[resourceapi.QualifiedName]resource.Quantity{
		resourceapi.QualifiedName(u.rule.Capacity): *resource.NewQuantity(n*unit, format),
	}
	return true
}

// attachCapacities moves every capacity use onto the device use of its
// container, and adds the absent values of the capacities the container did
// not set. It returns true when a capacity cannot go with its device (the
// pod then stays as it is).
func (t *translation) attachCapacities() (invalid bool) {
	owner := func(cu *use) *use {
		for _, du := range t.uses {
			if du.path.String() == cu.path.String() && string(du.resource) == cu.rule.CapacityOf {
				return du
			}
		}
		return nil
	}
	withCapacity := map[corev1.ResourceName]bool{}
	for _, cu := range t.capacityUses {
		lp := cu.path.Child("resources", "limits").Key(string(cu.resource))
		du := owner(cu)
		switch {
		case du == nil:
			t.add(say(ReasonCapacityNotTranslatable, lp,
				"%s is a capacity of %s, which container %s does not ask for (HAMi would give it one device; a claim cannot)", cu.resource, cu.rule.CapacityOf, cu.cname))
			invalid = true
			continue
		case du.init:
			t.add(say(ReasonCapacityNotTranslatable, lp,
				"%s is asked for by init container %s, whose devices would be shared with the app containers' requests and their capacities", cu.resource, cu.cname))
			invalid = true
			continue
		}
		if du.capacities == nil {
			du.capacities = map[resourceapi.QualifiedName]resource.Quantity{}
		}
		maps.Copy(du.capacities, cu.capacities)
		withCapacity[du.resource] = true
	}
	if invalid {
		return true
	}
	for _, du := range t.uses {
		if !withCapacity[du.resource] {
			continue
		}
		if du.init {
			t.add(say(ReasonCapacityNotTranslatable, du.path.Child("resources", "limits").Key(string(du.resource)),
				"init container %s asks for %s, which the pod asks for with capacities: it would reuse an app container's devices within their capacities, where HAMi gives it devices of its own", du.cname, du.resource))
			return true
		}
		if len(du.capacities) == 0 {
			continue
		}
		for _, r := range t.p.capacityRules(string(du.resource)) {
			name := resourceapi.QualifiedName(r.Capacity)
			if _, ok := du.capacities[name]; !ok && r.AbsentValue != nil {
				du.capacities[name] = r.AbsentValue.DeepCopy()
			}
		}
	}
	return false
}

// capacityRules are the capacityOf rules in force for a device resource, in
// policy order.
func (p *Policy) capacityRules(resourceName string) []*v1alpha1.ResourceRule {
	var out []*v1alpha1.ResourceRule
	for i := range p.spec.Resources {
		r := &p.spec.Resources[i]
		if r.CapacityOf != resourceName {
			continue
		}
		if eff, _, ok := p.resourceRule(r.Name); ok && eff == r {
			out = append(out, r)
		}
	}
	return out
}

// capacityRequests are the capacity requests of an alternative of u's
// request: u's own capacity (a capacity rule), the capacities of its
// container (capacityOf) or of its sharing mode, and the alternative's
// shares (shares.go). Alternatives on another DeviceClass (a fallback) get
// none of the use's: their devices may not publish them.
func capacityRequests(u *use, a *alt) *resourceapi.CapacityRequirements {
	class := a.class
	shares := altCapacities(a) // shares.go
	if u.rule.Capacity == "" && (len(u.capacities) == 0 || class != u.rule.DeviceClassName) && len(shares) == 0 {
		return nil
	}
	req := map[resourceapi.QualifiedName]resource.Quantity{}
	maps.Copy(req, shares)
	if u.rule.Capacity != "" {
		req[resourceapi.QualifiedName(u.rule.Capacity)] = *resource.NewQuantity(u.capacity, resource.DecimalSI)
	}
	if class == u.rule.DeviceClassName {
		for k, v := range u.capacities {
			req[k] = v.DeepCopy()
		}
	}
	return &resourceapi.CapacityRequirements{Requests: req}
}

// describeCapacities is " with memory=4000Mi, cores=0 per device" for the
// summary, or "".
func describeCapacities(u *use) string {
	if len(u.capacities) == 0 {
		return ""
	}
	parts := make([]string, 0, len(u.capacities))
	for _, k := range slices.Sorted(maps.Keys(u.capacities)) {
		q := u.capacities[k]
		parts = append(parts, string(k)+"="+q.String())
	}
	return " with " + strings.Join(parts, ", ") + " per device"
}

// stripCapacities removes the capacity resources that went into the claim
// from the translated pod's containers.
func (t *translation) stripCapacities(out *corev1.Pod) {
	for _, cu := range t.capacityUses {
		list := out.Spec.Containers
		if strings.HasPrefix(cu.path.String(), "spec.initContainers") {
			list = out.Spec.InitContainers
		}
		c := &list[cu.idx]
		delete(c.Resources.Limits, cu.resource)
		delete(c.Resources.Requests, cu.resource)
		if len(c.Resources.Limits) == 0 {
			c.Resources.Limits = nil
		}
		if len(c.Resources.Requests) == 0 {
			c.Resources.Requests = nil
		}
	}
}

// capacityLegacyResource is how the legacy view counts a capacity resource
// (translate.Policy.LegacyResource): HAMi's scheduler extender declares
// gpumem and gpucores ignoredByScheduler, so kube-scheduler's resource fit
// never counts them, and the extender checks the free capacity of each GPU
// itself. The view cannot count that either: a node with devices of the
// counted resource offers "as many as asked" (Shared), and the allocator
// decides whether a device has the capacity.
func (p *Policy) capacityLegacyResource(rule *v1alpha1.ResourceRule, name corev1.ResourceName) (DeviceRule, bool) {
	counted, why := v1alpha1.CountedRule(p.spec.Resources, rule.CapacityOf)
	if why != "" {
		return DeviceRule{}, false
	}
	dr, err := deviceRule(counted, string(name), "")
	if err != nil {
		return DeviceRule{}, false
	}
	dr.Shared = true
	return dr, true
}
