package translate

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
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
	path   *field.Path // where loc does not say it (a fallback's); see fieldPath
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

// fieldPath is where the requirement stands in the pod. Requirements read
// from the pod carry only their location, and the path is made when a
// reason names it.
func (r labelReq) fieldPath() *field.Path {
	if r.path != nil {
		return r.path
	}
	return r.loc.fieldPath()
}

// fieldPath is the field path of a location in the pod; nil for locOther.
func (l reqLoc) fieldPath() *field.Path {
	switch l.kind {
	case locSelector:
		return pathNodeSelector.Key(l.key)
	case locRequired:
		return pathRequiredTerms.Index(l.term).Child("matchExpressions").Index(l.expr)
	case locPreferred:
		return pathPreferredTerms.Index(l.term).Child("preference", "matchExpressions").Index(l.expr)
	}
	return nil
}

// String is the string of fieldPath, written in one go: explainLabels
// names and sorts every translated requirement by it.
func (l reqLoc) String() string {
	var b strings.Builder
	switch l.kind {
	case locSelector:
		b.Grow(len("spec.nodeSelector[]") + len(l.key))
		b.WriteString("spec.nodeSelector[")
		b.WriteString(l.key)
		b.WriteByte(']')
	case locRequired:
		b.Grow(128)
		b.WriteString("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[")
		b.WriteString(strconv.Itoa(l.term))
		b.WriteString("].matchExpressions[")
		b.WriteString(strconv.Itoa(l.expr))
		b.WriteByte(']')
	case locPreferred:
		b.Grow(128)
		b.WriteString("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[")
		b.WriteString(strconv.Itoa(l.term))
		b.WriteString("].preference.matchExpressions[")
		b.WriteString(strconv.Itoa(l.expr))
		b.WriteByte(']')
	default:
		return l.fieldPath().String()
	}
	return b.String()
}

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
