package forecast

// The whole-cluster placement: every pod of every workload placed on one
// forecast fleet, in the order kube-scheduler's queue takes them (order.go),
// each placement holding its devices for the next (the snapshot lineage the
// webhook uses for a burst: feasibility.Snapshot.Holding, the allocator
// asked on the node it chose before). A workload that gets fewer pods
// served than it asks for is placed again alone: if it would get more, its
// result depends on the order (OrderDependent, with the workloads it
// competes with); if not, the fleet is too small for it (Partial).

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/feasibility"
)

// clusterPlacement is one whole-cluster placement: the workloads, how each
// is placed, the fleet after the switch they are placed on, and what the
// joint placement gave each.
type clusterPlacement struct {
	workloads []Workload
	plans     []plan
	fl        *fleetNodes
	// served: the pods of each workload the joint placement serves; taken:
	// the nodes they take (sorted).
	served []int64
	taken  [][]string
	// groups are the workloads of each plan key in the queue's order, the
	// rivals a workload is placed after (groupsOf).
	groups []*rivalGroup
}

// placeCluster places the whole cluster and judges every workload: every
// pod in the queue's order (joint); each workload alone (alone); and, for
// each, the workloads that can take devices on the nodes it takes alone
// placed there first, then it (after others): a workload that gets fewer
// pods after others than alone depends on the order.
func placeCluster(ctx context.Context, j *CutoverForecast, switched map[corev1.ResourceName]bool) []cutover.Effect {
	cp := &clusterPlacement{workloads: j.Workloads, plans: make([]plan, len(j.Workloads))}
	k := newKnown(j)
	for i, w := range j.Workloads {
		cp.plans[i] = planOf(w, j, switched, k)
	}
	order := queueOrder(j.Workloads)
	cp.fl = newFleetNodes(ctx, j.After)
	cp.placeJointly(order)
	cp.groups = cp.groupsOf(order)
	out := make([]cutover.Effect, len(cp.plans))
	for i := range cp.workloads {
		out[i] = cp.cutoverOf(i)
	}
	return out
}

// placeJointly places every pod of every workload, in the queue's order,
// each holding its devices for the next.
func (cp *clusterPlacement) placeJointly(order []int) {
	joint := newPlacer(cp.fl, nil)
	cp.served = make([]int64, len(cp.plans))
	cp.taken = make([][]string, len(cp.plans))
	for _, i := range order {
		cp.served[i], cp.taken[i] = joint.placeAll(&cp.plans[i], cp.workloads[i].pods(), false)
	}
}

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

// newFleetNodes is what the placements on fleet share, nothing learned
// yet; the snapshots they make are numbered after the fleet's.
func newFleetNodes(ctx context.Context, fleet *feasibility.Fleet) *fleetNodes {
	return &fleetNodes{ctx: ctx, fleet: fleet, gen: &generations{next: fleet.Snapshot.Generation() + 1},
		lists: map[string]*candidates{}, checks: map[string]*feasibility.NodeCheck{}}
}

func (f *fleetNodes) candidates(pl *plan) *candidates {
	if c, ok := f.lists[pl.key]; ok {
		return c
	}
	c := &candidates{at: map[string]int{}}
	switch pl.mode {
	case modeDRA, modeClass:
		// A class's pod goes to the device plugin first where a node
		// still offers its resources.
		if pl.mode == modeClass {
			c.nodes = pluginNodes(pl)
		}
		// An error (claims the allocator rejects) serves on no node.
		cs, _ := f.fleet.Checker.Candidates(f.ctx, f.fleet.Snapshot, pl.pod, pl.claims)
		for _, cd := range cs {
			if _, kept := pl.offered[cd.Node]; !kept {
				c.nodes = append(c.nodes, cd.Node)
			}
		}
	case modeDevicePlugin:
		c.nodes = pluginNodes(pl)
	}
	for k, n := range c.nodes {
		c.at[n] = k
	}
	f.lists[pl.key] = c
	return c
}

// pluginNodes are the nodes whose device plugin offers what the plan's
// pod asks for.
func pluginNodes(pl *plan) []string {
	var out []string
	for _, o := range pl.offers {
		if fits(pl.want, o.Offered, nil) {
			out = append(out, o.Node)
		}
	}
	return out
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
	mode := pl.mode
	if _, kept := pl.offered[node]; kept && mode == modeClass {
		mode = modeDevicePlugin // kube-scheduler counts the node's allocatable
	}
	switch mode {
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
