package forecast

// The per-workload results of the whole-cluster placement: what the switch
// does to each workload (cutover.go's CutoverResult), from the pods the
// joint placement serves, those it gets alone and those after its rivals.

import (
	"fmt"
	"strings"

	"github.com/claimbridge/claimbridge/cutover"
)

// cutoverOf is what the switch does to workload i. One not affected,
// unjudged or that cannot be created keeps its plan's result. Otherwise it
// gets the pods the joint placement serves and, unless its plan places
// nothing, is placed alone (when the joint placement serves it
// short) and after its rivals; a shortfall says whether the order or the
// fleet decides it. Then what the placement cannot tell is said: a
// workload that no node serves today is NotServedToday whatever the
// placement gives it (the switch breaks nothing of it), and one placed
// only on the devices that tell the attributes it depends on is Unjudged
// when those serve fewer pods than it asks for.
func (cp *clusterPlacement) cutoverOf(i int) cutover.Effect {
	w, pl := cp.workloads[i], &cp.plans[i]
	c := cutover.Effect{Result: pl.result, Today: pl.today, After: pl.after, Class: pl.class, Why: pl.why}
	switch pl.result {
	case cutover.NotAffected, cutover.Unjudged, cutover.NotCreatable:
		if pl.mode == modeNone {
			return c
		}
	}
	c.Pods, c.Served = w.pods(), cp.served[i]
	cp.judge(i, &c)
	if len(pl.depends) > 0 {
		dependsOnUnknown(&c, pl, len(cp.fl.candidates(pl).nodes))
	}
	if c.Today == 0 && c.Result != cutover.NotServedToday {
		notServedToday(&c, pl)
	}
	return c
}

// judge places the workload alone and after its rivals where the joint
// placement leaves it short (unless its plan places nothing),
// and says what that makes it.
func (cp *clusterPlacement) judge(i int, c *cutover.Effect) {
	w, pl := cp.workloads[i], &cp.plans[i]
	if pl.mode == modeNone {
		if c.Served < c.Pods {
			c.Result, c.Why = shortfall(*c, c.Served, pl)
			autoscalingLost(c, pl)
		}
		return
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
		c.Result, c.Why = shortfall(*c, afterOthers, pl)
		autoscalingLost(c, pl)
		if c.Result == cutover.OrderDependent || c.Result == cutover.Partial {
			c.Least, c.Most = min(afterOthers, c.Served), max(alone, c.Served)
		}
		return
	}
	c.Competes, c.CompetesMore = nil, 0 // it gets every pod whatever the order
	if pl.mode == modeClass && keptOnly(cp.taken[i], pl) {
		c.Result, c.Class = cutover.StaysLegacy, "" // the class serves none of its pods
	}
}

// dependsOnUnknown judges a workload whose translation was placed only on
// the devices that tell the attributes it depends on (after: the nodes
// that serve it there): served in full there, alone or with the cluster,
// it is judged, whatever the devices that leave them unknown would add;
// short of that, those devices decide it: Unjudged.
func dependsOnUnknown(c *cutover.Effect, pl *plan, after int) {
	c.After = after
	attrs := strings.Join(pl.depends, ", ")
	if max(c.Served, c.Alone) >= c.Pods {
		if c.Why == "" || c.Result == cutover.Moves {
			c.Why = fmt.Sprintf("every pod is served by devices whose labels tell %s (those whose labels do not tell %s are not counted)", attrs, them(pl.depends))
		}
		return
	}
	c.Result = cutover.Unjudged
	c.Least, c.Most, c.Competes, c.CompetesMore, c.AutoscalingLost = 0, 0, nil, 0, nil
	c.Why = fmt.Sprintf("the devices whose labels tell %s serve %d of its %d pods; %s", attrs, max(c.Served, c.Alone), c.Pods, pl.why)
}

// notServedToday: no node runs the workload as submitted today, so the
// switch breaks nothing of it, whatever the placement after gives it.
func notServedToday(c *cutover.Effect, pl *plan) {
	c.Result, c.Class = cutover.NotServedToday, ""
	c.Least, c.Most, c.Alone, c.Competes, c.CompetesMore, c.AutoscalingLost = 0, 0, 0, nil, 0, nil
	c.Why = notTodayWhy(pl)
	if c.Served > 0 {
		c.Why += fmt.Sprintf("; after the switch %d of %d pods are served", c.Served, c.Pods)
	}
}

// notTodayWhy says that no node serves the workload today, and why.
func notTodayWhy(pl *plan) string {
	why := "no node serves it today either, so the switch does not break it"
	if pl.whyNotToday != "" {
		why += ": " + pl.whyNotToday
	}
	return why
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
		return cutover.NotServedToday, notTodayWhy(pl)
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
