package signature

// Selector results shared by every check on a snapshot. A device selector
// is a CEL expression over one device; it answers alike on two devices of
// one driver that agree on everything it can read. The memo keeps, per
// selector expression, its answer for each device of the snapshot (a slot
// per device, read without a lock) and for each signature of the fields it
// reads, so a fleet of identical nodes costs a handful of CEL evaluations
// per selector and snapshot generation, whichever check asks: feasibility's
// device index and reasons, the placement proof's legacy view and the
// shares a policy offers read the same answers.
//
// The upstream allocator does not read the memo: it evaluates the selectors
// of what it allocates itself.

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/blang/semver/v4"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/claimbridge/claimbridge/feasibility/identity"
)

// The answers of a selector on a device; 0 is "not known yet".
const (
	MatchYes   uint8 = 1
	MatchNo    uint8 = 2
	MatchError uint8 = 3 // the selector does not compile, or fails on the device
)

// Device is one device as a node sees it, as the memo and the class keys
// read it.
type Device struct {
	// Slot numbers the device in its fleet snapshot: the memo keeps one
	// answer per slot. A slot outside the memo's is evaluated by signature
	// only.
	Slot int
	// Driver publishes the device, as its slice says.
	Driver string
	Device *resourceapi.Device
	// Unknown lists the qualified names of the attributes and capacities
	// the driver publishes that the device leaves out because their values
	// are not known (a forecast's device), sorted.
	Unknown []string
	// Identity holds the device's identity attributes its attribute map
	// leaves out (package identity), sorted by name.
	Identity []identity.Attribute
}

// CEL is the device as a selector reads it, with all its attributes.
func (d Device) CEL() cel.Device {
	return cel.Device{Driver: d.Driver, AllowMultipleAllocations: d.Device.AllowMultipleAllocations,
		Attributes: identity.Merged(d.Device, d.Identity), Capacity: d.Device.Capacity}
}

// maxMemoExprs bounds the expressions one snapshot remembers: each costs
// two bits per device slot. When it is reached the memo starts afresh;
// what a check already holds stays valid.
const maxMemoExprs = 256

// Memo is the memo of one fleet snapshot, shared by the snapshots derived
// from it (their devices are its devices, with the same slots). It is safe
// for concurrent use. A nil Memo remembers nothing across calls.
type Memo struct {
	// slots is the number of device slots (Device.Slot).
	slots int
	// plain holds per slot, two bits: 1 when the device can stand for every
	// device with its signature, 2 when it cannot (see Sharable).
	plain []atomic.Uint32

	mu       sync.Mutex
	exprs    map[exprKey]*Expr
	versions map[string]bool // whether a version string parses
}

// keyParts are the names a projection reads on the devices of one driver
// (projection.keyParts).
type keyParts struct {
	attrs, caps [][2]resourceapi.QualifiedName
}

type exprKey struct {
	cc         *cel.Cache
	expression string
}

// NewMemo returns the memo of a fleet snapshot whose devices are numbered
// from 0 to slots-1.
func NewMemo(slots int) *Memo {
	return &Memo{slots: slots, plain: make([]atomic.Uint32, words(slots)), exprs: map[exprKey]*Expr{}, versions: map[string]bool{}}
}

// Slots is the number of device slots of the memo.
func (m *Memo) Slots() int { return m.slots }

// words is the number of 32-bit words holding two bits per slot.
func words(slots int) int { return (slots + 15) / 16 }

// Expr is what one snapshot knows of one selector expression.
type Expr struct {
	compiled cel.CompilationResult
	// proj lists the fields the expression reads; nil when they cannot be
	// told from its syntax (the expression reads the device as a whole, a
	// map it iterates, a key it computes): such an expression is evaluated
	// once per device, never shared by signature.
	proj *projection
	// row holds the answer per device slot, two bits each; nil when the
	// memo had no room (every device is then evaluated by signature only).
	row []atomic.Uint32

	mu    sync.Mutex
	parts map[string]keyParts // per driver
	bySig map[string]uint8
}

// Expr returns the memo of one expression compiled by cc. A nil memo gives
// one that remembers nothing across calls.
func (m *Memo) Expr(cc *cel.Cache, expression string) *Expr {
	if m == nil {
		return newExprMemo(cc, expression, 0)
	}
	k := exprKey{cc, expression}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.exprs[k]; ok {
		return e
	}
	if len(m.exprs) >= maxMemoExprs {
		m.exprs = map[exprKey]*Expr{}
	}
	e := newExprMemo(cc, expression, m.slots)
	m.exprs[k] = e
	return e
}

