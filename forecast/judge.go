package forecast

// The whole cluster at the switch. Cutover day recreates every pod at once
// and they all compete for the same devices, so a workload is not judged
// alone against an empty forecast fleet: every pod of every workload is
// placed on one forecast fleet, in the order kube-scheduler's queue takes
// them (priority, then creation time), each placement holding its devices
// for the next (the snapshot lineage the webhook uses for a burst:
// feasibility.Snapshot.Holding, the allocator asked on the node it chose
// before). A workload that gets fewer pods served than it asks for is
// placed again alone: if it would get more, its result depends on the
// order (OrderDependent, with the workloads it competes with); if not, the
// fleet is too small for it (Partial).

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/claimbridge/claimbridge/reason"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/translate"
)

// Workload is one pod template of the cluster, decided against the fleet
// after the switch.
type Workload struct {
	// Key names it as the report's rows do: "namespace/Kind/name", with
	// ": <path>" for a template inside a custom resource.
	Key string
	// Pod as submitted; nil for an object that asks for devices where no
	// pod template can be located.
	Pod *corev1.Pod
	// Pods the template stands for, replicas counted (at least 1).
	Pods int64
	// Priority of its pods (their PriorityClass's value) and Created, its
	// creation time (zero when not known): the placement's order.
	Priority int32
	Created  time.Time
	// Decision against the fleet after the switch.
	Decision *decide.Decision
}

// JudgeInput is what a cutover forecast needs.
type JudgeInput struct {
	// Before is the fleet as it is today. Required.
	Before *feasibility.Inventory
	// Options of the fleet forecast; its Policy is required.
	Options Options
	// Check configures the feasibility checks.
	Check feasibility.Options
	// Decide decides every workload against a fleet after the switch (the
	// manifests' or the cluster's pod templates, each through decide.Pod).
	// Judge calls it once per fleet it forecasts: once, and once more per
	// DeviceClass it suggests. Required.
	Decide func(ctx context.Context, after *feasibility.Fleet) ([]Workload, error)
}

// Judgment is a cutover forecast: the fleet after the switch, the
// workloads decided against it and what the switch does to each.
type Judgment struct {
	// Forecast of the fleet, and the fleets before and after, as checked.
	Forecast      *Result
	Before, After *feasibility.Fleet
	// Workloads as Decide gave them, and a Cutover for each.
	Workloads []Workload
	Cutovers  []Cutover
	Summary   *Summary
	// policy of the forecast: which pods the target cluster's admission
	// gives ExtendedResourceToleration's tolerations (decide.AsAdmitted).
	policy *translate.Policy
}

// placementOrder says how the whole-cluster placement orders the pods.
const placementOrder = "every pod of every workload placed on the forecast fleet at once, each holding its devices for the next: " +
	"by priority (the PriorityClass value, highest first), then creation time (oldest first), then the order of the input, as kube-scheduler's queue takes them; " +
	"kube-scheduler scores nodes its own way, so a workload whose result depends on the order is OrderDependent; the CPU and memory of the pods placed are not counted"

// Judge forecasts the fleet after the switch, decides the workloads
// against it (in.Decide), places the whole cluster and says what the
// switch does to each workload; then, for the extended resources of the
// workloads not served, it forecasts again with a DeviceClass that maps
// the resource (extendedResourceName) and keeps each class whose re-run
// serves more of them. An error means the input is invalid or a decision
// failed.
func Judge(ctx context.Context, in JudgeInput) (*Judgment, error) {
	if in.Decide == nil {
		return nil, errors.New("cutover forecast: no decision function")
	}
	j, err := judge(ctx, in, in.Options, false)
	if err != nil {
		return nil, err
	}
	s, err := summaryOf(in.Options, j)
	if err != nil {
		return nil, err
	}
	if s.Suggested, err = suggest(ctx, in, j); err != nil {
		return nil, err
	}
	j.Summary = s
	return j, nil
}

// judge is one forecast, decision and placement, without the summary.
// With light, the workloads are only placed together (not alone nor after
// their rivals): what a suggestion's re-run compares.
func judge(ctx context.Context, in JudgeInput, opts Options, light bool) (*Judgment, error) {
	fc, err := Forecast(in.Before, opts)
	if err != nil {
		return nil, err
	}
	before, err := feasibility.NewFleet(in.Before, in.Check)
	if err != nil {
		return nil, fmt.Errorf("fleet before the switch: %w", err)
	}
	switched := switchedResources(fc)
	// Every pod that asks for a resource the switch replaces is created
	// again: what it holds today is free at the switch.
	afterInv := *fc.After
	afterInv.Pods = slices.DeleteFunc(slices.Clone(fc.After.Pods), func(p *corev1.Pod) bool { return asksAny(podfacts.ExtendedAsked(p), switched) })
	after, err := feasibility.NewFleet(&afterInv, in.Check)
	if err != nil {
		return nil, fmt.Errorf("forecast fleet: %w", err)
	}
	ws, err := in.Decide(ctx, after)
	if err != nil {
		return nil, err
	}
	j := &Judgment{Forecast: fc, Before: before, After: after, Workloads: ws, policy: opts.Policy}
	j.Cutovers = place(ctx, j, switched, light)
	return j, nil
}

