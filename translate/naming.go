package translate

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	corev1 "k8s.io/api/core/v1"
)

// nameAll gives requests and alternatives deterministic DNS-label names.
func (t *translation) nameAll() {
	used := map[string]bool{}
	for _, r := range t.requests {
		short := r.use.rule.RequestName
		if short == "" {
			_, after, _ := strings.Cut(strings.TrimSuffix(r.use.rule.Name, "*"), "/")
			short = dnsLabel(after, 20)
			if short == "" {
				short = "dev"
			}
		}
		r.name = uniqueName(dnsLabel(r.use.cname+"-"+short, 63), used)
		if len(r.alts) < 2 {
			continue
		}
		subUsed := map[string]bool{}
		for _, a := range r.alts {
			a.name = uniqueName(altSlug(r, a), subUsed)
			a.ref = r.name + "/" + a.name
		}
	}
}

func uniqueName(base string, used map[string]bool) string {
	name := base
	for i := 2; used[name]; i++ {
		suffix := fmt.Sprintf("-%d", i)
		name = strings.TrimRight(base[:min(len(base), 63-len(suffix))], "-") + suffix
	}
	used[name] = true
	return name
}

// altSlug names an alternative by what distinguishes it: the resource when
// it differs, the label values it came from, a count multiplier and the
// alignment it honours.
func altSlug(r *request, a *alt) string {
	var parts []string
	if a.resource != r.use.resource {
		parts = append(parts, a.rule.RequestName)
		if _, s, ok := strings.Cut(string(a.resource), "/"); ok && a.rule.RequestName == "" {
			parts = append(parts, s)
		}
	}
	for _, l := range a.labels {
		if l.op != corev1.NodeSelectorOpIn {
			continue
		}
		common := !slices.ContainsFunc(r.alts, func(o *alt) bool {
			return !slices.ContainsFunc(o.labels, func(ol *labelReq) bool { return ol == l || l.equal(*ol) })
		})
		if !common {
			parts = append(parts, l.values...)
		}
	}
	if a.count != r.use.count {
		parts = append(parts, fmt.Sprintf("x%d", a.count))
	}
	switch {
	case a.memory && a.shares > 0:
		parts = append(parts, a.shareCap, resource.NewQuantity(a.shares, resource.BinarySI).String())
	case a.memory:
		parts = append(parts, "all-"+a.shareCap)
	}
	if a.shares > 0 && !r.use.share {
		// A whole device of a shared family: all its shares (shares.go).
		parts = append(parts, fmt.Sprintf("%d-%s", a.shares, a.shareCap))
	}
	s := dnsLabel(strings.Join(parts, "-"), 40)
	if s == "" {
		s = "any"
	}
	if a.variantOf != "" {
		s = dnsLabel(s+"-"+a.variantOf, 63)
	}
	return s
}

// dnsLabel lowercases s, replaces what a DNS label cannot hold by "-", and
// cuts it to n characters.
func dnsLabel(s string, n int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := b.String()
	if len(out) > n {
		out = out[:n]
	}
	return strings.Trim(out, "-")
}
