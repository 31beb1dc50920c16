package feasibility

// Answers that depend on what the fleet does not tell. A forecast fleet
// (claimbridge audit --forecast) holds the ResourceSlices the DRA drivers
// would publish, made from the nodes' labels before the drivers run: an
// attribute the labels do not tell is left out of the devices and named in
// the slice's claimbridge.io/unknown-attributes annotation. A selector or a
// constraint that reads such an attribute matches nothing there, not
// because the devices lack it but because nobody knows its value yet. So
// where a claim is served on no node, and would be on one of those nodes
// with the selectors and constraints that read the unknown attributes left
// out, the answer depends on them: Unknown (AttributesUnknown, with
// DependsOn naming them), never NeverFits. Where it is not served even
// then, NeverFits stands: the unknown attributes do not decide.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/reason"
)

// unknownAttributes reads a slice's claimbridge.io/unknown-attributes:
// qualified names, sorted, without duplicates.
func unknownAttributes(sl *resourceapi.ResourceSlice) []string {
	v := sl.Annotations[api.AnnotationUnknownAttributes]
	if v == "" {
		return nil
	}
	set := map[string]bool{}
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			set[name] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// unknownGroups groups the nodes whose devices have unknown attributes by
// the set of those names (the union over the node's devices), groups in
// the order of their first node.
func unknownGroups(nodes []*nodeInfo) (groups [][]*nodeInfo, names [][]string) {
	at := map[string]int{}
	for _, ni := range nodes {
		set := map[string]bool{}
		for _, d := range ni.devices {
			for _, n := range d.unknown {
				set[n] = true
			}
		}
		if len(set) == 0 {
			continue
		}
		list := slices.Sorted(maps.Keys(set))
		key := strings.Join(list, ",")
		i, ok := at[key]
		if !ok {
			i = len(groups)
			at[key] = i
			groups = append(groups, nil)
			names = append(names, list)
		}
		groups[i] = append(groups[i], ni)
	}
	return groups, names
}

// relax returns copies of the claims without the request selectors and the
// constraints that read one of the unknown names, and the names they read,
// sorted; none when no selector nor constraint reads one. A selector
// claimbridge cannot read field by field (it uses the device as a whole)
// may read any of them: it is left out too. The DeviceClasses' selectors
// stay.
func (c *Checker) relax(celCache *cel.Cache, claims []*resourceapi.ResourceClaim, unknown []string) ([]*resourceapi.ResourceClaim, []string) {
	isUnknown := map[string]bool{}
	for _, n := range unknown {
		isUnknown[n] = true
	}
	depends := map[string]bool{}
	keep := func(selectors []resourceapi.DeviceSelector) []resourceapi.DeviceSelector {
		var out []resourceapi.DeviceSelector
		for _, s := range selectors {
			if s.CEL == nil {
				out = append(out, s)
				continue
			}
			compiled := celCache.GetOrCompile(s.CEL.Expression)
			if compiled.Error != nil {
				out = append(out, s)
				continue
			}
			refs, ok := c.refs.References(compiled.Environment, s.CEL.Expression)
			if !ok {
				for _, n := range unknown {
					depends[n] = true
				}
				continue
			}
			reads := false
			for _, r := range refs {
				if name := r.Domain + "/" + r.ID; isUnknown[name] {
					depends[name] = true
					reads = true
				}
			}
			if !reads {
				out = append(out, s)
			}
		}
		return out
	}
	out := make([]*resourceapi.ResourceClaim, len(claims))
	for i, claim := range claims {
		cl := claim.DeepCopy()
		for ri := range cl.Spec.Devices.Requests {
			r := &cl.Spec.Devices.Requests[ri]
			if r.Exactly != nil {
				r.Exactly.Selectors = keep(r.Exactly.Selectors)
			}
			for si := range r.FirstAvailable {
				r.FirstAvailable[si].Selectors = keep(r.FirstAvailable[si].Selectors)
			}
		}
		cl.Spec.Devices.Constraints = slices.DeleteFunc(cl.Spec.Devices.Constraints, func(ct resourceapi.DeviceConstraint) bool {
			for _, a := range []*resourceapi.FullyQualifiedName{ct.MatchAttribute, ct.DistinctAttribute} {
				if a != nil && isUnknown[string(*a)] {
					depends[string(*a)] = true
					return true
				}
			}
			return false
		})
		out[i] = cl
	}
	if len(depends) == 0 {
		return nil, nil
	}
	return out, slices.Sorted(maps.Keys(depends))
}

// unknownInstead answers a check that found no node to serve the claims
// (v: NeverFits, or an allocator error) on a fleet whose devices leave
// attributes unknown: Unknown when, on candidate nodes with unknown
// attributes, the claims without what reads them are served with every
// device free; else v.
func (c *Checker) unknownInstead(ctx context.Context, snap *Snapshot, celCache *cel.Cache, claims []*resourceapi.ResourceClaim, candidates []*nodeInfo, v Verdict) Verdict {
	if !snap.unknowns || ctx.Err() != nil {
		return v
	}
	groups, names := unknownGroups(candidates)
	if len(groups) == 0 {
		return v
	}
	allocs, err := snap.allocatorsFor(ctx, celCache)
	if err != nil {
		return v
	}
	for gi, nodes := range groups {
		relaxed, depends := c.relax(celCache, claims, names[gi])
		if len(depends) == 0 {
			continue
		}
		p, reasons := c.plan(snap, celCache, relaxed)
		if len(reasons) > 0 {
			continue
		}
		res := c.search(ctx, p, searchPass{alloc: allocs.free, free: true, nodes: nodes, why: reason.NewNodes()})
		if res.node == nil || res.err != nil {
			continue
		}
		like := ""
		if len(nodes) > 1 {
			like = fmt.Sprintf(" (and %d more like it)", len(nodes)-1)
		}
		return Verdict{Kind: Unknown, Code: ReasonAttributesUnknown, DependsOn: depends, NodesConsidered: v.NodesConsidered,
			Reasons: []string{fmt.Sprintf("whether node %s%s serves the claims depends on %s, which its devices leave unknown (a forecast: the node's labels do not tell them); "+
				"with what does not read %s, the claims fit there", res.node.node.Name, like, strings.Join(depends, ", "), them(depends))}}
	}
	return v
}

// them is "it" or "them".
func them(names []string) string {
	if len(names) == 1 {
		return "it"
	}
	return "them"
}

// unknownOn answers, for the placement check, whether the claims that the
// allocator does not serve on the node with every device free would be
// served there with what reads the node's unknown attributes left out: the
// names they read when so, nil otherwise.
func (pc *placementCheck) unknownOn(ni *nodeInfo, allocs *allocatorPair) []string {
	if !pc.snap.unknowns || pc.ctx.Err() != nil {
		return nil
	}
	_, names := unknownGroups([]*nodeInfo{ni})
	if len(names) == 0 {
		return nil
	}
	relaxed, depends := pc.c.relax(pc.cc, pc.claims, names[0])
	if len(depends) == 0 {
		return nil
	}
	res, err := allocs.free.Allocate(pc.ctx, ni.node, relaxed)
	if err != nil || len(res) != len(relaxed) {
		return nil
	}
	return depends
}
