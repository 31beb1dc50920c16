package translate

// shareInitRequests follows the device plugin's semantics for init
// containers: a non-restartable init container runs to completion before the
// app containers start, so its devices may be reused by them. It shares the
// request of an app container (or of an earlier init container) for the same
// resource that asks for at least as many devices, the smallest such one.
// Restartable init containers (sidecars) run alongside the app containers and
// keep their own devices. An init container with nothing to share holds its
// devices for the pod's lifetime, which is more than a device plugin would.
func (t *translation) shareInitRequests() {
	var owners []*use
	for _, u := range t.uses {
		if !u.init {
			owners = append(owners, u)
		}
	}
	for _, u := range t.uses {
		if !u.init {
			continue
		}
		var best *use
		for _, o := range owners {
			// A sidecar declared before this init container is already
			// running beside it: its devices are busy.
			if o == u || o.resource != u.resource || o.count < u.count || (o.sidecar && o.idx < u.idx) {
				continue
			}
			if best == nil || o.count < best.count {
				best = o
			}
		}
		if best != nil {
			u.req = &request{use: best} // resolved to best's request later
			t.add(info(ReasonInitContainerSharesDevices, u.path, "init container %s uses the devices of %s for %s (it finishes before they start)", u.cname, best.cname, u.resource))
			continue
		}
		owners = append(owners, u)
		t.add(info(ReasonInitContainerHoldsDevices, u.path, "init container %s gets its own %s devices, held until the pod ends (a device plugin would hand them on)", u.cname, u.resource))
	}
}
