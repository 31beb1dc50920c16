package translate

import (
	"slices"
	"strings"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// explainLabels says, for every node-label requirement that left the pod,
// what the claim does with it, looking at the final requests:
//
//   - NodeLabelTranslated: it became a selector (or a DeviceClass) of named
//     requests; the template really holds it, and the message names the
//     attribute and the requests so that anyone can check;
//   - NodeLabelImplied: the device request implies it (a presence label such
//     as nvidia.com/gpu.present or an NFD PCI vendor label);
//   - NodeLabelDropped: no device attribute expresses it (nvidia.com/gpu.count,
//     nvidia.com/mig.strategy mixed); it is removed and the placement check
//     compares where the pod lands (decide keeps the pod legacy when no fleet
//     is there to check, NodeLabelUnchecked).
//
// labelFates finds what became of each requirement, expressedOn writes
// the requests that express one. Assumes requests, alternatives and names
// are final and the set of translated requirements is final
// (rewriteNodeConstraints ran).
func (t *translation) explainLabels() {
	fates := t.labelFates()
	// Each path's string once, not once per comparison.
	type located struct {
		loc  reqLoc
		path string
	}
	locs := make([]located, 0, len(t.translated))
	for loc := range t.translated {
		locs = append(locs, located{loc, loc.String()})
	}
	slices.SortFunc(locs, func(a, b located) int { return strings.Compare(a.path, b.path) })
	var b strings.Builder
	for _, l := range locs {
		loc, p := l.loc, l.path
		f := fates[loc]
		switch {
		case f != nil && len(f.requests) > 0:
			amb := t.ambiguous[loc]
			b.Reset()
			b.Grow(256)
			if len(amb) == 0 {
				// The message is written around the groups rather than
				// formatted from a copy of them.
				b.WriteString("became a device selector on ")
			}
			expressedOn(&b, f.requests)
			if len(amb) > 0 {
				t.add(sayAmbiguous(p, b.String(), amb))
				continue
			}
			if loc == t.pinned {
				b.WriteString(" and stays on the pod: KServe's pod webhook puts it there only while the pod asks for nvidia.com/gpu")
			} else {
				b.WriteString(" and was removed from the pod")
			}
			t.add(sayText(ReasonNodeLabelTranslated, p, b.String()))
		case f != nil && f.dropped:
			t.add(sayAt(ReasonNodeLabelDropped, p, "no device attribute expresses it; it was removed from the pod, and the placement check compares where the pod can land with and without it"))
		case t.ambiguous[loc] != nil:
			t.add(sayAt(ReasonNodeLabelAmbiguous, p, "stays on the pod: the devices cannot tell %s, only the node's own label can", strings.Join(t.ambiguous[loc], "; ")))
		default:
			t.add(sayAt(ReasonNodeLabelImplied, p, "the device request implies it; it was removed from the pod"))
		}
	}
}

// labelFate is what the claim does with one requirement.
type labelFate struct {
	requests []expressing // the requests whose alternatives express it, in the order they come
	implied  bool
	dropped  bool
}

// expressing names a request ("<request>" or "<request>/<subrequest>") and
// the attributes or classes of it that express a requirement.
type expressing struct {
	name string
	by   []string
}

// labelFates finds, for every requirement the alternatives of the final
// requests carry, the requests and the attributes or classes that express
// it, in the order the requests and alternatives come, or that the claim
// implies or drops it.
func (t *translation) labelFates() map[reqLoc]*labelFate {
	fates := make(map[reqLoc]*labelFate, len(t.translated))
	alts := 0
	for _, r := range t.requests {
		alts += len(r.alts)
	}
	var byBuf []string
	for _, r := range t.requests {
		for _, a := range r.alts {
			name := ""
			for _, l := range a.labels {
				c := t.convert(*l, a.rule.Family)
				if !c.ok || c.err != nil || c.eff.notForUs {
					continue
				}
				f := fates[l.loc]
				if f == nil {
					f = &labelFate{}
					fates[l.loc] = f
				}
				switch {
				case c.eff.dropped:
					f.dropped = true
				case c.eff.implied:
					f.implied = true
				default:
					if name == "" {
						name = r.name
						if len(r.alts) > 1 {
							name = a.ref
						}
					}
					i := slices.IndexFunc(f.requests, func(w expressing) bool { return w.name == name })
					if i < 0 {
						if f.requests == nil {
							f.requests = make([]expressing, 0, alts)
						}
						// Room for a class and an attribute, the most one
						// requirement gives one alternative, without an
						// allocation of its own.
						if len(byBuf) < 2 {
							byBuf = make([]string, 2*alts)
						}
						f.requests = append(f.requests, expressing{name: name, by: byBuf[:0:2]})
						byBuf = byBuf[2:]
						i = len(f.requests) - 1
					}
					w := &f.requests[i]
					if c.eff.class != "" {
						w.by = appendNew(w.by, c.byClass)
					}
					if len(c.eff.selectors) > 0 {
						w.by = appendNew(w.by, c.bySelectors)
					}
				}
			}
		}
	}
	return fates
}

// expressedOn writes the requests that express a requirement: requests
// whose alternatives it turned alike are named together; alternatives it
// moved to another DeviceClass (an In list of a full GPU and a MIG slice)
// apart: a group per distinct list of attributes, in the order they first
// come ("<attributes> of request a, b; on <attributes> of request c").
func expressedOn(b *strings.Builder, requests []expressing) {
	done := make([]bool, len(requests))
	joined := make([]string, len(requests))
	for i, w := range requests {
		joined[i] = joinOne(w.by, " and ")
	}
	for i, w := range requests {
		if done[i] {
			continue
		}
		if i > 0 {
			b.WriteString("; on ")
		}
		b.WriteString(joined[i])
		b.WriteString(" of request ")
		b.WriteString(w.name)
		for j := i + 1; j < len(requests); j++ {
			if !done[j] && joined[j] == joined[i] {
				done[j] = true
				b.WriteString(", ")
				b.WriteString(requests[j].name)
			}
		}
	}
}

// joinOne is strings.Join without a new string for a list of one.
func joinOne(list []string, sep string) string {
	if len(list) == 1 {
		return list[0]
	}
	return strings.Join(list, sep)
}

// expressedBy names the attribute or capacity a rule's selectors read
// (for the sharing labels, whether the device allows multiple
// allocations, and its share capacity where a selector reads it).
func expressedBy(rule *v1alpha1.NodeLabelRule, eff effect) string {
	switch {
	case rule.Conversion == v1alpha1.ConvReplicas || rule.Conversion == v1alpha1.ConvSharingStrategy:
		ref := celgen.SplitAttr(rule.Capacity).CapRef()
		if slices.ContainsFunc(eff.selectors, func(s string) bool { return strings.Contains(s, ref) }) {
			return "allowMultipleAllocations and capacity " + rule.Capacity
		}
		return "allowMultipleAllocations"
	case rule.Capacity != "":
		return "capacity " + rule.Capacity
	case rule.Attribute != "":
		return rule.Attribute
	case rule.MIGProfileAttribute != "":
		return rule.MIGProfileAttribute
	}
	return string(rule.Conversion)
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
