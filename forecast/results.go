package forecast

// The per-workload results of the whole-cluster placement: what the switch
// does to each workload (cutover.go's CutoverResult), from the pods the
// joint placement serves, those it gets alone and those after its rivals.

import (
	"fmt"
	"strings"

	"github.com/claimbridge/claimbridge/cutover"
)

// cutoverOf is what the switch does to workload i. One not affected or
// unjudged keeps its plan's result. Otherwise it gets the pods the joint
// placement serves and, unless light or its plan places nothing, is placed
// alone (when the joint placement serves it short) and after its rivals; a
// shortfall says whether the order or the fleet decides it.
func (cp *clusterPlacement) cutoverOf(i int, light bool) cutover.Effect {
	w, pl := cp.workloads[i], &cp.plans[i]
	c := cutover.Effect{Result: pl.result, Today: pl.today, After: pl.after, Class: pl.class, Why: pl.why}
	if pl.mode == modeNone && (pl.result == cutover.NotAffected || pl.result == cutover.Unjudged) {
		return c
	}
	c.Pods, c.Served = w.pods(), cp.served[i]
	if light || pl.mode == modeNone {
		if c.Served < c.Pods {
			c.Result, c.Why = shortfall(c, c.Served, pl)
			autoscalingLost(&c, pl)
		}
		return c
	}
	// Alone: every pod served jointly is served alone, where it sits;
	// one that falls short is placed alone.
	alone, nodes := c.Served, cp.taken[i]
	if c.Served < c.Pods {
		alone, nodes = newPlacer(cp.fl, nil).placeAll(pl, w.pods(), false)
	}
	if pl.mode == modeClass && alone > 0 {
		c.After = len(nodes)
	}
	afterOthers, competes, more := cp.afterRivals(i, nodes, alone)
	c.Competes, c.CompetesMore = competes, more
	if c.Served < c.Pods || afterOthers < alone {
		c.Alone = alone
		c.Result, c.Why = shortfall(c, afterOthers, pl)
		autoscalingLost(&c, pl)
		if c.Result == cutover.OrderDependent || c.Result == cutover.Partial {
			c.Least, c.Most = min(afterOthers, c.Served), max(alone, c.Served)
		}
	} else {
		c.Competes, c.CompetesMore = nil, 0 // it gets every pod whatever the order
		if pl.mode == modeClass && keptOnly(cp.taken[i], pl) {
			c.Result, c.Class = cutover.StaysLegacy, "" // the class serves none of its pods
		}
	}
	return c
}

// keptOnly: every node of a class's plan that serves its pods still
// offers them its device plugin's resources.
func keptOnly(nodes []string, pl *plan) bool {
	for _, n := range nodes {
		if _, kept := pl.offered[n]; !kept {
			return false
		}
	}
	return len(nodes) > 0
}

// shortfall judges a workload that gets fewer pods served than it asks
// for, or than alone once the workloads it competes with are placed
// first.
func shortfall(c cutover.Effect, afterOthers int64, pl *plan) (cutover.Result, string) {
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
		return cutover.OrderDependent, fmt.Sprintf("alone it gets %d of %d pods served; when %s %s what they can of the same nodes first, %d; in claimbridge's order %d: "+
			"the order kube-scheduler places the pods in decides", c.Alone, c.Pods, first, take, min(afterOthers, c.Served), c.Served)
	case c.Served > 0:
		return cutover.Partial, fmt.Sprintf("%d of %d pods served: the fleet after the switch has room for no more of them, whatever the order", c.Served, c.Pods)
	case c.Today == 0:
		return cutover.NotServedToday, strings.TrimSuffix("no node serves it today either, so the switch does not break it; "+pl.why, "; ")
	}
	return cutover.Breaks, pl.why
}

// autoscalingLost marks a workload that moves to claims with more pods
// than the fleet after the switch serves, whose pods as submitted may run
// today in a pool an autoscaler grows for the pods that do not fit: after
// the switch that autoscaler adds no node for pods with claims. A workload
// served through an extendedResourceName class is not marked: its pods
// carry no claim when the autoscaler sees them Pending (Karpenter v1.14's
// pod.HasDRARequirements reads spec.resourceClaims only), nor is one that
// stays on the device plugin.
func autoscalingLost(c *cutover.Effect, pl *plan) {
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
	if p.Remedy != "" {
		lost += " (" + p.Remedy + ")"
	}
	c.Why = strings.TrimSuffix(lost+"; "+c.Why, "; ")
}
