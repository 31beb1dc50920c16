package translate

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

// CEL is generated here and only here. Every literal goes through celString,
// celInt or a parsed number, so no text from a pod or a policy can change the
// structure of an expression. Every expression is compiled and cost-checked
// the way kube-apiserver checks a new DeviceSelector (environment
// NewExpressions, cost ≤ CELSelectorExpressionMaxCost, length ≤ 10Ki).
//
// Attributes may be missing on a device, and a missing key is a fatal runtime
// error for the allocator, so every access is guarded with has(): a positive
// requirement is "has(a) && p(a)", a negative one "!has(a) || !p(a)" — the
// same semantics as node-selector operators on a missing label.

// celString returns s as a CEL double-quoted string literal. Printable ASCII
// stays as it is except the quote and the backslash; everything else is a
// \u or \U escape, so the literal is one token whatever s holds.
func celString(s string) (string, error) {
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

func mustCELString(s string) string {
	q, err := celString(s)
	if err != nil {
		// Only reached for strings the policy validation already checked.
		panic(err)
	}
	return q
}

// attrPath is a validated "<domain>/<identifier>".
type attrPath struct{ domain, id string }

func splitAttr(qualified string) attrPath {
	d, id, _ := strings.Cut(qualified, "/")
	return attrPath{domain: d, id: id}
}

// ref is the CEL access to the attribute; guard is the presence test.
func (a attrPath) ref() string {
	return "device.attributes[" + mustCELString(a.domain) + "]." + a.id
}

func (a attrPath) guard() string { return "has(" + a.ref() + ")" }

func (a attrPath) capRef() string {
	return "device.capacity[" + mustCELString(a.domain) + "]." + a.id
}

func (a attrPath) capGuard() string { return "has(" + a.capRef() + ")" }

// guarded wraps a predicate on a possibly missing attribute.
func guarded(guard, pred string, negate bool) string {
	if negate {
		return "!" + guard + " || !(" + pred + ")"
	}
	return guard + " && " + pred
}

// stringIn is "a == v" or "a in [v1, v2]" on an expression ref of type string.
func stringIn(ref string, values []string) (string, error) {
	if len(values) == 0 {
		return "", errors.New("no values")
	}
	lits := make([]string, 0, len(values))
	for _, v := range values {
		l, err := celString(v)
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

// cmpOp maps a node-selector operator to a comparison on compareTo or ints.
func cmpOp(op string) string {
	switch op {
	case "Gt":
		return ">"
	case "Lt":
		return "<"
	default:
		return "=="
	}
}

// semverLit is a CEL semver literal built from numbers.
func semverLit(major, minor, patch int64) string {
	return fmt.Sprintf("semver(%q)", fmt.Sprintf("%d.%d.%d", major, minor, patch))
}

// literalFor checks that v is a valid value of type t and returns its CEL literal.
func literalFor(t v1alpha1.AttributeType, v string) (string, error) {
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
		return semverLit(ma, mi, pa), nil
	default:
		return celString(v)
	}
}

// requirementExpr turns a typed attribute requirement into CEL.
func requirementExpr(a attrPath, t v1alpha1.AttributeType, op string, values []string) (string, error) {
	if op == "" {
		op = "In"
	}
	switch op {
	case "Exists":
		return a.guard(), nil
	case "DoesNotExist":
		return "!" + a.guard(), nil
	}
	lits := make([]string, 0, len(values))
	for _, v := range values {
		l, err := literalFor(t, v)
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
			pred = a.ref() + ".compareTo(" + lits[0] + ") " + cmpOp(op) + " 0"
		} else {
			pred = a.ref() + " " + cmpOp(op) + " " + lits[0]
		}
	case t == v1alpha1.AttrVersion:
		parts := make([]string, 0, len(lits))
		for _, l := range lits {
			parts = append(parts, a.ref()+".compareTo("+l+") == 0")
		}
		pred = strings.Join(parts, " || ")
		if len(parts) > 1 {
			pred = "(" + pred + ")"
		}
	case len(lits) == 1:
		pred = a.ref() + " == " + lits[0]
	default:
		pred = a.ref() + " in [" + strings.Join(lits, ", ") + "]"
	}
	return guarded(a.guard(), pred, op == "NotIn"), nil
}

var celBool = cel.BoolType

// celChecker compiles expressions once and remembers the verdict.
type celChecker struct {
	mu   sync.Mutex
	seen map[string]error
}

const celCheckerMaxEntries = 4096

// check compiles expr as kube-apiserver does for a new DeviceSelector.
func (c *celChecker) check(expr string) error {
	c.mu.Lock()
	err, ok := c.seen[expr]
	c.mu.Unlock()
	if ok {
		return err
	}
	err = CheckSelector(expr)
	c.mu.Lock()
	if c.seen == nil || len(c.seen) >= celCheckerMaxEntries {
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