func newExprMemo(cc *cel.Cache, expression string, slots int) *Expr {
	e := &Expr{compiled: cc.GetOrCompile(expression), parts: map[string]keyParts{}, bySig: map[string]uint8{}}
	if slots > 0 {
		e.row = make([]atomic.Uint32, words(slots))
	}
	if e.compiled.Error == nil {
		if refs, ok := References(e.compiled.Environment, expression); ok {
			e.proj = &projection{attrs: map[[2]string]bool{}, caps: map[[2]string]bool{}}
			e.proj.add(refs)
		}
	}
	return e
}

// Compiled reports whether the expression compiles: one that does not
// fails on every device.
func (e *Expr) Compiled() bool { return e.compiled.Error == nil }

// ReadsNoIdentity reports whether the expression's references are known
// and none is a per-device identity (classkey.go), which two nodes of one
// class need not share.
func (e *Expr) ReadsNoIdentity() bool {
	if e.compiled.Error != nil {
		return true // it fails on every device alike
	}
	if e.proj == nil {
		return false
	}
	for k := range e.proj.attrs {
		if identity.Names[k[1]] {
			return false
		}
	}
	for k := range e.proj.caps {
		if identity.Names[k[1]] {
			return false
		}
	}
	return true
}

// Match answers the expression on the device: MatchYes, MatchNo or
// MatchError, exactly what evaluating it on the device answers (an
// evaluation cut short by ctx is reported as MatchError and not
// remembered). m is the memo that made e.
func (e *Expr) Match(ctx context.Context, m *Memo, d Device) uint8 {
	if e.compiled.Error != nil {
		return MatchError
	}
	slotted := e.row != nil && d.Slot >= 0 && d.Slot < len(e.row)*16
	w, shift := d.Slot/16, uint(d.Slot%16)*2
	if slotted {
		if v := uint8(e.row[w].Load()>>shift) & 3; v != 0 {
			return v
		}
	}
	sig := ""
	if e.proj != nil && m.Sharable(d) {
		sig = e.signature(d)
		e.mu.Lock()
		v, ok := e.bySig[sig]
		e.mu.Unlock()
		if ok {
			if slotted {
				e.row[w].Or(uint32(v) << shift)
			}
			return v
		}
	}
	ok, _, err := e.compiled.DeviceMatches(ctx, d.CEL())
	v := MatchNo
	switch {
	case err != nil && ctx.Err() != nil:
		return MatchError
	case err != nil:
		v = MatchError
	case ok:
		v = MatchYes
	}
	if slotted {
		e.row[w].Or(uint32(v) << shift)
	}
	if sig != "" {
		e.mu.Lock()
		if len(e.bySig) >= maxSignatures {
			e.bySig = map[string]uint8{}
		}
		e.bySig[sig] = v
		e.mu.Unlock()
	}
	return v
}

// maxSignatures bounds the signatures one expression remembers (a selector
// reading a per-device identity has one per device; the slots hold those).
const maxSignatures = 4096

// signature is equal for two devices of one driver exactly when the fields
// the expression reads are equal (same presence, same values). It is never
// empty: it starts with the driver.
func (e *Expr) signature(d Device) string {
	e.mu.Lock()
	parts, ok := e.parts[d.Driver]
	if !ok {
		parts.attrs, parts.caps = e.proj.keyParts(d.Driver)
		e.parts[d.Driver] = parts
	}
	e.mu.Unlock()
	return "\x03" + e.proj.key(d.Driver, d.Device, d.Identity, parts.attrs, parts.caps)
}

// Sharable reports whether the device's answer may stand for the devices
// with its signature. CEL's view of a device converts every attribute
// before any expression runs, and a failure fails every expression, read or
// not; and two names of one field (qualified and in the driver's domain)
// leave the value it reads to chance. Such a device is evaluated itself.
func (m *Memo) Sharable(d Device) bool {
	if m == nil || d.Slot < 0 || d.Slot >= len(m.plain)*16 {
		return m.plainDevice(d)
	}
	w, shift := d.Slot/16, uint(d.Slot%16)*2
	switch uint8(m.plain[w].Load()>>shift) & 3 {
	case 1:
		return true
	case 2:
		return false
	}
	ok := m.plainDevice(d)
	v := uint32(2)
	if ok {
		v = 1
	}
	m.plain[w].Or(v << shift)
	return ok
}

