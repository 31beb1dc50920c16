package celgen

import (
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ShareSelector keeps a request on devices that several claims share
// through the capacity.
func ShareSelector(capacity Attr) string {
	return "device.allowMultipleAllocations && " + capacity.CapGuard()
}

// ExclusiveSelector keeps a request for whole devices on devices that one
// claim holds: where devices of a family are shared, a device that allows
// multiple allocations without the share capacity (the NVIDIA driver's
// memory or unlimited sharing) would still be shared.
const ExclusiveSelector = "!device.allowMultipleAllocations"

// SharesOf keeps a request on shared devices of exactly n shares.
func SharesOf(capacity Attr, n int64) string {
	return ShareSelector(capacity) + " && " + capacity.CapRef() + ".compareTo(quantity(" + MustQuote(strconv.FormatInt(n, 10)) + ")) == 0"
}

// Shared is the predicate of a device shared through capacity c, in n ways
// when n > 0.
func Shared(c Attr, n int64) string {
	if n > 0 {
		return SharesOf(c, n)
	}
	return ShareSelector(c)
}

// Or joins predicates with ||, in parentheses when there are several.
func Or(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " || ") + ")"
}

// Not is the negation of a predicate.
func Not(pred string) string {
	if pred == ExclusiveSelector {
		return "device.allowMultipleAllocations"
	}
	return "!(" + pred + ")"
}

// The Go side of the same vocabulary: what a device publishes of shares.

// DeviceShares is how many shares a device publishes in the capacity
// ("<domain>/<name>"): ok only when the device allows multiple allocations
// and publishes the capacity (under its qualified name, or its bare name
// when the capacity is of the device's driver's domain) as a whole number
// of at least 1.
func DeviceShares(driver string, d *resourceapi.Device, capacity string) (int64, bool) {
	if d == nil || d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
		return 0, false
	}
	c, ok := d.Capacity[resourceapi.QualifiedName(capacity)]
	if !ok {
		domain, id, _ := strings.Cut(capacity, "/")
		if domain != driver {
			return 0, false
		}
		if c, ok = d.Capacity[resourceapi.QualifiedName(id)]; !ok {
			return 0, false
		}
	}
	n := c.Value.Value()
	if n < 1 || c.Value.Cmp(*resource.NewQuantity(n, resource.DecimalSI)) != 0 {
		return 0, false
	}
	return n, true
}

// SharedForNothing reports whether a device allows multiple allocations
// and a claim that asks it for no capacity consumes none of it: every
// capacity it publishes is requested 0 by default (the NVIDIA DRA driver's
// --consumable-shares=unlimited: memory only, default 0), or it publishes
// none. Any number of such claims share it, so a request for a whole
// device must keep off it.
func SharedForNothing(d *resourceapi.Device) bool {
	if d == nil || d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
		return false
	}
	for _, c := range d.Capacity {
		if c.RequestPolicy == nil || c.RequestPolicy.Default == nil || !c.RequestPolicy.Default.IsZero() {
			return false
		}
	}
	return true
}