// mode is how a workload's pods are placed after the switch.
type mode int

const (
	modeNone         mode = iota // nothing to place: not affected, unjudged, or no node
	modeDRA                      // its translation's claim
	modeClass                    // as submitted, its resources from an extendedResourceName class
	modeDevicePlugin             // as submitted, on the nodes the switch leaves alone
)

// plan is how one workload is placed.
type plan struct {
	mode   mode
	result CutoverResult // when every pod is served (or, modeNone, as it is)
	pod    *corev1.Pod
	claims []*resourceapi.ResourceClaimSpec
	class  string
	// device plugin: the pod's request and the nodes that offer it.
	want    corev1.ResourceList
	offers  []feasibility.LegacyOffer
	offered map[string]corev1.ResourceList
	// key is the same for plans whose pods place alike (the same mode,
	// pod spec, claims and request), which share what placing one learns;
	// need is the fewest devices a pod of it takes on a node.
	key  string
	need int
	// the judgment before any placement
	today, after int
	why          string
	// pool: the autoscaled pool where the pod as submitted may run today
	// (nil when none).
	pool *AutoscaledPool
}

// place places the whole cluster and judges every workload: every pod in
// the queue's order (joint); each workload alone (alone); and, for each,
// the workloads that can take devices on the nodes it takes alone placed
// there first, then it (after others): a workload that gets fewer pods
// after others than alone depends on the order.
func place(ctx context.Context, j *Judgment, switched map[corev1.ResourceName]bool, light bool) []Cutover {
	plans := make([]plan, len(j.Workloads))
	k := newKnown(j)
	for i, w := range j.Workloads {
		plans[i] = planOf(w, j, switched, k)
	}
	order := make([]int, len(j.Workloads))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		wa, wb := j.Workloads[a], j.Workloads[b]
		return cmp.Or(cmp.Compare(wb.Priority, wa.Priority), wa.Created.Compare(wb.Created), cmp.Compare(a, b))
	})
	fl := &fleetNodes{ctx: ctx, fleet: j.After, gen: &generations{next: j.After.Snapshot.Generation() + 1}, lists: map[string]*candidates{}, checks: map[string]*feasibility.NodeCheck{}}
	joint := newPlacer(fl, nil)
	served := make([]int64, len(plans))
	taken := make([][]string, len(plans)) // the nodes each workload's pods take
	for _, i := range order {
		served[i], taken[i] = joint.placeAll(&plans[i], j.Workloads[i].pods(), false)
	}
	groups := groupsOf(j, plans, order)
	out := make([]Cutover, len(plans))
	for i, w := range j.Workloads {
		pl := &plans[i]
		c := Cutover{Result: pl.result, Today: pl.today, After: pl.after, Class: pl.class, Why: pl.why}
		if pl.mode == modeNone && (pl.result == CutoverNotAffected || pl.result == CutoverUnjudged) {
			out[i] = c
			continue
		}
		c.Pods, c.Served = w.pods(), served[i]
		if light || pl.mode == modeNone {
			if c.Served < c.Pods {
				c.Result, c.Why = shortfall(c, c.Served, pl)
				autoscalingLost(&c, pl)
			}
			out[i] = c
			continue
		}
		// Alone: every pod served jointly is served alone, where it sits;
		// one that falls short is placed alone.
		alone, nodes := c.Served, taken[i]
		if c.Served < c.Pods {
			alone, nodes = newPlacer(fl, nil).placeAll(pl, w.pods(), false)
		}
		if pl.mode == modeClass && alone > 0 {
			c.After = len(nodes)
		}
		afterOthers, competes, more := order2(j, fl, plans, groups, i, nodes, alone)
		c.Competes, c.CompetesMore = competes, more
		if c.Served < c.Pods || afterOthers < alone {
			c.Alone = alone
			c.Result, c.Why = shortfall(c, afterOthers, pl)
			autoscalingLost(&c, pl)
		} else {
			c.Competes, c.CompetesMore = nil, 0 // it gets every pod whatever the order
		}
		out[i] = c
	}
	return out
}

