package signature

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/feasibility/identity"
)

// FieldRef is one device field a selector reads: device.attributes[Domain].ID
// or, with Capacity, device.capacity[Domain].ID.
type FieldRef struct {
	Capacity   bool
	Domain, ID string
}

// References is [References], remembered per expression and environment.
func (m *RefsMemo) References(env *celgo.Env, expression string) (refs []FieldRef, ok bool) {
	key := refsKey{env, expression}
	m.mu.Lock()
	r, found := m.m[key]
	m.mu.Unlock()
	if found {
		return r.refs, r.ok
	}
	refs, ok = References(env, expression)
	m.mu.Lock()
	if m.m == nil || len(m.m) >= maxRefsMemo {
		m.m = map[refsKey]refsResult{}
	}
	m.m[key] = refsResult{refs, ok}
	m.mu.Unlock()
	return refs, ok
}

// RefsMemo remembers what each expression references (see [References]):
// every uncached check plans its requests, and parsing the same selectors
// again was a good part of a cold check. The results are read, never
// modified. Bounded: emptied when it holds maxRefsMemo expressions. The
// zero value is ready to use.
type RefsMemo struct {
	mu sync.Mutex
	m  map[refsKey]refsResult
}

const maxRefsMemo = 4096

type refsKey struct {
	env        *celgo.Env
	expression string
}

type refsResult struct {
	refs []FieldRef
	ok   bool
}

// References lists the device fields a CEL selector can read. It recognises only the forms
// device.driver, device.allowMultipleAllocations, device.attributes["<domain>"].<id> and
// device.capacity["<domain>"].<id> (also with has(), .? and [?]); any other use of device
// (a whole domain map bound to a variable, iterated, compared…) makes the expression opaque
// (ok == false), and the caller must then look at the whole device.
func References(env *celgo.Env, expression string) (refs []FieldRef, ok bool) {
	if env == nil {
		return nil, false
	}
	a, iss := env.Parse(expression)
	if iss.Err() != nil {
		return nil, false
	}
	w := &refWalker{ok: true}
	w.walk(a.NativeRep().Expr())
	return w.refs, w.ok
}

type refWalker struct {
	refs []FieldRef
	ok   bool
}

func (w *refWalker) walk(e celast.Expr) {
	if !w.ok || e == nil {
		return
	}
	switch e.Kind() {
	case celast.IdentKind:
		if e.AsIdent() == "device" {
			// The device as a whole.
			w.ok = false
		}
	case celast.SelectKind:
		sel := e.AsSelect()
		if r, ok := domainMap(sel.Operand()); ok {
			w.refs = append(w.refs, FieldRef{Capacity: r.Capacity, Domain: r.Domain, ID: sel.FieldName()})
			return
		}
		if isDevice(sel.Operand()) {
			switch sel.FieldName() {
			case "driver", "allowMultipleAllocations":
				return
			}
			w.ok = false
			return
		}
		w.walk(sel.Operand())
	case celast.CallKind:
		call := e.AsCall()
		if call.FunctionName() == operators.OptSelect && len(call.Args()) == 2 {
			if r, ok := domainMap(call.Args()[0]); ok {
				if id, ok := stringLiteral(call.Args()[1]); ok {
					w.refs = append(w.refs, FieldRef{Capacity: r.Capacity, Domain: r.Domain, ID: id})
					return
				}
			}
		}
		if (call.FunctionName() == operators.Index || call.FunctionName() == operators.OptIndex) && len(call.Args()) == 2 {
			if r, ok := domainMap(call.Args()[0]); ok {
				if id, ok := stringLiteral(call.Args()[1]); ok {
					w.refs = append(w.refs, FieldRef{Capacity: r.Capacity, Domain: r.Domain, ID: id})
					return
				}
			}
		}
		if call.IsMemberFunction() {
			w.walk(call.Target())
		}
		for _, arg := range call.Args() {
			w.walk(arg)
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		if c.IterVar() == "device" || c.IterVar2() == "device" || c.AccuVar() == "device" {
			w.ok = false
			return
		}
		w.walk(c.IterRange())
		w.walk(c.AccuInit())
		w.walk(c.LoopCondition())
		w.walk(c.LoopStep())
		w.walk(c.Result())
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			w.walk(el)
		}
	case celast.MapKind:
		for _, entry := range e.AsMap().Entries() {
			me := entry.AsMapEntry()
			w.walk(me.Key())
			w.walk(me.Value())
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			w.walk(f.AsStructField().Value())
		}
	}
}

