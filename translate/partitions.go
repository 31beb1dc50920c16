package translate

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// partition applies the policy's partition rules (PartitionRule): on
// partitioned devices a claim's devices of the rule's families must be
// exactly one partition, or the driver refuses to prepare the claim. A
// request of N devices, N one of the rule's sizes, gets before each of its
// alternatives a variant that asks for N partitioned devices sharing the
// partition of size N (matchAttribute on <attributePrefix><N>), and the
// alternative itself keeps to devices that are not partitioned (without
// memberAttribute): the claim lands on partitioned and plain nodes alike,
// and on a partitioned node only as one partition. Other constraints on an
// alternative (preferred alignment) hold for its variant too. A pod whose
// devices of the families are not one request of one of the sizes stays as
// submitted (FabricPartitionUnmatched). It runs after align, so that the
// variants of preferred alignment get theirs, and returns false when the
// pod is kept.
func (t *translation) partition() bool {
	for i := range t.p.spec.Partitions {
		pr := &t.p.spec.Partitions[i]
		var group []*request
		for _, r := range t.requests {
			if slices.Contains(pr.Families, r.use.rule.Family) {
				group = append(group, r)
			}
		}
		if len(group) == 0 {
			continue
		}
		sizes := sizeList(pr.Sizes)
		if len(group) > 1 {
			t.add(say(ReasonFabricPartitionUnmatched, nil,
				"%s: the devices of %s are %d requests, and on partitioned devices the driver prepares a claim only when all its devices are one partition (of %s), which claimbridge expresses for one request; the pod keeps its device-plugin resources",
				pr.Name, requestLabels(group), len(group), sizes))
			return false
		}
		r := group[0]
		if !slices.Contains(pr.Sizes, r.use.count) {
			t.add(say(ReasonFabricPartitionUnmatched, r.use.limitPath(),
				"%s: the pod asks for %d %s, and partitioned devices come in partitions of %s: on a partitioned node the claim could never be prepared (the driver prepares only a claim whose devices are exactly one partition); the pod keeps its device-plugin resources",
				pr.Name, r.use.count, r.use.resource, sizes))
			return false
		}
		notMember := "!" + celgen.SplitAttr(pr.MemberAttribute).Guard()
		byCount := map[int64][]*alt{}
		var alts []*alt
		for _, a := range r.alts {
			if slices.Contains(pr.Sizes, a.count) {
				v := *a
				v.selectors = slices.Clone(a.selectors)
				v.variantOf = pr.Name
				if a.variantOf != "" {
					v.variantOf = a.variantOf + "-" + pr.Name
				}
				v.optional = true
				for _, c := range t.constraints {
					if c.variantOf == r && slices.Contains(c.variants, a) {
						c.variants = append(c.variants, &v)
					}
				}
				alts = append(alts, &v)
				byCount[a.count] = append(byCount[a.count], &v)
			}
			a.selectors = append(a.selectors, notMember)
			alts = append(alts, a)
		}
		r.alts = alts
		for _, n := range slices.Sorted(maps.Keys(byCount)) {
			rule := &v1alpha1.AlignmentRule{Name: pr.Name, Families: pr.Families, Attribute: pr.AttributePrefix + strconv.FormatInt(n, 10), Mode: v1alpha1.AlignRequired}
			t.constraints = append(t.constraints, &constraint{rule: rule, variantOf: r, variants: byCount[n]})
		}
		t.add(say(ReasonAlignmentApplied, r.use.path,
			"%s: on partitioned devices (with %s) the %d devices of request %s are one partition (%s%d); elsewhere devices that are not partitioned",
			pr.Name, pr.MemberAttribute, r.use.count, requestLabel(r), pr.AttributePrefix, r.use.count))
	}
	return true
}

// sizeList writes sizes as "1, 2, 4 or 8".
func sizeList(sizes []int64) string {
	s := slices.Sorted(slices.Values(sizes))
	parts := make([]string, len(s))
	for i, n := range s {
		parts[i] = strconv.FormatInt(n, 10)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}
