// Package allocview gives the upstream allocator (k8s.io/dynamic-resource-allocation
// structured) one node's devices with its selectors already answered.
//
// The allocator evaluates the CEL selectors of a request's DeviceClass and of
// the request itself on every device of the node, once per request and
// subrequest, in every Allocate call (isSelectable and selectorsMatch in
// structured/internal/incubating/allocator_incubating.go, v0.37.2): each
// evaluation converts all of the device's attributes for CEL. The caller
// already knows those answers (feasibility's selector memo, evaluated once
// per signature of the fields a selector reads, with the same compiled
// programs). A [View] hands the allocator the same problem with the answers
// written in:
//
//   - every request (and subrequest) with a distinct class and selectors
//     gets one boolean attribute per device under [Domain], true exactly
//     where the class's selectors and then the request's would all match in
//     the allocator's order; the request selects on that attribute alone,
//     or on nothing when every device the view keeps matches it;
//   - the classes keep their name, config and everything else but their
//     selectors, which the attributes stand for;
//   - a device keeps only the attributes the claims' constraints compare
//     (matchAttribute, distinctAttribute) and its other fields (capacity,
//     counters, taints, binding conditions, node selection) as published;
//   - a device no request matches is left out when nothing else reads it:
//     no counters (the allocator subtracts an allocated device's counters
//     from its pool), no binding conditions (they order the pools), not in
//     a slice of per-device node selection (it decides whether the slice
//     concerns the node), and no two devices of one name in a pool (an
//     error the allocator reports).
//
// The allocator then makes every choice itself, on the same pools, slices
// and devices in the same order, with the same matches: its answer is the
// one it gives on the full slices. Build refuses (ok false) whatever it
// cannot write exactly — a selector an answer cannot be given for (it
// fails, or the caller cannot tell), a selector that is not CEL, a class
// the lister does not have, a constraint on an attribute in [Domain], more
// than [MaxGroups] distinct requests — and the caller asks the allocator
// with the full slices. An allocator error on a view should be answered
// the same way: its message is the full allocator's to give.
//
// It imports nothing of claimbridge besides package identity (whose
// devices hold their identities apart): the caller supplies the answers.
package allocview

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/feasibility/identity"
)

// Domain is the attribute domain of the answers written into a view's
// devices. A constraint that compares an attribute of this domain makes
// Build refuse.
const Domain = "selected.claimbridge.io"

// MaxGroups bounds the distinct (class, selectors) pairs of one view.
const MaxGroups = 64

// Answer returns, for one selector expression, its answer on a device of
// the driver: match, and ok false when there is no answer to give (the
// expression fails on the device, or the caller cannot tell).
// ids are the device's identities its attribute map leaves out (package
// identity).
type Answer func(expression string) func(driver string, d *resourceapi.Device, ids []identity.Attribute) (match, ok bool)

// ClassLister is the allocator's lister of DeviceClasses
// (structured.DeviceClassLister).
type ClassLister interface {
	List() ([]*resourceapi.DeviceClass, error)
	Get(name string) (*resourceapi.DeviceClass, error)
}

// View is what the allocator is given for one node instead of the slices,
// claims and classes it reads there.
type View struct {
	Slices  []*resourceapi.ResourceSlice
	Claims  []*resourceapi.ResourceClaim
	Classes ClassLister
	// Dropped counts the devices left out; Groups the distinct requests.
	Dropped, Groups int
}

// group is one distinct pair of a class and request selectors.
type group struct {
	class     *resourceapi.DeviceClass
	selectors []resourceapi.DeviceSelector
	exprs     []func(string, *resourceapi.Device, []identity.Attribute) (bool, bool)
}

// Build makes the view of the slices the allocator reads for one node
// (all of them: the node's own, those of no one node and the other slices
// of their pools), for the claims (defaulted, as the allocator gets them)
// and the classes. ok is false when no exact view can be written.
func Build(slices []*resourceapi.ResourceSlice, claims []*resourceapi.ResourceClaim, classes ClassLister, answer Answer) (View, bool) {
	b := &builder{classes: classes, answer: answer, byKey: map[string]int{}, constrained: map[string]bool{}}
	if !b.groupRequests(claims) {
		return View{}, false
	}
	bits, ok := b.answerDevices(slices)
	if !ok {
		return View{}, false
	}
	v := View{Groups: len(b.groups)}
	uniform := b.uniform(slices, bits)
	v.Slices, v.Dropped = b.slices(slices, bits, uniform)
	v.Claims = b.claims(claims, uniform)
	v.Classes = &noSelectors{ClassLister: classes, m: map[string]*resourceapi.DeviceClass{}}
	return v, true
}

type builder struct {
	classes ClassLister
	answer  Answer
	groups  []group
	byKey   map[string]int
	// at holds, per claim and request (and subrequest), its group.
	at          [][][]int
	constrained map[string]bool // fully qualified names the constraints compare
	// droppable: no two devices of one name in a pool.
	droppable bool
}