// rivalGroup is the workloads of one plan key, in the queue's order, and
// the pods they stand for: they place alike, so the rivals of a workload
// are placed a group at a time.
type rivalGroup struct {
	members []int
	pods    int64
}

// groupsOf groups the workloads by plan key, the groups in the queue's
// order of their first member.
func groupsOf(j *Judgment, plans []plan, order []int) []*rivalGroup {
	var out []*rivalGroup
	by := map[string]*rivalGroup{}
	for _, i := range order {
		if plans[i].mode == modeNone {
			continue
		}
		g, ok := by[plans[i].key]
		if !ok {
			g = &rivalGroup{}
			by[plans[i].key] = g
			out = append(out, g)
		}
		g.members = append(g.members, i)
		g.pods += j.Workloads[i].pods()
	}
	return out
}

// maxCompetes is how many of the workloads a workload competes with are
// named; CompetesMore counts the others.
const maxCompetes = 10

// order2 places, on the nodes a workload takes alone, the pods of the
// workloads that can take devices there (its rivals, a group of alike
// workloads at a time, in the queue's order), then the workload: what it
// gets after them, and — when that is less than alone — the rivals that
// took devices there, which it competes with (the first maxCompetes
// named, how many more).
func order2(j *Judgment, fl *fleetNodes, plans []plan, groups []*rivalGroup, i int, nodes []string, alone int64) (int64, []string, int) {
	on := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		on[n] = true
	}
	adv := newPlacer(fl, on)
	type took struct {
		g *rivalGroup
		n int64
	}
	var placed []took
	for _, g := range groups {
		pl := &plans[g.members[0]]
		pods := g.pods
		if plans[i].key == pl.key {
			pods -= j.Workloads[i].pods()
		}
		if pods <= 0 || !fl.takesFrom(pl, on) {
			continue
		}
		if n, _ := adv.placeAll(pl, pods, true); n > 0 {
			placed = append(placed, took{g, n})
		}
	}
	if len(placed) == 0 {
		return alone, nil, 0
	}
	afterOthers, _ := adv.placeAll(&plans[i], j.Workloads[i].pods(), false)
	if afterOthers >= alone {
		return afterOthers, nil, 0
	}
	// The members that took devices: the first in the queue's order, as
	// many as cover the pods their group placed.
	var competes []string
	more := 0
	for _, t := range placed {
		left := t.n
		for _, x := range t.g.members {
			if left <= 0 {
				break
			}
			if x == i {
				continue
			}
			left -= j.Workloads[x].pods()
			if len(competes) < maxCompetes {
				competes = append(competes, j.Workloads[x].Key)
			} else {
				more++
			}
		}
	}
	slices.Sort(competes)
	return afterOthers, competes, more
}

// shortfall judges a workload that gets fewer pods served than it asks
// for, or than alone once the workloads it competes with are placed
// first.
func shortfall(c Cutover, afterOthers int64, pl *plan) (CutoverResult, string) {
	first, take := "the workloads placed before it", "take"
	if len(c.Competes) > 0 {
		first = strings.Join(c.Competes, ", ")
	}
	if c.CompetesMore > 0 {
		first += fmt.Sprintf(" and %d more", c.CompetesMore)
	}
	if len(c.Competes) == 1 && c.CompetesMore == 0 {
		take = "takes"
	}
	switch {
	case afterOthers < c.Alone || c.Served < c.Alone:
		return CutoverOrderDependent, fmt.Sprintf("alone it gets %d of %d pods served; when %s %s what they can of the same nodes first, %d; in claimbridge's order %d: "+
			"the order kube-scheduler places the pods in decides", c.Alone, c.Pods, first, take, min(afterOthers, c.Served), c.Served)
	case c.Served > 0:
		return CutoverPartial, fmt.Sprintf("%d of %d pods served: the fleet after the switch has room for no more of them, whatever the order", c.Served, c.Pods)
	case c.Today == 0:
		return CutoverNotServedToday, strings.TrimSuffix("no node serves it today either, so the switch does not break it; "+pl.why, "; ")
	}
	return CutoverBreaks, pl.why
}

