// Package celgen writes the CEL of claimbridge's translations: device
// selectors (escaped literals, attribute and capacity accesses guarded with
// has(), typed requirements, shares, card types), the admission webhook's
// matchConditions, and the check that compiles a selector as kube-apiserver
// does. It is translate's, split out of it: pure, and of this module it
// imports only api and api/v1alpha1.
package celgen

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// CEL is generated here and only here. Every literal goes through Quote,
// celInt or a parsed number, so no text from a pod or a policy can change the
// structure of an expression. Every expression is compiled and cost-checked
// the way kube-apiserver checks a new DeviceSelector (environment
// NewExpressions, cost ≤ CELSelectorExpressionMaxCost, length ≤ 10Ki).
//
// Attributes may be missing on a device, and a missing key is a fatal runtime
// error for the allocator, so every access is guarded with has(): a positive
// requirement is "has(a) && p(a)", a negative one "!has(a) || !p(a)" — the
// same semantics as node-selector operators on a missing label.

// Quote returns s as a CEL double-quoted string literal. Printable ASCII
// stays as it is except the quote and the backslash; everything else is a
// \u or \U escape, so the literal is one token whatever s holds.
func Quote(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", errors.New("not valid UTF-8")
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// MustQuote is Quote of a string known to be valid UTF-8.
func MustQuote(s string) string {
	q, err := Quote(s)
	if err != nil {
		// Only reached for strings the policy validation already checked.
		panic(err)
	}
	return q
}

// Attr is a validated "<domain>/<identifier>".
type Attr struct{ Domain, ID string }

// SplitAttr splits a qualified "<domain>/<identifier>".
func SplitAttr(qualified string) Attr {
	d, id, _ := strings.Cut(qualified, "/")
	return Attr{Domain: d, ID: id}
}

// Ref is the CEL access to the attribute; Guard is the presence test.
func (a Attr) Ref() string {
	return "device.attributes[" + MustQuote(a.Domain) + "]." + a.ID
}

func (a Attr) Guard() string { return "has(" + a.Ref() + ")" }

func (a Attr) CapRef() string {
	return "device.capacity[" + MustQuote(a.Domain) + "]." + a.ID
}

func (a Attr) CapGuard() string { return "has(" + a.CapRef() + ")" }

// CapAtLeastMi is "the capacity is n Mi or more".
func (a Attr) CapAtLeastMi(n int64) string {
	return fmt.Sprintf(`%s.compareTo(quantity("%dMi")) >= 0`, a.CapRef(), n)
}

// CapBelowMi is "the capacity is less than n Mi".
func (a Attr) CapBelowMi(n int64) string {
	return fmt.Sprintf(`%s.compareTo(quantity("%dMi")) < 0`, a.CapRef(), n)
}

// CapInMi is "the capacity is in [lo, hi) Mi".
func (a Attr) CapInMi(lo, hi int64) string {
	return "(" + a.CapAtLeastMi(lo) + " && " + a.CapBelowMi(hi) + ")"
}

// Guarded wraps a predicate on a possibly missing attribute.
func Guarded(guard, pred string, negate bool) string {
	if negate {
		return "!" + guard + " || !(" + pred + ")"
	}
	return guard + " && " + pred
}

// StringIn is "a == v" or "a in [v1, v2]" on an expression ref of type string.
func StringIn(ref string, values []string) (string, error) {
	if len(values) == 0 {
		return "", errors.New("no values")
	}
	lits := make([]string, 0, len(values))
	for _, v := range values {
		l, err := Quote(v)
		if err != nil {
			return "", fmt.Errorf("value %q: %w", v, err)
		}
		lits = append(lits, l)
	}
	if len(lits) == 1 {
		return ref + " == " + lits[0], nil
	}
	return ref + " in [" + strings.Join(lits, ", ") + "]", nil
}

// CmpOp maps a node-selector operator to a comparison on compareTo or ints.
func CmpOp(op string) string {
	switch op {
	case "Gt":
		return ">"
	case "Lt":
		return "<"
	default:
		return "=="
	}
}

// SemverLit is a CEL semver literal built from numbers.
func SemverLit(major, minor, patch int64) string {
	return fmt.Sprintf("semver(%q)", fmt.Sprintf("%d.%d.%d", major, minor, patch))
}

// LiteralFor checks that v is a valid value of type t and returns its CEL literal.
func LiteralFor(t v1alpha1.AttributeType, v string) (string, error) {
	if err := t.CheckValue(v); err != nil {
		return "", err
	}
	switch t {
	case v1alpha1.AttrInt:
		n, _ := strconv.ParseInt(v, 10, 64)
		return strconv.FormatInt(n, 10), nil
	case v1alpha1.AttrBool:
		b, _ := strconv.ParseBool(v)
		return strconv.FormatBool(b), nil
	case v1alpha1.AttrVersion:
		ma, mi, pa, _ := v1alpha1.ParseVersion(v)
		return SemverLit(ma, mi, pa), nil
	default:
		return Quote(v)
	}
}

// Requirement turns a typed attribute requirement into CEL.
func Requirement(a Attr, t v1alpha1.AttributeType, op string, values []string) (string, error) {
	if op == "" {
		op = "In"
	}
	switch op {
	case "Exists":
		return a.Guard(), nil
	case "DoesNotExist":
		return "!" + a.Guard(), nil
	}
	lits := make([]string, 0, len(values))
	for _, v := range values {
		l, err := LiteralFor(t, v)
		if err != nil {
			return "", fmt.Errorf("value %q: %w", v, err)
		}
		lits = append(lits, l)
	}
	if len(lits) == 0 {
		return "", errors.New("no values")
	}
	var pred string
	switch {
	case op == "Gt" || op == "Lt":
		if t == v1alpha1.AttrVersion {
			pred = a.Ref() + ".compareTo(" + lits[0] + ") " + CmpOp(op) + " 0"
		} else {
			pred = a.Ref() + " " + CmpOp(op) + " " + lits[0]
		}
	case t == v1alpha1.AttrVersion:
		parts := make([]string, 0, len(lits))
		for _, l := range lits {
			parts = append(parts, a.Ref()+".compareTo("+l+") == 0")
		}
		pred = strings.Join(parts, " || ")
		if len(parts) > 1 {
			pred = "(" + pred + ")"
		}
	case len(lits) == 1:
		pred = a.Ref() + " == " + lits[0]
	default:
		pred = a.Ref() + " in [" + strings.Join(lits, ", ") + "]"
	}
	return Guarded(a.Guard(), pred, op == "NotIn"), nil
}

var celBool = cel.BoolType

// Checker compiles expressions once and remembers the verdict.
type Checker struct {
	mu   sync.Mutex
	seen map[string]error
}

const checkerMaxEntries = 4096

// Check compiles expr as kube-apiserver does for a new DeviceSelector.
func (c *Checker) Check(expr string) error {
	c.mu.Lock()
	err, ok := c.seen[expr]
	c.mu.Unlock()
	if ok {
		return err
	}
	err = CheckSelector(expr)
	c.mu.Lock()
	if c.seen == nil || len(c.seen) >= checkerMaxEntries {
		c.seen = map[string]error{}
	}
	c.seen[expr] = err
	c.mu.Unlock()
	return err
}

// CheckSelector compiles a device selector expression with the DRA CEL
// compiler in the environment kube-apiserver uses for new objects, and
// enforces the API's length and estimated-cost limits.
func CheckSelector(expr string) error {
	if len(expr) > resourceapi.CELSelectorExpressionMaxLength {
		return fmt.Errorf("expression is %d bytes, more than the limit of %d", len(expr), resourceapi.CELSelectorExpressionMaxLength)
	}
	// Compile with the default features; the cost limit of the API applies.
	res := dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: true}).CompileCELExpression(expr, dracel.Options{EnvType: new(environment.NewExpressions)})
	if res.Error != nil {
		return fmt.Errorf("compile %s: %w", expr, res.Error)
	}
	if !res.OutputType.IsExactType(celBool) {
		return fmt.Errorf("expression %s does not evaluate to bool", expr)
	}
	if res.MaxCost > resourceapi.CELSelectorExpressionMaxCost {
		return fmt.Errorf("expression %s has an estimated cost of %d, more than the limit of %d", expr, res.MaxCost, resourceapi.CELSelectorExpressionMaxCost)
	}
	return nil
}