// groupRequests numbers the distinct (class, selectors) pairs of the
// claims' requests and collects the attributes their constraints compare.
func (b *builder) groupRequests(claims []*resourceapi.ResourceClaim) bool {
	b.at = make([][][]int, len(claims))
	for ci, c := range claims {
		for _, r := range c.Spec.Devices.Requests {
			var subs []int
			switch {
			case r.Exactly != nil && len(r.FirstAvailable) == 0:
				g, ok := b.group(r.Exactly.DeviceClassName, r.Exactly.Selectors)
				if !ok {
					return false
				}
				subs = append(subs, g)
			case r.Exactly == nil && len(r.FirstAvailable) > 0:
				for _, s := range r.FirstAvailable {
					g, ok := b.group(s.DeviceClassName, s.Selectors)
					if !ok {
						return false
					}
					subs = append(subs, g)
				}
			default:
				return false // invalid: the allocator's to say
			}
			b.at[ci] = append(b.at[ci], subs)
		}
		for _, con := range c.Spec.Devices.Constraints {
			var name *resourceapi.FullyQualifiedName
			switch {
			case con.MatchAttribute != nil:
				name = con.MatchAttribute
			case con.DistinctAttribute != nil:
				name = con.DistinctAttribute
			default:
				return false
			}
			if strings.HasPrefix(string(*name), Domain+"/") {
				return false
			}
			b.constrained[string(*name)] = true
		}
	}
	return true
}

func (b *builder) group(className string, selectors []resourceapi.DeviceSelector) (int, bool) {
	var key strings.Builder
	key.WriteString(className)
	for _, s := range selectors {
		if s.CEL == nil {
			return 0, false
		}
		key.WriteString("\x00" + s.CEL.Expression)
	}
	if g, ok := b.byKey[key.String()]; ok {
		return g, true
	}
	if len(b.groups) >= MaxGroups {
		return 0, false
	}
	class, err := b.classes.Get(className)
	if err != nil || class == nil {
		return 0, false
	}
	g := group{class: class, selectors: selectors}
	for _, s := range class.Spec.Selectors {
		if s.CEL == nil {
			return 0, false
		}
		g.exprs = append(g.exprs, b.answer(s.CEL.Expression))
	}
	for _, s := range selectors {
		g.exprs = append(g.exprs, b.answer(s.CEL.Expression))
	}
	b.groups = append(b.groups, g)
	b.byKey[key.String()] = len(b.groups) - 1
	return len(b.groups) - 1, true
}

// answerDevices answers every group on every device, in slice and device
// order: a bit per group. The class's selectors come first, then the
// request's, each stopping at the first that does not match, as the
// allocator evaluates them; an expression with no answer where the
// allocator would evaluate it makes the view impossible.
func (b *builder) answerDevices(slices []*resourceapi.ResourceSlice) ([][]uint64, bool) {
	bits := make([][]uint64, len(slices))
	names := map[[3]string]bool{}
	b.droppable = true
	for si, sl := range slices {
		bits[si] = make([]uint64, len(sl.Spec.Devices))
		ids := identity.Of(sl)
		for di := range sl.Spec.Devices {
			d := &sl.Spec.Devices[di]
			k := [3]string{sl.Spec.Driver, sl.Spec.Pool.Name, d.Name}
			if names[k] {
				b.droppable = false
			}
			names[k] = true
			for g := range b.groups {
				match := true
				for _, e := range b.groups[g].exprs {
					m, ok := e(sl.Spec.Driver, d, ids.At(di))
					if !ok {
						return nil, false
					}
					if !m {
						match = false
						break
					}
				}
				if match {
					bits[si][di] |= 1 << g
				}
			}
		}
	}
	return bits, true
}

// keep reports whether the view keeps the device: it matches a group, or
// something besides the selectors reads it.
func (b *builder) keep(sl *resourceapi.ResourceSlice, d *resourceapi.Device, bits uint64) bool {
	return bits != 0 || !b.droppable || ptr.Deref(sl.Spec.PerDeviceNodeSelection, false) ||
		len(d.ConsumesCounters) > 0 || len(d.BindingConditions) > 0 || len(d.BindingFailureConditions) > 0
}

// Uniform answers of a group over the devices the view keeps.
const (
	mixed = iota
	allMatch
	noneMatch
)

func (b *builder) uniform(slices []*resourceapi.ResourceSlice, bits [][]uint64) []int {
	var any, all uint64
	all = ^uint64(0)
	for si, sl := range slices {
		for di := range sl.Spec.Devices {
			if !b.keep(sl, &sl.Spec.Devices[di], bits[si][di]) {
				continue
			}
			any |= bits[si][di]
			all &= bits[si][di]
		}
	}
	out := make([]int, len(b.groups))
	for g := range out {
		switch {
		case all&(1<<g) != 0:
			out[g] = allMatch
		case any&(1<<g) == 0:
			out[g] = noneMatch
		}
	}
	return out
}

