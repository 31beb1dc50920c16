package feasibility

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"

	"github.com/claimbridge/claimbridge/feasibility/legacy"
	"github.com/claimbridge/claimbridge/feasibility/signature"
	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/translate"
)

// The placement proof: a translation stands only when, over the nodes that
// publish DRA devices, the nodes where the translated pod can land are the
// nodes where the legacy pod could.
//
//   - The legacy pod could land on a node when it passes kube-scheduler's
//     filters on the node's legacy view (legacy.View): NodeUnschedulable,
//     NodeAffinity (nodeSelector and required affinity), TaintToleration, and
//     every extended resource it asks for against the view's allocatable.
//     Fallbacks of the policy widen that set on purpose: the legacy pod with
//     a fallback's labels and resource counts is the legacy pod too.
//   - The translated pod can land on a node when it passes the same filters
//     on the real node (its remaining affinity, every extended resource it
//     still asks for against the real allocatable) and the allocator fits
//     its claims there with every device free.
//
// Both are evaluated once per node class (classes.go) and cached by the
// pod's shape, so a node that joins an existing class costs nothing.
// CPU, memory and the other native resources ask the same of both pods and
// are left to the verdict.

// PlacementInput is what [Checker.Placement] compares.
type PlacementInput struct {
	// Policy whose vocabulary derives the legacy view. Required.
	Policy *translate.Policy
	// Legacy is the pod as submitted (with what admission adds to it, such
	// as tolerations for its extended resources). Required.
	Legacy *corev1.Pod
	// Translated is the translated pod and Claims the specs of its claims.
	// Required.
	Translated *corev1.Pod
	Claims     []*resourceapi.ResourceClaimSpec
	// ListNodes fills Placement.LegacyNodes and TranslatedNodes.
	ListNodes bool
	// NoFallbacks compares with the pod as submitted alone: the policy's
	// fallbacks do not widen the legacy side. For a single-alternative
	// translation (output ExactlyOnly), which offers no fallback
	// alternative, so that the alternative the pod asks for is judged
	// against what the pod asks for.
	NoFallbacks bool
	// ByNode evaluates every node on its own instead of once per class (and
	// without the cache); for tests that check the classes.
	ByNode bool
}

// Placement is the answer of [Checker.Placement].
type Placement struct {
	// Nodes is the number of nodes that publish DRA devices; Legacy and
	// Translated how many of them each pod can land on.
	Nodes, Legacy, Translated int
	// Classes is the number of node classes evaluated.
	Classes int
	// Gained lists node groups only the translation lands on, Lost those
	// only the legacy pod could; both empty means the sets are equal.
	Gained, Lost []NodeGroup
	// Unknown is set when the check could not finish (deadline, allocator
	// error), or when where the translation lands depends on attributes the
	// devices leave unknown (DependsOn); the sets are then not known.
	Unknown string
	// DependsOn names, qualified, the attributes the translation's claims
	// read that the devices of a node class leave unknown (a forecast
	// fleet's, whose nodes' labels do not tell them), where the claims
	// would be served but for them.
	DependsOn []string
	// Cached is true when every class came from the cache.
	Cached bool
	// LegacyNodes and TranslatedNodes name the nodes, in name order, when
	// PlacementInput.ListNodes is set.
	LegacyNodes, TranslatedNodes []string
}

// Equal reports whether the translation lands exactly where the legacy pod could.
func (p *Placement) Equal() bool { return p.Unknown == "" && len(p.Gained) == 0 && len(p.Lost) == 0 }

// Subset reports whether the translation lands on no node the legacy pod could not.
func (p *Placement) Subset() bool { return p.Unknown == "" && len(p.Gained) == 0 }

// NodeGroup is one class of nodes in an explanation.
type NodeGroup struct {
	// Nodes is how many nodes; Example the first of them in name order.
	Nodes   int    `json:"nodes"`
	Example string `json:"example"`
	// Hardware describes the example's devices ("8× NVIDIA H100 80GB HBM3").
	Hardware string `json:"hardware"`
	// Why the side that does not land there is kept off.
	Why string `json:"why"`
}

