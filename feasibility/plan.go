package feasibility

// The plan of a check: the requests of the claims as requirements (one per
// request or subrequest), their classes and selectors, and the device index
// that prunes nodes before the allocator runs.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/feasibility/signature"
)

// requirement is one way to satisfy one request: the request itself or one of its subrequests.
type requirement struct {
	claim     int
	request   string // "<req>" or "<req>/<sub>"
	parent    string
	class     *resourceapi.DeviceClass
	selectors []resourceapi.DeviceSelector // class selectors first, then the request's
	mode      resourceapi.DeviceAllocationMode
	count     int64
	admin     bool
	// noPrune: a selector does not compile; let the allocator report it.
	noPrune bool
	// exprs are the memos of the CEL selectors, the class's first (the
	// first classExprs of them).
	exprs      []*signature.Expr
	classExprs int
}

// need is the number of devices one node must offer for the requirement: "All" needs at least
// one ("At least one device is required for 'All' allocation mode").
func (r *requirement) need() int64 {
	if r.mode == resourceapi.DeviceAllocationModeAll {
		return 1
	}
	return r.count
}

// plan is everything derived from the claims once per check.
type plan struct {
	claims []*resourceapi.ResourceClaim
	reqs   []requirement
	// groups[i] lists the requirement indices that are the alternatives of one request;
	// a node is a candidate when every group has an alternative it can satisfy.
	groups [][]int
	// memo answers the selectors on the snapshot's devices.
	memo *signature.Memo
	// byClass: the selectors read no per-device identity and their
	// references are known, so the devices of two nodes of one class
	// answer them alike (classes.go).
	byClass bool
	// answers are the allocator's on nodes with every device free, shared
	// by the checks of a decision (freeanswers.go; nil: not shared), under
	// the claims' key, computed on first use.
	answers *freeAnswers
	snap    *Snapshot
	cc      *cel.Cache
	keyOnce sync.Once
	key     string
}

// claimsKey is claimsKey of the plan's claims.
func (p *plan) claimsKey() string {
	p.keyOnce.Do(func() { p.key = claimsKey(p.claims) })
	return p.key
}

// freeQuery is the plan's claims as the allocator over free devices is
// asked them.
func (p *plan) freeQuery() freeQuery {
	return freeQuery{snap: p.snap, cc: p.cc, key: p.claimsKey(), claims: p.claims}
}

// plan resolves classes and prepares the requirements; reasons are returned for unknown classes.
func (c *Checker) plan(snap *Snapshot, celCache *cel.Cache, claims []*resourceapi.ResourceClaim) (*plan, []string) {
	p := &plan{claims: claims, memo: snap.selectorMemo(), snap: snap, cc: celCache}
	var reasons []string
	addReq := func(r requirement, className string, selectors []resourceapi.DeviceSelector) int {
		class, ok := snap.classes[className]
		if !ok {
			reasons = append(reasons, fmt.Sprintf("request %s: device class %q not found", r.request, className))
			return -1
		}
		r.class = class
		r.selectors = append(slices.Clone(class.Spec.Selectors), selectors...)
		r.exprs = signature.Exprs(p.memo, celCache, r.selectors)
		for _, s := range class.Spec.Selectors {
			if s.CEL != nil {
				r.classExprs++
			}
		}
		for _, e := range r.exprs {
			if !e.Compiled() {
				r.noPrune = true
			}
			p.byClass = p.byClass && e.ReadsNoIdentity()
		}
		p.reqs = append(p.reqs, r)
		return len(p.reqs) - 1
	}
	p.byClass = true
	for ci, claim := range claims {
		for _, req := range claim.Spec.Devices.Requests {
			var group []int
			if req.Exactly != nil {
				e := req.Exactly
				i := addReq(requirement{claim: ci, request: req.Name, parent: req.Name, mode: e.AllocationMode, count: e.Count, admin: ptr.Deref(e.AdminAccess, false)}, e.DeviceClassName, e.Selectors)
				group = append(group, i)
			}
			for _, s := range req.FirstAvailable {
				i := addReq(requirement{claim: ci, request: req.Name + "/" + s.Name, parent: req.Name, mode: s.AllocationMode, count: s.Count}, s.DeviceClassName, s.Selectors)
				group = append(group, i)
			}
			p.groups = append(p.groups, group)
		}
	}
	return p, reasons
}

// matches fills m (2 × len(p.reqs) bytes) with, per requirement, whether the device may match
// ('y'), does not ('n') or could not be evaluated ('?'); then, per requirement again, the same
// for its class's selectors alone (m[len(p.reqs)+i]), which closeness reads.
func (p *plan) matches(ctx context.Context, d *deviceRef, m []byte) {
	n := len(p.reqs)
	char := func(v uint8) byte {
		switch v {
		case signature.MatchYes:
			return 'y'
		case signature.MatchNo:
			return 'n'
		}
		return '?'
	}
	sd := d.sig()
	for i := range p.reqs {
		r := &p.reqs[i]
		if r.noPrune {
			m[i], m[n+i] = '?', '?'
			continue
		}
		// The class's selectors come first: evaluated once for both
		// answers, in the allocator's order.
		m[n+i] = char(signature.MatchAll(ctx, p.memo, r.exprs[:r.classExprs], sd))
		m[i] = m[n+i]
		if m[i] == 'y' {
			m[i] = char(signature.MatchAll(ctx, p.memo, r.exprs[r.classExprs:], sd))
		}
	}
}

