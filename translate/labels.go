package translate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// labelReq is one node-label requirement of the pod: a nodeSelector entry
// (operator In with one value) or a node-affinity expression.
type labelReq struct {
	key    string
	op     corev1.NodeSelectorOperator
	values []string
	path   *field.Path
	loc    reqLoc
}

// reqLoc says where a requirement stands in the pod, cheaply comparable.
type reqLoc struct {
	kind       reqKind
	term, expr int
	key        string // nodeSelector key
}

type reqKind int

const (
	locOther reqKind = iota
	locSelector
	locRequired
	locPreferred
)

func (r labelReq) String() string {
	if r.op == corev1.NodeSelectorOpIn && len(r.values) == 1 {
		return r.key + "=" + r.values[0]
	}
	var b strings.Builder
	r.writeTo(&b)
	return b.String()
}

// writeTo writes what String returns, without a string of its own: the
// summary writes every alternative's requirements into one message.
func (r labelReq) writeTo(b *strings.Builder) {
	b.WriteString(r.key)
	switch r.op {
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		b.WriteByte(' ')
		b.WriteString(string(r.op))
		return
	case corev1.NodeSelectorOpIn:
		if len(r.values) == 1 {
			b.WriteByte('=')
			b.WriteString(r.values[0])
			return
		}
	}
	b.WriteByte(' ')
	b.WriteString(string(r.op))
	b.WriteString(" [")
	for i, v := range r.values {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(v)
	}
	b.WriteByte(']')
}

func (r labelReq) equal(o labelReq) bool {
	return r.key == o.key && r.op == o.op && slices.Equal(r.values, o.values)
}

// effect is what one label requirement means for one request.
type effect struct {
	selectors []string // CEL, ANDed
	class     string   // DeviceClass override (MIG), "" = keep
	implied   bool     // no selector needed: the claim implies it
	dropped   bool     // no selector can express it: the label is dropped
	notForUs  bool     // the rule serves the family, but not this value (NFD vendor)
}

// errNotTranslatable wraps reasons a value cannot be expressed on devices.
var errNotTranslatable = errors.New("not translatable")

func notTranslatable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNotTranslatable, fmt.Sprintf(format, args...))
}