// plainDevice reports whether every attribute of the device converts to a
// CEL value and no field has two names (a qualified name in the driver's
// domain and the same name without it).
func (m *Memo) plainDevice(d Device) bool {
	for _, a := range d.Identity {
		if !m.convertible(a.Value) {
			return false
		}
		if domain, id, ok := strings.Cut(string(a.Name), "/"); ok && domain == d.Driver {
			if _, dup := identity.Lookup(d.Device, d.Identity, resourceapi.QualifiedName(id)); dup {
				return false
			}
		}
	}
	for name, a := range d.Device.Attributes {
		if !m.convertible(a) {
			return false
		}
		if domain, id, ok := strings.Cut(string(name), "/"); ok && domain == d.Driver {
			if _, dup := identity.Lookup(d.Device, d.Identity, resourceapi.QualifiedName(id)); dup {
				return false
			}
		}
	}
	for name := range d.Device.Capacity {
		if domain, id, ok := strings.Cut(string(name), "/"); ok && domain == d.Driver {
			if _, dup := d.Device.Capacity[resourceapi.QualifiedName(id)]; dup {
				return false
			}
		}
	}
	return true
}

// convertible mirrors cel.CompilationResult's attribute conversion: a value
// of no known type and a version that does not parse fail it.
func (m *Memo) convertible(a resourceapi.DeviceAttribute) bool {
	return convertibleWith(a, m.version)
}

// convertible is convertible without a memo of the versions.
func convertible(a resourceapi.DeviceAttribute) bool {
	return convertibleWith(a, func(v string) bool {
		_, err := semver.Parse(v)
		return err == nil
	})
}

func convertibleWith(a resourceapi.DeviceAttribute, version func(string) bool) bool {
	switch {
	case a.IntValues != nil, a.BoolValues != nil, a.StringValues != nil:
		return true
	case a.VersionValues != nil:
		for _, v := range a.VersionValues {
			if !version(v) {
				return false
			}
		}
		return true
	case a.IntValue != nil, a.BoolValue != nil, a.StringValue != nil:
		return true
	case a.VersionValue != nil:
		return version(*a.VersionValue)
	}
	return false
}

// version reports whether the string parses as a semantic version; a fleet
// publishes few distinct versions, each parsed once.
func (m *Memo) version(v string) bool {
	if m == nil {
		return convertible(resourceapi.DeviceAttribute{VersionValue: &v})
	}
	m.mu.Lock()
	ok, found := m.versions[v]
	m.mu.Unlock()
	if found {
		return ok
	}
	_, err := semver.Parse(v)
	m.mu.Lock()
	if len(m.versions) >= maxSignatures {
		m.versions = map[string]bool{}
	}
	m.versions[v] = err == nil
	m.mu.Unlock()
	return err == nil
}

// MatchAll answers a list of selectors the way the allocator reads them:
// in order, stopping at the first that does not match or fails.
func MatchAll(ctx context.Context, m *Memo, exprs []*Expr, d Device) uint8 {
	for _, e := range exprs {
		if v := e.Match(ctx, m, d); v != MatchYes {
			return v
		}
	}
	return MatchYes
}

// Exprs returns the memos of the CEL selectors, in order.
func Exprs(m *Memo, cc *cel.Cache, selectors []resourceapi.DeviceSelector) []*Expr {
	out := make([]*Expr, 0, len(selectors))
	for _, s := range selectors {
		if s.CEL != nil {
			out = append(out, m.Expr(cc, s.CEL.Expression))
		}
	}
	return out
}

// Answers gives the memo's answers as the allocator's view of a node reads
// them (package allocview): per expression compiled by cc, per device of a
// driver, whether it matches, and ok false where the expression fails.
// slots numbers the devices the memo knows; others are answered by
// signature. ids are the device's identities its attribute map leaves out.
func (m *Memo) Answers(ctx context.Context, cc *cel.Cache, slots map[*resourceapi.Device]int) func(string) func(string, *resourceapi.Device, []identity.Attribute) (bool, bool) {
	return func(expression string) func(string, *resourceapi.Device, []identity.Attribute) (bool, bool) {
		e := m.Expr(cc, expression)
		return func(driver string, d *resourceapi.Device, ids []identity.Attribute) (bool, bool) {
			slot, ok := slots[d]
			if !ok {
				slot = -1
			}
			v := e.Match(ctx, m, Device{Slot: slot, Driver: driver, Device: d, Identity: ids})
			return v == MatchYes, v != MatchError
		}
	}
}