// prune decides from the device index alone whether the node cannot satisfy the claims. It is
// conservative: it only rejects a node when some request has no alternative for which the
// node has enough devices passing the class and request selectors (free ones, unless free is
// set or the request has admin access). Devices that allow multiple allocations or whose
// selectors fail to evaluate count as unlimited. Constraints, capacity, device taints and
// devices shared between requests are left to the allocator.
func (p *plan) prune(ctx context.Context, ni *nodeInfo, free bool) string {
	counts := make([]int64, len(p.reqs))
	const unlimited = int64(1) << 40
	m := make([]byte, 2*len(p.reqs))
	for di := range ni.devices {
		d := &ni.devices[di]
		p.matches(ctx, d, m)
		for i := range p.reqs {
			switch m[i] {
			case 'n':
				continue
			case '?':
				counts[i] = unlimited
				continue
			}
			if d.multi {
				counts[i] = unlimited
				continue
			}
			if d.allocated && !free && !p.reqs[i].admin && p.reqs[i].mode != resourceapi.DeviceAllocationModeAll {
				continue
			}
			counts[i]++
		}
	}
	for _, group := range p.groups {
		fits := false
		for _, i := range group {
			if counts[i] >= p.reqs[i].need() {
				fits = true
				break
			}
		}
		if !fits {
			return p.explain(group, counts, free)
		}
	}
	return ""
}

// Ranks of closeness: how near a node comes to serving the device part of
// the claims, whatever else keeps the pod off it (taints, affinity, CPU,
// devices in use, constraints). Reasons name the closest nodes first.
const (
	rankDevices      = iota // enough matching devices for every request
	rankTooFew              // devices that match a request, too few
	rankClass               // devices of a requested class, none matching a request
	rankOtherDevices        // DRA devices, none of a requested class
	rankNoDevices           // no DRA devices
)

// closeness ranks the node (rankDevices … rankNoDevices) from the device
// index, counting every device as free.
func (p *plan) closeness(ctx context.Context, ni *nodeInfo) int {
	if len(ni.devices) == 0 {
		return rankNoDevices
	}
	const unlimited = int64(1) << 40
	n := len(p.reqs)
	counts := make([]int64, n)
	matched, ofClass := false, false
	m := make([]byte, 2*n)
	for di := range ni.devices {
		d := &ni.devices[di]
		p.matches(ctx, d, m)
		for i := range p.reqs {
			if m[n+i] != 'n' {
				ofClass = true
			}
			if m[i] == 'n' {
				continue
			}
			matched = true
			if d.multi || m[i] == '?' {
				counts[i] = unlimited
			} else {
				counts[i]++
			}
		}
	}
	enough := true
	for _, group := range p.groups {
		if !slices.ContainsFunc(group, func(i int) bool { return counts[i] >= p.reqs[i].need() }) {
			enough = false
			break
		}
	}
	switch {
	case matched && enough:
		return rankDevices
	case matched:
		return rankTooFew
	case ofClass:
		return rankClass
	}
	return rankOtherDevices
}

// ranker is a rank function for reason.Nodes.List over the snapshot's nodes:
// the nodes the pod's own node selector and affinity admit come first (the
// pod chose them), each group by closeness.
func (p *plan) ranker(ctx context.Context, snap *Snapshot, required nodeaffinity.RequiredNodeAffinity) func(string) int {
	var byClass []int // closeness by class index - 1, plus one
	return func(node string) int {
		i, ok := snap.nodeIndex(node)
		if !ok {
			return 2*rankNoDevices + 1
		}
		ni := snap.nodes[i]
		var rank int
		if c := ni.classIdx(); p.byClass && c > 0 {
			if c > len(byClass) {
				byClass = append(byClass, make([]int, c-len(byClass))...)
			}
			if byClass[c-1] == 0 {
				byClass[c-1] = p.closeness(ctx, ni) + 1
			}
			rank = byClass[c-1] - 1
		} else {
			rank = p.closeness(ctx, ni)
		}
		if ok, _ := required.Match(ni.node); !ok {
			rank += rankNoDevices + 1
		}
		return rank
	}
}

func (p *plan) explain(group []int, counts []int64, free bool) string {
	r := &p.reqs[group[0]]
	adjective := "free "
	if free {
		adjective = ""
	}
	if len(group) == 1 {
		return fmt.Sprintf("have %d %sdevices of class %s matching request %s (%s)", counts[group[0]], adjective, r.class.Name, r.request, needText(r))
	}
	var parts []string
	for _, i := range group {
		a := &p.reqs[i]
		parts = append(parts, fmt.Sprintf("%s: %d %sof class %s (%s)", a.request, counts[i], adjective, a.class.Name, needText(a)))
	}
	return fmt.Sprintf("have no alternative for request %s: %s", r.parent, joinSemicolon(parts))
}

func needText(r *requirement) string {
	if r.mode == resourceapi.DeviceAllocationModeAll {
		return "needs all, at least 1"
	}
	return "needs " + strconv.FormatInt(r.count, 10)
}

func joinSemicolon(parts []string) string {
	var out string
	for i, s := range parts {
		if i > 0 {
			out += "; "
		}
		out += s
	}
	return out
}
