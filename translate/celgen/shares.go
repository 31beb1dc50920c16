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
	c, ok := capacityOf(driver, d, capacity)
	if !ok {
		return 0, false
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

// SharedMemory is what the fleet's devices of a family say of sharing by
// memory: devices that allow multiple allocations, publish the memory
// capacity and no share count (the NVIDIA DRA driver's
// --consumable-shares=memory or unlimited).
type SharedMemory struct {
	// Sizes are their distinct memory capacities, in bytes, sorted.
	Sizes []int64 `json:"sizes,omitempty"`
	// TakesAll: some of them give a claim that asks for no memory all of
	// it (memory mode); the rest give it none (unlimited mode).
	TakesAll bool `json:"takesAll,omitempty"`
	// ForNothing: some of them give a claim that asks for no memory none
	// of it (unlimited mode).
	ForNothing bool `json:"forNothing,omitempty"`
}

// DeviceMemoryShared reads a device shared by memory: its memory in bytes
// and whether a claim that asks for none takes all of it. ok is false
// for a device that does not allow multiple allocations, publishes the
// share count (shares) or no memory capacity (memory), both
// "<domain>/<name>".
func DeviceMemoryShared(driver string, d *resourceapi.Device, shares, memory string) (bytes int64, takesAll, ok bool) {
	if d == nil || d.AllowMultipleAllocations == nil || !*d.AllowMultipleAllocations {
		return 0, false, false
	}
	if _, ok := capacityOf(driver, d, shares); ok {
		return 0, false, false
	}
	c, ok := capacityOf(driver, d, memory)
	if !ok || c.Value.Sign() <= 0 {
		return 0, false, false
	}
	takesAll = c.RequestPolicy == nil || c.RequestPolicy.Default == nil || !c.RequestPolicy.Default.IsZero()
	return c.Value.Value(), takesAll, true
}

// capacityOf is the device's capacity "<domain>/<name>", under its
// qualified name or its bare name when of the device's driver's domain.
func capacityOf(driver string, d *resourceapi.Device, capacity string) (resourceapi.DeviceCapacity, bool) {
	if c, ok := d.Capacity[resourceapi.QualifiedName(capacity)]; ok {
		return c, true
	}
	domain, id, _ := strings.Cut(capacity, "/")
	if domain != driver {
		return resourceapi.DeviceCapacity{}, false
	}
	c, ok := d.Capacity[resourceapi.QualifiedName(id)]
	return c, ok
}

// MemoryShareSelector keeps a request on devices shared by memory
// (shared through memory, no share count) of exactly bytes of memory; all
// sizes when bytes is 0.
func MemoryShareSelector(shares, memory Attr, bytes int64) string {
	sel := "device.allowMultipleAllocations && !" + shares.CapGuard() + " && " + memory.CapGuard()
	if bytes > 0 {
		sel += " && " + memory.CapRef() + ".compareTo(quantity(" + MustQuote(resource.NewQuantity(bytes, resource.BinarySI).String()) + ")) == 0"
	}
	return sel
}

// MemoryShare is the memory a share of a device of bytes asks for when n
// claims share it: 1/n, rounded down to a MiB (the NVIDIA driver's step),
// at least 1Mi.
func MemoryShare(bytes, n int64) *resource.Quantity {
	mib := max(bytes/n>>20, 1)
	return resource.NewQuantity(mib<<20, resource.BinarySI)
}

// Replicas is how many claims share a device, as the device plugin's
// time-slicing replicas would say: its shares (capacity shares); for a
// device shared by memory (capacity memory), memoryShares when it is set,
// else 0, any number, where a claim that asks for no memory takes none
// (unlimited). shared is false for a device not shared, and for one in
// memory mode when memoryShares is not set (no share is translated there).
func Replicas(driver string, d *resourceapi.Device, shares, memory string, memoryShares int64) (n int64, shared bool) {
	if n, ok := DeviceShares(driver, d, shares); ok {
		return n, true
	}
	if memory == "" {
		return 0, false
	}
	_, takesAll, ok := DeviceMemoryShared(driver, d, shares, memory)
	switch {
	case !ok:
		return 0, false
	case memoryShares > 0:
		return memoryShares, true
	}
	return 0, !takesAll
}