// autoscalingLost marks a workload that moves to claims with more pods
// than the fleet after the switch serves, whose pods as submitted may run
// today in a pool an autoscaler grows for the pods that do not fit: after
// the switch that autoscaler adds no node for pods with claims. A workload
// served through an extendedResourceName class is not marked: its pods
// carry no claim when the autoscaler sees them Pending (Karpenter v1.14's
// pod.HasDRARequirements reads spec.resourceClaims only), nor is one that
// stays on the device plugin.
func autoscalingLost(c *Cutover, pl *plan) {
	if pl.mode != modeDRA || c.Served >= c.Pods || pl.pool == nil {
		return
	}
	p := *pl.pool
	c.AutoscalingLost = &p
	nodes := "1 node"
	if p.Nodes > 1 {
		nodes = fmt.Sprintf("%d nodes", p.Nodes)
	}
	lost := fmt.Sprintf("autoscaling lost in pool %s=%s: today its autoscaler adds nodes for the pods that do not fit (%s of the pool can run them), "+
		"after the switch none for their claims", p.Label, p.Name, nodes)
	c.Why = strings.TrimSuffix(lost+"; "+c.Why, "; ")
}

// poolToday is the autoscaled pool of the first of the nodes where a pod as
// submitted may run today (the offers), and how many of them are in such
// pools; nil when none is or the policy names no pool label.
func poolToday(offers []feasibility.LegacyOffer, labels []string, nodes map[string]*corev1.Node) *AutoscaledPool {
	var out *AutoscaledPool
	for _, o := range offers {
		n := nodes[o.Node]
		if n == nil {
			continue
		}
		for _, k := range labels {
			v, ok := n.Labels[k]
			if !ok {
				continue
			}
			if out == nil {
				out = &AutoscaledPool{Label: k, Name: v}
			}
			out.Nodes++
			break
		}
	}
	return out
}

// planOf decides how a workload's pods are placed after the switch, and
// what it is when all are served.
func planOf(w Workload, j *Judgment, switched map[corev1.ResourceName]bool, k *known) plan {
	var asks []corev1.ResourceName
	if w.Pod != nil {
		asks = podfacts.ExtendedAsked(w.Pod)
	} else if w.Decision != nil {
		for n := range w.Decision.Requested {
			asks = append(asks, n)
		}
		slices.Sort(asks)
	}
	// The pod as the cluster's admission hands it to the scheduler, today
	// and after the switch: with ExtendedResourceToleration's tolerations
	// where the cluster runs the plugin (decide.AsAdmitted).
	var admitted *corev1.Pod
	if w.Pod != nil {
		admitted = decide.AsAdmitted(w.Pod, j.policy)
	}
	pl := plan{result: CutoverNotAffected}
	if !asksAny(asks, switched) {
		if w.Pod != nil {
			pl.today, pl.after = len(k.before.of(admitted).offers), len(k.after.of(admitted).offers)
		}
		return pl
	}
	pl.result = CutoverBreaks // unless a plan below serves it
	if w.Pod == nil || w.Decision == nil {
		pl.result = CutoverUnjudged
		pl.why = "asks for " + names(asks, switched) + ", which the switch replaces, where claimbridge locates no pod template: the forecast cannot place it; check its operator's DRA support"
		return pl
	}
	today := k.before.of(admitted)
	pl.today = len(today.offers)
	pl.pool = k.poolOf(today)
	d := w.Decision
	switch {
	case d.Outcome == reason.OutcomeTranslate && d.Translation != nil && d.Translation.Template != nil:
		pl.mode, pl.result = modeDRA, CutoverMoves
		pl.pod, pl.claims = decide.AsAdmittedLike(d.Translation.Pod, w.Pod, j.policy), []*resourceapi.ResourceClaimSpec{&d.Translation.Template.Spec.Spec}
		pl.after = 1
		if d.Placement != nil {
			pl.after = d.Placement.Translated
		}
	case w.Pod.Spec.NodeName == "" && classesMap(asks, switched, j.After.Inventory.Classes):
		pl.mode, pl.result = modeClass, CutoverServedByClass
		pl.pod, pl.claims, pl.class = byClass(admitted, asks, switched, j.After.Inventory.Classes)
	default:
		a := k.after.of(admitted)
		pl.want, pl.offers, pl.offered = a.want, a.offers, a.offered
		pl.after = len(pl.offers)
		pl.pod = admitted
		switch depends := dependsOn(d); {
		case len(pl.offers) > 0:
			pl.mode, pl.result = modeDevicePlugin, CutoverStaysLegacy
		case len(depends) > 0 && pl.today > 0:
			// Kept because where it lands depends on attributes the
			// forecast cannot tell: not a Breaks the forecast could
			// promise.
			pl.result = CutoverUnjudged
			pl.why = fmt.Sprintf("whether its translation is served after the switch depends on %s, which the forecast cannot tell from the nodes' labels "+
				"(the driver will publish %s): check it once the driver runs, or label the nodes with what tells %s", strings.Join(depends, ", "), them(depends), them(depends))
		default:
			pl.why = k.whyBreaks(asks, switched, j.After.Inventory.Nodes)
		}
	}
	pl.key, pl.need = planKey(&pl), fewestDevices(pl.claims)
	return pl
}

