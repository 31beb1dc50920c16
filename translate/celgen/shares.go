package celgen

import (
	"strconv"
	"strings"
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
