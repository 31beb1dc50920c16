package translate

import (
	"strconv"
	"strings"
)

func (t *translation) summary(tmplName string) string {
	var b strings.Builder
	b.Grow(512)
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
		b.WriteString(strconv.FormatInt(a.shares, 10))
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