// dependsOn names the attributes a decision's placement check or verdict
// found it depends on, unknown on the forecast fleet's devices.
func dependsOn(d *decide.Decision) []string {
	switch {
	case d.Verdict != nil && len(d.Verdict.DependsOn) > 0:
		return d.Verdict.DependsOn
	case d.Placement != nil && len(d.Placement.DependsOn) > 0:
		return d.Placement.DependsOn
	}
	return nil
}

// them is "it" or "them".
func them(names []string) string {
	if len(names) == 1 {
		return "it"
	}
	return "them"
}

// planKey is the same for plans whose pods place alike: mode, what a
// placement reads of the pod, claims and device-plugin request.
func planKey(pl *plan) string {
	return keyOf(struct {
		Mode   mode
		Pod    any
		Claims []*resourceapi.ResourceClaimSpec
		Want   corev1.ResourceList
	}{pl.mode, placementShape(pl.pod), pl.claims, pl.want})
}

// placementShape is what the placement and the device-plugin view read of
// a pod: its node, node selection, tolerations and the resources of its
// containers. Pods of one shape (the replicas of a workload, or workloads
// that differ only by image or command) place alike.
func placementShape(pod *corev1.Pod) any {
	if pod == nil {
		return nil
	}
	type container struct {
		Resources     corev1.ResourceRequirements
		RestartPolicy *corev1.ContainerRestartPolicy
	}
	shape := struct {
		NodeName     string
		NodeSelector map[string]string
		NodeAffinity *corev1.NodeAffinity
		Tolerations  []corev1.Toleration
		Overhead     corev1.ResourceList
		Init, Main   []container
	}{NodeName: pod.Spec.NodeName, NodeSelector: pod.Spec.NodeSelector, Tolerations: pod.Spec.Tolerations, Overhead: pod.Spec.Overhead}
	if pod.Spec.Affinity != nil {
		shape.NodeAffinity = pod.Spec.Affinity.NodeAffinity
	}
	for _, c := range pod.Spec.InitContainers {
		shape.Init = append(shape.Init, container{c.Resources, c.RestartPolicy})
	}
	for _, c := range pod.Spec.Containers {
		shape.Main = append(shape.Main, container{Resources: c.Resources})
	}
	return shape
}

// keyOf is a digest of v's JSON form.
func keyOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unkeyed %p", &b) // cannot happen with API types: a key of its own
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// known remembers, for one forecast, what the workloads of one shape share:
// the device-plugin offers before and after the switch, the autoscaled
// pool of the offers before, and why a resource breaks. A cluster has
// thousands of workloads and few shapes.
type known struct {
	before, after *offersOf
	why           map[string]string
	// poolLabels: the policy's autoscaled pool labels; nodes: the nodes
	// before the switch by name; pools: poolToday by the offers it read.
	poolLabels []string
	nodes      map[string]*corev1.Node
	pools      map[*offers]*AutoscaledPool
}

func newKnown(j *Judgment) *known {
	k := &known{before: &offersOf{snap: j.Before.Snapshot, by: map[string]*offers{}},
		after: &offersOf{snap: j.After.Snapshot, by: map[string]*offers{}}, why: map[string]string{},
		pools: map[*offers]*AutoscaledPool{}}
	if j.policy != nil {
		k.poolLabels = j.policy.AutoscaledPoolLabels()
	}
	if len(k.poolLabels) > 0 {
		k.nodes = make(map[string]*corev1.Node, len(j.Before.Inventory.Nodes))
		for _, n := range j.Before.Inventory.Nodes {
			k.nodes[n.Name] = n
		}
	}
	return k
}

// poolOf is poolToday of the offers, once per shape.
func (k *known) poolOf(o *offers) *AutoscaledPool {
	if len(k.poolLabels) == 0 {
		return nil
	}
	if p, ok := k.pools[o]; ok {
		return p
	}
	p := poolToday(o.offers, k.poolLabels, k.nodes)
	k.pools[o] = p
	return p
}

// offersOf is feasibility.Snapshot.LegacyOffers by placement shape.
type offersOf struct {
	snap *feasibility.Snapshot
	by   map[string]*offers
}

type offers struct {
	want    corev1.ResourceList
	offers  []feasibility.LegacyOffer
	offered map[string]corev1.ResourceList
}