// slices copies the slices with the devices the view keeps, each with the
// attributes the constraints compare and a group's answer where it is not
// uniform.
func (b *builder) slices(slices []*resourceapi.ResourceSlice, bits [][]uint64, uniform []int) ([]*resourceapi.ResourceSlice, int) {
	out := make([]*resourceapi.ResourceSlice, len(slices))
	dropped := 0
	for si, sl := range slices {
		c := *sl
		c.Spec.Devices = make([]resourceapi.Device, 0, len(sl.Spec.Devices))
		ids := identity.Of(sl)
		for di := range sl.Spec.Devices {
			d := &sl.Spec.Devices[di]
			if !b.keep(sl, d, bits[si][di]) {
				dropped++
				continue
			}
			vd := *d
			vd.Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
			for name, a := range d.Attributes {
				if b.constrained[qualified(sl.Spec.Driver, name)] {
					vd.Attributes[name] = a
				}
			}
			for _, a := range ids.At(di) {
				if b.constrained[qualified(sl.Spec.Driver, a.Name)] {
					vd.Attributes[a.Name] = a.Value
				}
			}
			for g, u := range uniform {
				if u == mixed {
					vd.Attributes[groupAttribute(g)] = resourceapi.DeviceAttribute{BoolValue: ptr.To(bits[si][di]&(1<<g) != 0)}
				}
			}
			c.Spec.Devices = append(c.Spec.Devices, vd)
		}
		out[si] = &c
	}
	return out, dropped
}

// qualified is the fully qualified name of a device's attribute: a name
// without a domain is in the driver's.
func qualified(driver string, name resourceapi.QualifiedName) string {
	if strings.Contains(string(name), "/") {
		return string(name)
	}
	return driver + "/" + string(name)
}

func groupAttribute(g int) resourceapi.QualifiedName {
	return resourceapi.QualifiedName(Domain + "/g" + strconv.Itoa(g))
}

// selectorsOf is what a request of group g selects on in the view.
func selectorsOf(g int, uniform []int) []resourceapi.DeviceSelector {
	var expr string
	switch uniform[g] {
	case allMatch:
		return nil
	case noneMatch:
		expr = "false"
	default:
		expr = fmt.Sprintf("device.attributes[%q].g%d", Domain, g)
	}
	return []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}
}

// claims copies the claims with each request's selectors replaced by its
// group's.
func (b *builder) claims(claims []*resourceapi.ResourceClaim, uniform []int) []*resourceapi.ResourceClaim {
	out := make([]*resourceapi.ResourceClaim, len(claims))
	for ci, claim := range claims {
		c := *claim
		c.Spec.Devices.Requests = make([]resourceapi.DeviceRequest, len(claim.Spec.Devices.Requests))
		for ri, r := range claim.Spec.Devices.Requests {
			if r.Exactly != nil {
				e := *r.Exactly
				e.Selectors = selectorsOf(b.at[ci][ri][0], uniform)
				r.Exactly = &e
			} else {
				subs := make([]resourceapi.DeviceSubRequest, len(r.FirstAvailable))
				for si, s := range r.FirstAvailable {
					s.Selectors = selectorsOf(b.at[ci][ri][si], uniform)
					subs[si] = s
				}
				r.FirstAvailable = subs
			}
			c.Spec.Devices.Requests[ri] = r
		}
		out[ci] = &c
	}
	return out
}

// noSelectors lists the classes without their selectors (the view's
// attributes answer them). Not for concurrent use: one Allocate call.
type noSelectors struct {
	ClassLister
	m map[string]*resourceapi.DeviceClass
}

func (l *noSelectors) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l.m[name]; ok {
		return c, nil
	}
	class, err := l.ClassLister.Get(name)
	if err != nil || class == nil {
		return class, err
	}
	c := *class
	c.Spec.Selectors = nil
	l.m[name] = &c
	return &c, nil
}

func (l *noSelectors) List() ([]*resourceapi.DeviceClass, error) {
	list, err := l.ClassLister.List()
	if err != nil {
		return nil, err
	}
	out := make([]*resourceapi.DeviceClass, len(list))
	for i, c := range list {
		if out[i], err = l.Get(c.Name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Allocator answers Allocate on each node's view, and with Full (the
// allocator over every slice) where Build refuses or the view's allocator
// returns an error: Full's answer and its message are then the ones given.
type Allocator struct {
	Full     structured.Allocator
	Features structured.Features
	// Allocated returns the allocated state to start from, read at each
	// call (a scratch snapshot adds to it in place).
	Allocated func() structured.AllocatedState
	Classes   ClassLister
	CEL       *cel.Cache
	// Node returns the slices the allocator reads for the node and the
	// answers of selectors on their devices.
	Node func(ctx context.Context, node string) ([]*resourceapi.ResourceSlice, Answer)
}

func (a *Allocator) Allocate(ctx context.Context, node *corev1.Node, claims []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error) {
	slices, answer := a.Node(ctx, node.Name)
	view, ok := Build(slices, claims, a.Classes, answer)
	if !ok {
		return a.Full.Allocate(ctx, node, claims)
	}
	alloc, err := structured.NewAllocator(ctx, a.Features, a.Allocated(), view.Classes, view.Slices, a.CEL)
	if err == nil {
		var out []resourceapi.AllocationResult
		if out, err = alloc.Allocate(ctx, node, view.Claims); err == nil {
			return out, nil
		}
	}
	return a.Full.Allocate(ctx, node, claims)
}
