package forecast

// What planning each workload reads of the fleets, worked out once per
// shape of pod and forecast: the device-plugin offers, the autoscaled pool
// and why a resource breaks.

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/platform"
)

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
	pools      map[*offers]*cutover.AutoscaledPool
	// plat says which pools' autoscalers provision for claims.
	plat *platform.Platform
}

func newKnown(j *CutoverForecast) *known {
	k := &known{before: &offersOf{snap: j.Before.Snapshot, by: map[string]*offers{}},
		after: &offersOf{snap: j.After.Snapshot, by: map[string]*offers{}}, why: map[string]string{},
		pools: map[*offers]*cutover.AutoscaledPool{}}
	if j.policy != nil {
		k.poolLabels = j.policy.AutoscaledPoolLabels()
	}
	if j.Forecast != nil {
		k.plat = j.Forecast.Platform
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
func (k *known) poolOf(o *offers) *cutover.AutoscaledPool {
	if len(k.poolLabels) == 0 {
		return nil
	}
	if p, ok := k.pools[o]; ok {
		return p
	}
	p := poolToday(o.offers, k.poolLabels, k.nodes, k.plat)
	k.pools[o] = p
	return p
}

// poolToday is the autoscaled pool of the first of the nodes where a pod as
// submitted may run today (the offers), and how many of them are in such
// pools; nil when none is or the policy names no pool label.
func poolToday(offers []feasibility.LegacyOffer, labels []string, nodes map[string]*corev1.Node, plat *platform.Platform) *cutover.AutoscaledPool {
	var out *cutover.AutoscaledPool
	for _, o := range offers {
		n := nodes[o.Node]
		if n == nil {
			continue
		}
		k, v, ok := ignoringPool(n, labels, plat)
		if !ok {
			continue
		}
		if out == nil {
			out = &cutover.AutoscaledPool{Label: k, Name: v}
			if pool := plat.PoolOf(n.Labels); pool != nil {
				_, out.Remedy, _ = pool.FromZero()
			}
		}
		out.Nodes++
	}
	return out
}

// ignoringPool is the autoscaled pool the node is in (the first of the
// policy's pool labels it carries, with its value), unless the platform
// knows that pool's autoscaler provisions for claims (detected or
// declared: Karpenter with its DRA setting on, the Cluster Autoscaler with
// --enable-dynamic-resource-allocation); ok is false when it is in none.
func ignoringPool(n *corev1.Node, labels []string, plat *platform.Platform) (label, name string, ok bool) {
	for _, k := range labels {
		v, in := n.Labels[k]
		if !in {
			continue
		}
		if plat != nil {
			if pool := plat.PoolOf(n.Labels); pool != nil {
				if ignores, known := pool.IgnoresClaims(); known && !ignores {
					return "", "", false
				}
			}
		}
		return k, v, true
	}
	return "", "", false
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
	// whyNone says why no node runs the pod ("" when one does).
	whyNone string
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
	if len(a.offers) == 0 {
		a.whyNone = o.snap.LegacyWhyNone(pod)
	}
	o.by[key] = a
	return a
}

// whyBreaks says why the pod as submitted runs nowhere after the switch:
// what no node offers any more, or what keeps it off the nodes that still
// offer it (the fleet after the switch's legacy.Nodes.WhyNone, which names
// what is really missing: a companion resource no node has, before the
// selectors); the package's whyBreaks when that says nothing. Once per
// shape of pod.
func (k *known) whyBreaks(pod *corev1.Pod, asks []corev1.ResourceName, switched map[corev1.ResourceName]bool, nodes []*corev1.Node) string {
	if why := k.after.of(pod).whyNone; why != "" {
		return "after the switch " + why
	}
	key := names(asks, switched)
	if w, ok := k.why[key]; ok {
		return w
	}
	w := whyBreaks(asks, switched, nodes)
	k.why[key] = w
	return w
}
