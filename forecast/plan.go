package forecast

// What the switch will place: how each workload's pods are placed on the
// fleet after the switch — its translation's claim, its extended resources
// through an extendedResourceName class, the device plugin on the nodes the
// switch leaves alone, or nothing — and what it is when every pod is
// served.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/reason"
)

// mode is how a workload's pods are placed after the switch.
type mode int

const (
	modeNone         mode = iota // nothing to place: not affected, unjudged, or no node
	modeDRA                      // its translation's claim
	modeClass                    // as submitted, its resources from an extendedResourceName class, or the device plugin where a node still offers them
	modeDevicePlugin             // as submitted, on the nodes the switch leaves alone
)

// plan is how one workload is placed.
type plan struct {
	mode   mode
	result cutover.Result // when every pod is served (or, modeNone, as it is)
	pod    *corev1.Pod
	claims []*resourceapi.ResourceClaimSpec
	class  string
	// device plugin (and, modeClass, the nodes that keep it): the pod's
	// request and the nodes that offer it.
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
	// whyNotToday says why no node runs the pod as submitted today (""
	// when one does).
	whyNotToday string
	// depends names the attributes the decision found the translation's
	// placement depends on, unknown on some forecast devices: the plan
	// places the translation on the nodes that tell them, and the result
	// is Unjudged only when those serve fewer pods than it asks for.
	depends []string
	// pool: the autoscaled pool where the pod as submitted may run today
	// (nil when none).
	pool *cutover.AutoscaledPool
}

// planOf decides how a workload's pods are placed after the switch, and
// what it is when all are served.
func planOf(w Workload, j *CutoverForecast, switched map[corev1.ResourceName]bool, k *known) plan {
	// A pod kube-apiserver refuses runs nowhere, before the switch or
	// after, whatever it asks for.
	if w.Pod != nil {
		if msg := podfacts.RefusedMessage(w.Pod); msg != "" {
			return plan{result: cutover.NotCreatable, why: "kube-apiserver refuses to create its pods: " + msg}
		}
	}
	// A KAI-Scheduler GPU share asks for no resource itself, and runs where
	// its reservation pods get nvidia.com/gpu from the device plugin: it is
	// placed as the pod that asks for them (podfacts.AsReserved).
	reserved := w.Pod != nil && podfacts.AsReserved(w.Pod) != nil
	if reserved {
		w.Pod = podfacts.AsReserved(w.Pod)
	}
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
	pl := plan{result: cutover.NotAffected}
	if !asksAny(asks, switched) {
		if w.Pod != nil {
			pl.today, pl.after = len(k.before.of(admitted).offers), len(k.after.of(admitted).offers)
		}
		return pl
	}
	pl.result = cutover.Breaks // unless a plan below serves it
	if w.Pod == nil || w.Decision == nil {
		pl.result = cutover.Unjudged
		pl.why = "asks for " + names(asks, switched) + ", which the switch replaces, where claimbridge locates no pod template: the forecast cannot place it; check its operator's DRA support"
		return pl
	}
	today := k.before.of(admitted)
	pl.today, pl.whyNotToday = len(today.offers), today.whyNone
	pl.pool = k.poolOf(today)
	d := w.Decision
	switch {
	case d.Outcome == reason.OutcomeTranslate && d.Translation != nil && d.Translation.Template != nil:
		pl.mode, pl.result = modeDRA, cutover.Moves
		pl.pod, pl.claims = decide.AsAdmittedLike(d.Translation.Pod, w.Pod, j.policy), []*resourceapi.ResourceClaimSpec{&d.Translation.Template.Spec.Spec}
		pl.after = 1
		if d.Placement != nil {
			pl.after = d.Placement.Translated
		}
	case w.Pod.Spec.NodeName == "" && !reserved && classesMap(asks, switched, j.After.Inventory.Classes):
		pl.mode, pl.result = modeClass, cutover.ServedByClass
		pl.pod, pl.claims, pl.class = byClass(admitted, asks, switched, j.After.Inventory.Classes)
		// Where a node still advertises the resource (its device plugin
		// stays), kube-scheduler counts it there as before: the class
		// serves the pod only on the nodes that do not.
		a := k.after.of(admitted)
		pl.want, pl.offers, pl.offered = a.want, a.offers, a.offered
	default:
		a := k.after.of(admitted)
		pl.want, pl.offers, pl.offered = a.want, a.offers, a.offered
		pl.after = len(pl.offers)
		pl.pod = admitted
		switch depends := dependsOn(d); {
		case len(pl.offers) > 0:
			pl.mode, pl.result = modeDevicePlugin, cutover.StaysLegacy
		case len(depends) > 0 && d.Translation != nil && d.Translation.Template != nil:
			// Kept because where its translation lands depends on
			// attributes some forecast devices leave unknown: it is
			// placed on the devices that tell them, and judged there
			// (cutoverOf); Unjudged only when those fall short.
			pl.mode, pl.result, pl.depends = modeDRA, cutover.Moves, depends
			pl.pod, pl.claims = decide.AsAdmittedLike(d.Translation.Pod, w.Pod, j.policy), []*resourceapi.ResourceClaimSpec{&d.Translation.Template.Spec.Spec}
			pl.offers, pl.offered, pl.want = nil, nil, nil
			pl.why = unjudgedWhy(depends)
		case len(depends) > 0 && pl.today > 0:
			pl.result, pl.why = cutover.Unjudged, unjudgedWhy(depends)
		default:
			pl.why = k.whyBreaks(admitted, asks, switched, j.After.Inventory.Nodes)
			if reserved {
				pl.why = "KAI-Scheduler holds the GPUs it shares with reservation pods that ask the device plugin for nvidia.com/gpu, bound to the node by name " +
					"(no extendedResourceName class serves a pod kube-scheduler does not place): " + pl.why
			}
		}
	}
	pl.key, pl.need = planKey(&pl), fewestDevices(pl.claims)
	return pl
}

// unjudgedWhy says that whether the translation is served depends on
// attributes the forecast cannot tell.
func unjudgedWhy(depends []string) string {
	return fmt.Sprintf("whether its translation is served after the switch depends on %s, which the forecast cannot tell from the nodes' labels "+
		"(the driver will publish %s): check it once the driver runs, or label the nodes with what tells %s", strings.Join(depends, ", "), them(depends), them(depends))
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