func (o *offersOf) of(pod *corev1.Pod) *offers {
	key := keyOf(placementShape(pod))
	if a, ok := o.by[key]; ok {
		return a
	}
	a := &offers{offered: map[string]corev1.ResourceList{}}
	a.want, a.offers = o.snap.LegacyOffers(pod)
	for _, x := range a.offers {
		a.offered[x.Node] = x.Offered
	}
	o.by[key] = a
	return a
}

// whyBreaks is the package's whyBreaks, once per set of resources.
func (k *known) whyBreaks(asks []corev1.ResourceName, switched map[corev1.ResourceName]bool, nodes []*corev1.Node) string {
	key := names(asks, switched)
	if w, ok := k.why[key]; ok {
		return w
	}
	w := whyBreaks(asks, switched, nodes)
	k.why[key] = w
	return w
}

// fewestDevices is the fewest devices the claims take for themselves on
// one node: each request's count (the smallest of its alternatives'; none
// for All, whose count the node decides, nor for admin access, which takes
// devices others hold). A node with fewer free devices serves none of its
// pods.
func fewestDevices(claims []*resourceapi.ResourceClaimSpec) int {
	count := func(mode resourceapi.DeviceAllocationMode, n int64, admin *bool) int {
		switch {
		case mode == resourceapi.DeviceAllocationModeAll || admin != nil && *admin:
			return 0
		case n < 1:
			return 1 // the apiserver's default
		}
		return int(n)
	}
	need := 0
	for _, c := range claims {
		for _, r := range c.Devices.Requests {
			switch {
			case r.Exactly != nil:
				need += count(r.Exactly.AllocationMode, r.Exactly.Count, r.Exactly.AdminAccess)
			case len(r.FirstAvailable) > 0:
				least := count(r.FirstAvailable[0].AllocationMode, r.FirstAvailable[0].Count, nil)
				for _, sub := range r.FirstAvailable[1:] {
					least = min(least, count(sub.AllocationMode, sub.Count, nil))
				}
				need += least
			}
		}
	}
	return need
}

// pods is how many pods the workload stands for, at least one.
func (w Workload) pods() int64 { return max(w.Pods, 1) }

// generations numbers the snapshots of one forecast: the checker's
// verdicts are cached by generation, so no two snapshots share one.
type generations struct{ next uint64 }

func (g *generations) take() uint64 {
	g.next++
	return g.next - 1
}

// fleetNodes is what every placement of one forecast shares: the fleet
// after the switch and, per plan key, the nodes that can serve a pod of
// the plan with every device free (the only nodes a placement asks).
type fleetNodes struct {
	ctx    context.Context
	fleet  *feasibility.Fleet
	gen    *generations
	lists  map[string]*candidates
	checks map[string]*feasibility.NodeCheck
}

// candidates are the nodes that serve a plan's pod on the free fleet, in
// the order a placement tries them (best score, then name; the offers'
// order for the device plugin), and each one's position.
type candidates struct {
	nodes []string
	at    map[string]int
}

func (f *fleetNodes) candidates(pl *plan) *candidates {
	if c, ok := f.lists[pl.key]; ok {
		return c
	}
	c := &candidates{at: map[string]int{}}
	switch pl.mode {
	case modeDRA, modeClass:
		// An error (claims the allocator rejects) serves on no node.
		cs, _ := f.fleet.Checker.Candidates(f.ctx, f.fleet.Snapshot, pl.pod, pl.claims)
		for _, cd := range cs {
			c.nodes = append(c.nodes, cd.Node)
		}
	case modeDevicePlugin:
		for _, o := range pl.offers {
			if fits(pl.want, o.Offered, nil) {
				c.nodes = append(c.nodes, o.Node)
			}
		}
	}
	for k, n := range c.nodes {
		c.at[n] = k
	}
	f.lists[pl.key] = c
	return c
}

// check is the plan's pod and claims ready to be asked of node after
// node, answers remembered across nodes of a class.
func (f *fleetNodes) check(pl *plan) *feasibility.NodeCheck {
	c, ok := f.checks[pl.key]
	if !ok {
		c = f.fleet.Checker.ForNodes(f.fleet.Snapshot, pl.pod, pl.claims).Remember()
		f.checks[pl.key] = c
	}
	return c
}

// takesFrom: a pod of the plan can take devices on one of the nodes.
func (f *fleetNodes) takesFrom(pl *plan, on map[string]bool) bool {
	if pl.mode == modeNone {
		return false
	}
	c := f.candidates(pl)
	if len(on) < len(c.nodes) {
		for n := range on {
			if _, ok := c.at[n]; ok {
				return true
			}
		}
		return false
	}
	return slices.ContainsFunc(c.nodes, func(n string) bool { return on[n] })
}