// domainMap matches device.attributes["<domain>"] and device.capacity["<domain>"].
func domainMap(e celast.Expr) (FieldRef, bool) {
	if e.Kind() != celast.CallKind {
		return FieldRef{}, false
	}
	call := e.AsCall()
	if call.FunctionName() != operators.Index || len(call.Args()) != 2 {
		return FieldRef{}, false
	}
	target := call.Args()[0]
	if target.Kind() != celast.SelectKind || !isDevice(target.AsSelect().Operand()) || target.AsSelect().IsTestOnly() {
		return FieldRef{}, false
	}
	var r FieldRef
	switch target.AsSelect().FieldName() {
	case "attributes":
	case "capacity":
		r.Capacity = true
	default:
		return FieldRef{}, false
	}
	domain, ok := stringLiteral(call.Args()[1])
	if !ok {
		return FieldRef{}, false
	}
	r.Domain = domain
	return r, true
}

func isDevice(e celast.Expr) bool {
	return e.Kind() == celast.IdentKind && e.AsIdent() == "device"
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// projection is the set of fields read by a selector whose references are known.
type projection struct {
	attrs map[[2]string]bool // domain, id
	caps  map[[2]string]bool
}

func (p *projection) add(refs []FieldRef) {
	for _, r := range refs {
		if r.Capacity {
			p.caps[[2]string{r.Domain, r.ID}] = true
		} else {
			p.attrs[[2]string{r.Domain, r.ID}] = true
		}
	}
}

// keyParts lists the qualified names under which each referenced field may be stored on a
// device of the driver ("<domain>/<id>", or "<id>" in the driver's own domain), in a fixed order.
func (p *projection) keyParts(driver string) (attrs, caps [][2]resourceapi.QualifiedName) {
	names := func(m map[[2]string]bool) [][2]resourceapi.QualifiedName {
		var out [][2]resourceapi.QualifiedName
		for _, k := range slices.SortedFunc(maps.Keys(m), func(a, b [2]string) int {
			return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
		}) {
			n := [2]resourceapi.QualifiedName{resourceapi.QualifiedName(k[0] + "/" + k[1])}
			if k[0] == driver {
				n[1] = resourceapi.QualifiedName(k[1])
			}
			out = append(out, n)
		}
		return out
	}
	return names(p.attrs), names(p.caps)
}

// key returns a string that is equal for two devices of one driver exactly when the fields p
// reads are equal (same presence, same values).
func (p *projection) key(driver string, d *resourceapi.Device, ids []identity.Attribute, attrs, caps [][2]resourceapi.QualifiedName) string {
	var b strings.Builder
	b.WriteString(driver)
	if d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations {
		b.WriteString("\x00multi")
	}
	for _, n := range attrs {
		b.WriteString("\x01")
		a, ok := identity.Lookup(d, ids, n[0])
		if !ok && n[1] != "" {
			a, ok = identity.Lookup(d, ids, n[1])
		}
		if ok {
			b.WriteString(attributeString(a))
		}
	}
	for _, n := range caps {
		b.WriteString("\x02")
		c, ok := d.Capacity[n[0]]
		if !ok && n[1] != "" {
			c, ok = d.Capacity[n[1]]
		}
		if ok {
			b.WriteString(c.Value.String())
		}
	}
	return b.String()
}

func attributeString(a resourceapi.DeviceAttribute) string {
	switch {
	case a.IntValue != nil:
		return "i" + strconv.FormatInt(*a.IntValue, 10)
	case a.BoolValue != nil:
		return "b" + strconv.FormatBool(*a.BoolValue)
	case a.StringValue != nil:
		return "s" + *a.StringValue
	case a.VersionValue != nil:
		return "v" + *a.VersionValue
	case a.IntValues != nil:
		var b strings.Builder
		b.WriteString("I")
		for _, v := range a.IntValues {
			b.WriteString(strconv.FormatInt(v, 10) + ",")
		}
		return b.String()
	case a.BoolValues != nil:
		var b strings.Builder
		b.WriteString("B")
		for _, v := range a.BoolValues {
			b.WriteString(strconv.FormatBool(v) + ",")
		}
		return b.String()
	case a.StringValues != nil:
		return "S" + strconv.Quote(strings.Join(a.StringValues, "\x00"))
	case a.VersionValues != nil:
		return "V" + strconv.Quote(strings.Join(a.VersionValues, "\x00"))
	}
	return "?"
}