func (g NodeGroup) String() string {
	noun := "nodes"
	if g.Nodes == 1 {
		noun = "node"
	}
	return fmt.Sprintf("%d %s like %s (%s): %s", g.Nodes, noun, g.Example, g.Hardware, g.Why)
}

// classAnswer is the result of one class for one pod shape.
type classAnswer struct {
	legacy, translated  bool
	legacyWhy, transWhy string
	unknown             string
	// depends: the translation is not served there, and would be but for
	// these unknown attributes its claims read.
	depends []string
}

type placementEntry struct {
	mu      sync.Mutex
	classes map[string]classAnswer
}

func (e *placementEntry) get(key string) (classAnswer, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ans, ok := e.classes[key]
	return ans, ok
}

func (e *placementEntry) put(key string, ans classAnswer) {
	e.mu.Lock()
	e.classes[key] = ans
	e.mu.Unlock()
}

// Placement compares where the legacy and the translated pod can land over
// the snapshot's DRA nodes. It never returns an error: what could not be
// decided is reported in Placement.Unknown.
func (c *Checker) Placement(ctx context.Context, snap *Snapshot, in PlacementInput) Placement {
	if snap == nil {
		return Placement{Unknown: "the device inventory is not synced yet"}
	}
	if in.Policy == nil || in.Legacy == nil || in.Translated == nil {
		return Placement{Unknown: "nothing to compare"}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	// The cache key reads the pods as given: canonical forms and fallback
	// variants are functions of them and of the policy. Everything else is
	// prepared only when a class is not in the cache.
	byName := in.ByNode || signature.SelectsNodeByName(in.Legacy) || signature.SelectsNodeByName(in.Translated)
	key, err := placementKey(snap, &c.classes, in)
	if err != nil {
		return Placement{Unknown: err.Error()}
	}
	entry := c.placementEntry(key)
	if in.ByNode {
		entry = &placementEntry{classes: map[string]classAnswer{}}
	}
	var pc *placementCheck
	out := Placement{Cached: true}
	groups := placementGroups(snap.nodeClassList(&c.classes), byName)
	out.Classes = len(groups)
	for _, g := range groups {
		out.Nodes += len(g.members)
		ans, ok := entry.get(g.key)
		if !ok {
			out.Cached = false
			if pc == nil {
				if pc, err = c.newPlacementCheck(ctx, snap, in); err != nil {
					return Placement{Unknown: err.Error()}
				}
			}
			ans = pc.answer(g.members[0])
			if ans.unknown == "" {
				entry.put(g.key, ans)
			}
		}
		if ans.unknown != "" {
			return Placement{Nodes: out.Nodes, Classes: out.Classes, Unknown: ans.unknown}
		}
		if len(ans.depends) > 0 {
			return dependsOnUnknown(out, g, ans.depends)
		}
		out.add(g, ans, in.ListNodes)
	}
	sortGroups(out.Gained)
	sortGroups(out.Lost)
	slices.Sort(out.LegacyNodes)
	slices.Sort(out.TranslatedNodes)
	return out
}

// placementGroup is the nodes one answer stands for: a node class, or a
// node of it when the pods select nodes by name.
type placementGroup struct {
	key     string
	members []*nodeInfo // members[0] is the one asked
}

// placementGroups are the groups of the classes: one per class, or one per
// node (byName).
func placementGroups(classes []*nodeClass, byName bool) []placementGroup {
	var groups []placementGroup
	for _, cl := range classes {
		if !byName {
			groups = append(groups, placementGroup{key: cl.key, members: cl.members})
			continue
		}
		for _, ni := range cl.members {
			groups = append(groups, placementGroup{key: cl.key + "/" + ni.node.Name, members: []*nodeInfo{ni}})
		}
	}
	return groups
}

// newPlacementCheck prepares what answering a class for in takes: the
// translation's defaulted claims and their plan, the pod as submitted in
// canonical form with the variants the policy's fallbacks add, and what
// each asks of a node's legacy view. An error means the claims are
// invalid.
func (c *Checker) newPlacementCheck(ctx context.Context, snap *Snapshot, in PlacementInput) (*placementCheck, error) {
	claims, err := upstream.DefaultClaims(in.Translated, in.Claims)
	if err != nil {
		return nil, err
	}
	submitted := legacy.CanonicalPod(in.Policy, in.Legacy)
	variants := []*corev1.Pod{submitted}
	if !in.NoFallbacks {
		variants = append(variants, legacy.FallbackVariants(in.Policy, submitted)...)
	}
	pc := &placementCheck{
		c: c, ctx: ctx, snap: snap, policy: in.Policy, variants: variants, translated: in.Translated, claims: claims,
		cc: c.celCache(snap.features), rules: in.Policy.FamilyDeviceRules(),
	}
	for _, v := range variants {
		pc.keys = append(pc.keys, legacy.RequiredLabelKeys(v)...)
		pc.legacyReqs = append(pc.legacyReqs, podfacts.ExtendedRequests(v))
		pc.legacySel = append(pc.legacySel, in.Policy.LegacyDeviceSelectors(v))
	}
	slices.Sort(pc.keys)
	pc.keys = slices.Compact(pc.keys)
	pc.shares.Families, pc.shares.Plain = in.Policy.LegacyShares(submitted)
	pc.transReqs = podfacts.ExtendedRequests(in.Translated)
	if p, reasons := c.plan(snap, pc.cc, claims); len(reasons) == 0 {
		pc.plan = p
	}
	return pc, nil
}

// add counts the group's nodes where each pod can land, names them when
// asked to (listNodes), and explains the group when only one side lands
// there.
func (p *Placement) add(g placementGroup, ans classAnswer, listNodes bool) {
	rep := g.members[0]
	ng := NodeGroup{Nodes: len(g.members), Example: rep.node.Name}
	if ans.legacy {
		p.Legacy += len(g.members)
	}
	if ans.translated {
		p.Translated += len(g.members)
	}
	if listNodes {
		for _, ni := range g.members {
			if ans.legacy {
				p.LegacyNodes = append(p.LegacyNodes, ni.node.Name)
			}
			if ans.translated {
				p.TranslatedNodes = append(p.TranslatedNodes, ni.node.Name)
			}
		}
	}
	switch {
	case ans.translated && !ans.legacy:
		ng.Why, ng.Hardware = "the pod as submitted "+ans.legacyWhy, hardware(rep)
		p.Gained = append(p.Gained, ng)
	case ans.legacy && !ans.translated:
		ng.Why, ng.Hardware = "the translation "+ans.transWhy, hardware(rep)
		p.Lost = append(p.Lost, ng)
	}
}

// dependsOnUnknown is the answer when where the translation lands on the
// group depends on attributes its devices leave unknown: the nodes and
// classes counted so far (in out), and the attributes.
func dependsOnUnknown(out Placement, g placementGroup, depends []string) Placement {
	like := ""
	if len(g.members) > 1 {
		like = fmt.Sprintf(" (and %d more like it)", len(g.members)-1)
	}
	return Placement{Nodes: out.Nodes, Classes: out.Classes, DependsOn: depends, Unknown: fmt.Sprintf(
		"whether the translation lands on node %s%s depends on %s, which its devices leave unknown (a forecast: the node's labels do not tell them)",
		g.members[0].node.Name, like, strings.Join(depends, ", "))}
}

// sortGroups puts the largest groups first, then by example name.
func sortGroups(gs []NodeGroup) {
	slices.SortStableFunc(gs, func(a, b NodeGroup) int {
		if a.Nodes != b.Nodes {
			return b.Nodes - a.Nodes
		}
		return strings.Compare(a.Example, b.Example)
	})
}

type placementCheck struct {
	c          *Checker
	ctx        context.Context
	snap       *Snapshot
	policy     *translate.Policy
	variants   []*corev1.Pod
	translated *corev1.Pod
	claims     []*resourceapi.ResourceClaim
	cc         *cel.Cache
	rules      map[string][]translate.DeviceRule
	keys       []string
	legacyReqs []corev1.ResourceList
	legacySel  []map[corev1.ResourceName][]string // per variant: translate.Policy.LegacyDeviceSelectors
	shares     legacy.Shares                      // translate.Policy.LegacyShares of the legacy pod
	transReqs  corev1.ResourceList
	// plan indexes the translation's requests (nil when a class is
	// missing: the allocator reports it).
	plan *plan
}

// answer evaluates both pods on one node.
func (pc *placementCheck) answer(ni *nodeInfo) classAnswer {
	var ans classAnswer
	nd := newNodeDevices(pc.ctx, pc.cc, pc.snap, ni, pc.rules)
	// Legacy: any variant passes the filters on the legacy view, read
	// under any MIG strategy the device plugin may have run with there.
	strategies := pc.policy.LegacyMIGStrategies(ni.node.Labels, nd.Family)
	if len(strategies) == 0 {
		strategies = []string{""}
	}
legacy:
	for i, v := range pc.variants {
		for j, strategy := range strategies {
			view := legacy.View(pc.policy, ni.node, nd, legacy.Ask{
				Keys: pc.keys, Resources: slices.Collect(maps.Keys(pc.legacyReqs[i])), Strategy: strategy,
				Selectors: pc.legacySel[i], Shares: pc.shares,
			})
			why := filters(v, view, pc.legacyReqs[i])
			if why == "" {
				ans.legacy = true
				break legacy
			}
			if i == 0 && j == 0 {
				ans.legacyWhy = why
				if strings.Contains(why, "node selector or affinity") {
					ans.legacyWhy += legacy.Labels(view, legacy.RequiredLabelKeys(v))
				}
			}
		}
	}
	// Translated: the filters on the real node, then the allocator with
	// every device free.
	if why := filters(pc.translated, ni.node, pc.transReqs); why != "" {
		ans.transWhy = why
		return ans
	}
	allocs, err := pc.snap.allocatorsFor(pc.ctx, pc.cc)
	if err != nil {
		ans.unknown = err.Error()
		return ans
	}
	var res []resourceapi.AllocationResult
	if pc.plan != nil && pc.plan.prune(pc.ctx, ni, true) != "" {
		// Some request has too few devices passing its selectors there,
		// even with every device free: the allocator cannot serve the
		// claims, and is left to judge the nodes that may.
		res, err = nil, nil
	} else {
		q := freeQuery{snap: pc.snap, cc: pc.cc, claims: pc.claims}
		if pc.plan != nil {
			q.key = pc.plan.claimsKey()
		}
		res, err = answersOf(pc.ctx).allocate(pc.ctx, allocs.free, q, ni.node)
	}
	switch {
	case err != nil && pc.ctx.Err() != nil:
		ans.unknown = "deadline exceeded before every node class was checked"
	case err != nil && errors.Is(err, structured.ErrFailedAllocationOnNode):
		ans.transWhy = "cannot get its claim allocated there (" + err.Error() + ")"
	case err != nil:
		ans.unknown = "allocator error on node " + ni.node.Name + ": " + err.Error()
	case len(res) != len(pc.claims):
		ans.transWhy = "cannot get its claim allocated there, even with every device free"
	default:
		ans.translated = true
	}
	if !ans.translated && pc.ctx.Err() == nil {
		// Not served, or an allocator error (a selector reading an
		// attribute the device lacks): unknown attributes may decide.
		if ans.depends = pc.unknownOn(ni, allocs); len(ans.depends) > 0 {
			ans.unknown = ""
		}
	}
	return ans
}

// filters mirrors kube-scheduler's NodeUnschedulable, NodeAffinity,
// TaintToleration and (for extended resources) NodeResourcesFit filters and
// returns why the pod cannot land on the node, or "".
func filters(pod *corev1.Pod, node *corev1.Node, requests corev1.ResourceList) string {
	if msg := upstream.NodeRejects(nodeaffinity.GetRequiredNodeAffinity(pod), pod, node); msg != "" {
		return strings.Replace(msg, "didn't match Pod's node affinity/selector", "does not match the node selector or affinity", 1)
	}
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		want := requests[name]
		have := node.Status.Allocatable[name]
		if want.Cmp(have) > 0 {
			return fmt.Sprintf("asks for %s %s, the node has %s", name, want.String(), have.String())
		}
	}
	return ""
}