// placer places pods one after the other on the fleet after the switch,
// each holding its devices for the next.
type placer struct {
	fl      *fleetNodes
	scratch *feasibility.Scratch // the fleet with what the pods placed hold
	held    int
	// used counts the device-plugin resources of the pods placed there.
	used map[string]corev1.ResourceList
	// cursor: per plan key, and whether restricted to only, the first
	// candidate that may still serve a pod (what each node has left only
	// shrinks, so a node that served none serves none later).
	cursor map[cursorKey]int
	// only restricts the placements asked to be restricted; onlyNodes
	// are, per plan key, its candidates among them.
	only      map[string]bool
	onlyNodes map[string][]string
}

type cursorKey struct {
	plan       string
	restricted bool
}

func newPlacer(fl *fleetNodes, only map[string]bool) *placer {
	return &placer{fl: fl, used: map[string]corev1.ResourceList{}, cursor: map[cursorKey]int{}, only: only, onlyNodes: map[string][]string{}}
}

// placeAll places up to n pods of the plan, restricted to the placer's
// only nodes or on any node: how many it placed, and on which nodes
// (sorted). Its next pods are the same as the one that found no room:
// none would.
func (p *placer) placeAll(pl *plan, n int64, restricted bool) (int64, []string) {
	used := map[string]bool{}
	var placed int64
	for range n {
		node, ok := p.place(pl, restricted)
		if !ok {
			break
		}
		placed++
		used[node] = true
	}
	return placed, slices.Sorted(maps.Keys(used))
}

// place places one pod of the plan: the node, or false when none serves
// it.
func (p *placer) place(pl *plan, restricted bool) (string, bool) {
	if pl.mode == modeNone {
		return "", false
	}
	nodes := p.fl.candidates(pl).nodes
	if restricted {
		nodes = p.restrictedNodes(pl)
	}
	key := cursorKey{pl.key, restricted}
	for k := p.cursor[key]; k < len(nodes); k++ {
		if p.placeOn(pl, nodes[k]) {
			p.cursor[key] = k
			return nodes[k], true
		}
	}
	p.cursor[key] = len(nodes)
	return "", false
}

// restrictedNodes are the plan's candidates among the placer's only
// nodes, in candidate order.
func (p *placer) restrictedNodes(pl *plan) []string {
	if l, ok := p.onlyNodes[pl.key]; ok {
		return l
	}
	c := p.fl.candidates(pl)
	var l []string
	for n := range p.only {
		if _, ok := c.at[n]; ok {
			l = append(l, n)
		}
	}
	slices.SortFunc(l, func(a, b string) int { return cmp.Compare(c.at[a], c.at[b]) })
	p.onlyNodes[pl.key] = l
	return l
}

// placeOn places one pod of the plan on the node if it serves it there
// now.
func (p *placer) placeOn(pl *plan, node string) bool {
	switch pl.mode {
	case modeDRA, modeClass:
		if p.scratch == nil {
			p.scratch = p.fl.fleet.Snapshot.Scratch(p.fl.gen.take())
		}
		if p.scratch.Free(node) < pl.need {
			return false
		}
		v := p.fl.check(pl).On(p.fl.ctx, p.scratch.Snapshot(), node)
		if v.Kind != feasibility.FitsNow || len(v.Results) == 0 {
			return false
		}
		p.held++
		p.scratch.Hold(&resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: pl.pod.Namespace, Name: fmt.Sprintf("cutover-%d", p.held)},
			Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{
				Devices: resourceapi.DeviceAllocationResult{Results: v.Results},
			}},
		}, p.fl.gen.take())
		return true
	case modeDevicePlugin:
		offered, ok := pl.offered[node]
		if !ok || !fits(pl.want, offered, p.used[node]) {
			return false
		}
		if p.used[node] == nil {
			p.used[node] = corev1.ResourceList{}
		}
		for n, q := range pl.want {
			u := p.used[node][n]
			u.Add(q)
			p.used[node][n] = u
		}
		return true
	}
	return false
}

