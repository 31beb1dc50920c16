package translate

import "slices"

// shareInitRequests follows the device plugin's semantics for init
// containers (the scheduler counts a pod as the larger of its app
// containers' and each init container's needs, KEP-753): a non-restartable
// init container runs to completion before the app containers start, so the
// devices it gets may be reused by them.
//
//   - When some use of the same resource asks for at least as many devices —
//     an app container, a sidecar declared after it, or an earlier init
//     container that holds its own — the init container shares the request
//     of the smallest such one.
//   - Otherwise it shares the requests of the set of such uses whose devices
//     come closest to what it needs without exceeding it, and gets a request
//     of its own for the rest: an init container asking for 4 GPUs before an
//     app container asking for 1 refers to the app's request and to one of 3
//     more, 4 devices in all, as a device plugin would give it.
//   - With nothing to share it holds its own devices for the pod's
//     lifetime, which is more than a device plugin would.
//
// Restartable init containers (sidecars) run alongside the app containers
// and keep their own devices; a sidecar declared before an init container is
// running beside it, so its devices are not reused.
func (t *translation) shareInitRequests() {
	var owners []*use
	for _, u := range t.uses {
		if !u.init {
			owners = append(owners, u)
		}
	}
	var out []*use
	for _, u := range t.uses {
		out = append(out, u)
		if !u.init {
			continue
		}
		var best *use
		var usable []*use
		for _, o := range owners {
			if o == u || o.resource != u.resource || (o.sidecar && o.idx < u.idx) {
				continue
			}
			usable = append(usable, o)
			if o.count >= u.count && (best == nil || o.count < best.count) {
				best = o
			}
		}
		if best != nil {
			u.req = &request{use: best} // resolved to best's request later
			t.add(say(ReasonInitContainerSharesDevices, u.path, "init container %s uses the devices of %s for %s (it finishes before they start)", u.cname, best.cname, u.resource))
			continue
		}
		chosen := closestSubset(usable, u.count)
		if len(chosen) == 0 {
			owners = append(owners, u)
			t.add(say(ReasonInitContainerHoldsDevices, u.path, "init container %s gets its own %s devices, held until the pod ends (a device plugin would hand them on)", u.cname, u.resource))
			continue
		}
		var have int64
		names := make([]string, 0, len(chosen))
		for _, o := range chosen {
			have += o.count
			names = append(names, o.cname)
		}
		u.req = &request{use: chosen[0]}
		u.also = chosen[1:]
		if have == u.count {
			t.add(say(ReasonInitContainerSharesDevices, u.path, "init container %s uses the %d %s devices of %s (they start after it finishes)",
				u.cname, have, u.resource, joinAnd(names)))
			continue
		}
		extra := *u
		extra.req, extra.also, extra.extraOf = nil, nil, u
		extra.count = u.count - have
		out = append(out, &extra)
		owners = append(owners, &extra)
		t.add(say(ReasonInitContainerSharesDevices, u.path, "init container %s uses the %d %s devices of %s (they start after it finishes) and %d more of its own, %d in all",
			u.cname, have, u.resource, joinAnd(names), extra.count, u.count))
	}
	t.uses = out
}

// closestSubset picks the uses whose device counts sum closest to want
// without exceeding it (fewest uses on a tie, then the earliest); nil when
// none fits. At most 12 candidates are combined; a pod has few containers.
func closestSubset(uses []*use, want int64) []*use {
	n := min(len(uses), 12)
	var best []*use
	var bestSum int64
	for mask := 1; mask < 1<<n; mask++ {
		var sum int64
		var set []*use
		for i := range n {
			if mask&(1<<i) != 0 {
				sum += uses[i].count
				set = append(set, uses[i])
			}
		}
		if sum > want || sum < bestSum || (sum == bestSum && len(set) >= len(best)) {
			continue
		}
		best, bestSum = set, sum
	}
	return slices.Clip(best)
}

func joinAnd(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	out := names[0]
	for _, n := range names[1 : len(names)-1] {
		out += ", " + n
	}
	return out + " and " + names[len(names)-1]
}
