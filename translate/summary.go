package translate

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

func (t *translation) summary(tmplName string) string {
	var b strings.Builder
	b.Grow(summarySize(tmplName, t.requests))
	b.WriteString("ResourceClaimTemplate ")
	b.WriteString(tmplName)
	b.WriteString(": ")
	for i, r := range t.requests {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.use.cname)
		b.WriteByte('/')
		b.WriteString(string(r.use.resource))
		b.WriteString(" → request ")
		b.WriteString(r.name)
		b.WriteString(" [")
		for j, a := range r.alts {
			if j > 0 {
				b.WriteString(" | ")
			}
			writeAlt(&b, a)
		}
		b.WriteByte(']')
		b.WriteString(describeCapacities(r.use))
	}
	return b.String()
}

// summarySize is about the length of the summary, so that its builder
// grows once: the names and values it writes and room for the words
// around them.
func summarySize(tmplName string, requests []*request) int {
	n := 64 + len(tmplName)
	for _, r := range requests {
		n += 32 + len(r.use.cname) + len(r.use.resource) + len(r.name)
		for _, a := range r.alts {
			n += 48 + len(a.class) + len(a.variantOf) + len(a.shareCap)
			for _, l := range a.shown {
				n += 8 + len(l.key) + len(l.op)
				for _, v := range l.values {
					n += 1 + len(v)
				}
			}
		}
	}
	return n
}

func describeAlt(a *alt) string {
	var b strings.Builder
	writeAlt(&b, a)
	return b.String()
}

func writeAlt(b *strings.Builder, a *alt) {
	b.WriteString(strconv.FormatInt(a.count, 10))
	b.WriteString("× ")
	b.WriteString(a.class)
	for i, l := range a.shown {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString(", ")
		}
		l.writeTo(b)
	}
	if len(a.shown) > 0 {
		b.WriteByte(')')
	}
	if a.variantOf != "" {
		b.WriteString(" aligned by ")
		b.WriteString(a.variantOf)
	}
	if a.shares > 0 {
		b.WriteString(" with ")
		b.WriteString(a.shareCap)
		b.WriteByte('=')
		if a.memory {
			b.WriteString(resource.NewQuantity(a.shares, resource.BinarySI).String())
		} else {
			b.WriteString(strconv.FormatInt(a.shares, 10))
		}
		b.WriteString(" per device")
	}
}

func requestLabel(r *request) string {
	return r.use.cname + "/" + string(r.use.resource)
}

func requestLabels(rs []*request) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, requestLabel(r))
	}
	return strings.Join(parts, " + ")
}