// fits: want fits in offered less used, resource by resource.
func fits(want, offered, used corev1.ResourceList) bool {
	for n, q := range want {
		left := offered[n].DeepCopy()
		left.Sub(used[n])
		if left.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

func asksAny(asks []corev1.ResourceName, switched map[corev1.ResourceName]bool) bool {
	return slices.ContainsFunc(asks, func(n corev1.ResourceName) bool { return switched[n] })
}

// names lists the resources the switch replaces.
func names(asks []corev1.ResourceName, switched map[corev1.ResourceName]bool) string {
	var out []string
	for _, n := range asks {
		if switched[n] {
			out = append(out, string(n))
		}
	}
	return strings.Join(out, ", ")
}

// switchedResources are the extended resources the switch takes from at
// least one node.
func switchedResources(fc *Result) map[corev1.ResourceName]bool {
	out := map[corev1.ResourceName]bool{}
	for _, n := range fc.Nodes {
		if !n.Switched {
			continue
		}
		for _, d := range n.Drivers {
			for _, r := range d.Resources {
				out[r] = true
			}
		}
	}
	return out
}

// classFor is the DeviceClass that maps the resource (extendedResourceName).
func classFor(res corev1.ResourceName, classes []*resourceapi.DeviceClass) *resourceapi.DeviceClass {
	for _, c := range classes {
		if c.Spec.ExtendedResourceName != nil && *c.Spec.ExtendedResourceName == string(res) {
			return c
		}
	}
	return nil
}

// classesMap: a class maps every switched resource the pod asks for.
func classesMap(asks []corev1.ResourceName, switched map[corev1.ResourceName]bool, classes []*resourceapi.DeviceClass) bool {
	for _, n := range asks {
		if switched[n] && classFor(n, classes) == nil {
			return false
		}
	}
	return true
}

// byClass is the pod as the scheduler serves it through extendedResourceName
// classes (KEP-5004): its switched resources become one request each of
// the class that maps it, for the pod's effective count; the pod checked
// asks for them no more.
func byClass(pod *corev1.Pod, asks []corev1.ResourceName, switched map[corev1.ResourceName]bool, classes []*resourceapi.DeviceClass) (*corev1.Pod, []*resourceapi.ResourceClaimSpec, string) {
	out := pod.DeepCopy()
	// The pod's effective count, as the scheduler counts it: the app
	// containers' (and restartable sidecars') sum, or a plain init
	// container's own when larger.
	counts := map[corev1.ResourceName]int64{}
	initMax := map[corev1.ResourceName]int64{}
	for _, n := range asks {
		if !switched[n] {
			continue
		}
		for i := range out.Spec.InitContainers {
			c := &out.Spec.InitContainers[i]
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				counts[n] += quantityOf(c.Resources, n)
			} else {
				initMax[n] = max(initMax[n], quantityOf(c.Resources, n))
			}
			delete(c.Resources.Limits, n)
			delete(c.Resources.Requests, n)
		}
		for i := range out.Spec.Containers {
			c := &out.Spec.Containers[i]
			counts[n] += quantityOf(c.Resources, n)
			delete(c.Resources.Limits, n)
			delete(c.Resources.Requests, n)
		}
		counts[n] = max(counts[n], initMax[n])
	}
	spec := &resourceapi.ResourceClaimSpec{}
	var used []string
	for _, n := range slices.Sorted(maps.Keys(counts)) {
		c := classFor(n, classes)
		spec.Devices.Requests = append(spec.Devices.Requests, resourceapi.DeviceRequest{
			Name:    fmt.Sprintf("r%d", len(spec.Devices.Requests)),
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: c.Name, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: counts[n]},
		})
		used = append(used, c.Name)
	}
	return out, []*resourceapi.ResourceClaimSpec{spec}, strings.Join(used, ", ")
}

// quantityOf is the container's limit of the resource, else its request.
func quantityOf(r corev1.ResourceRequirements, n corev1.ResourceName) int64 {
	if q, ok := r.Limits[n]; ok {
		return q.Value()
	}
	if q, ok := r.Requests[n]; ok {
		return q.Value()
	}
	return 0
}

// whyBreaks says what a pod that breaks lacks after the switch: the
// resources no node offers any more, or the nodes that still offer them
// and do not take it.
func whyBreaks(asks []corev1.ResourceName, switched map[corev1.ResourceName]bool, nodes []*corev1.Node) string {
	var gone, left []string
	offering := map[string]bool{}
	for _, n := range asks {
		if !switched[n] {
			continue
		}
		found := false
		for _, node := range nodes {
			if q, ok := node.Status.Allocatable[n]; ok && !q.IsZero() {
				found = true
				offering[node.Name] = true
			}
		}
		if found {
			left = append(left, string(n))
		} else {
			gone = append(gone, string(n))
		}
	}
	if len(gone) > 0 {
		return "after the switch no node offers " + strings.Join(gone, ", ")
	}
	names := slices.Sorted(maps.Keys(offering))
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("%d more", len(offering)-3))
	}
	verb := "offers"
	if len(offering) > 1 {
		verb = "offer"
	}
	return fmt.Sprintf("after the switch only %s still %s %s, and the pod cannot run there (node selector, affinity, taints or nodeName)",
		strings.Join(names, ", "), verb, strings.Join(left, ", "))
}
