package forecast

// The order of the pods: the queue's order the whole-cluster placement
// takes them in, and where that order decides what a workload gets — the
// workloads that can take devices on the nodes it takes alone (its rivals),
// placed there first.

import (
	"cmp"
	"slices"
)

// placementOrder says how the whole-cluster placement orders the pods.
const placementOrder = "every pod of every workload placed on the forecast fleet at once, each holding its devices for the next: " +
	"by priority (the PriorityClass value, highest first), then creation time (oldest first), then the order of the input, as kube-scheduler's queue takes them; " +
	"kube-scheduler scores nodes its own way, so a workload whose result depends on the order is OrderDependent; the CPU and memory of the pods placed are not counted"

// queueOrder is the workloads' indexes in the order kube-scheduler's queue
// takes their pods (placementOrder): priority, highest first, then
// creation time, oldest first, then the order of the input.
func queueOrder(ws []Workload) []int {
	order := make([]int, len(ws))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		wa, wb := ws[a], ws[b]
		return cmp.Or(cmp.Compare(wb.Priority, wa.Priority), wa.Created.Compare(wb.Created), cmp.Compare(a, b))
	})
	return order
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
func (cp *clusterPlacement) groupsOf(order []int) []*rivalGroup {
	var out []*rivalGroup
	by := map[string]*rivalGroup{}
	for _, i := range order {
		if cp.plans[i].mode == modeNone {
			continue
		}
		g, ok := by[cp.plans[i].key]
		if !ok {
			g = &rivalGroup{}
			by[cp.plans[i].key] = g
			out = append(out, g)
		}
		g.members = append(g.members, i)
		g.pods += cp.workloads[i].pods()
	}
	return out
}

// maxCompetes is how many of the workloads a workload competes with are
// named; CompetesMore counts the others.
const maxCompetes = 10

// afterRivals places, on the nodes workload i takes alone, the pods of the
// workloads that can take devices there (its rivals, a group of alike
// workloads at a time, in the queue's order), then the workload: what it
// gets after them, and — when that is less than alone — the rivals that
// took devices there, which it competes with (the first maxCompetes
// named, how many more).
func (cp *clusterPlacement) afterRivals(i int, nodes []string, alone int64) (int64, []string, int) {
	on := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		on[n] = true
	}
	adv := newPlacer(cp.fl, on)
	type took struct {
		g *rivalGroup
		n int64
	}
	var placed []took
	for _, g := range cp.groups {
		pl := &cp.plans[g.members[0]]
		pods := g.pods
		if cp.plans[i].key == pl.key {
			pods -= cp.workloads[i].pods()
		}
		if pods <= 0 || !cp.fl.takesFrom(pl, on) {
			continue
		}
		if n, _ := adv.placeAll(pl, pods, true); n > 0 {
			placed = append(placed, took{g, n})
		}
	}
	if len(placed) == 0 {
		return alone, nil, 0
	}
	afterOthers, _ := adv.placeAll(&cp.plans[i], cp.workloads[i].pods(), false)
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
			left -= cp.workloads[x].pods()
			if len(competes) < maxCompetes {
				competes = append(competes, cp.workloads[x].Key)
			} else {
				more++
			}
		}
	}
	slices.Sort(competes)
	return afterOthers, competes, more
}
