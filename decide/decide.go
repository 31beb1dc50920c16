// Package decide is claimbridge's one decision path: given a pod, the
// policy and an inventory snapshot, it says whether the pod is translated,
// kept as submitted or skipped, and why. The webhook, `claimbridge
// translate`, `explain` and `audit` all call [Pod]; the report only renders
// its [Decision].
//
// The order is the design:
//
//  1. translate.Pod rewrites the pod (pure; a pod it cannot or should not
//     translate is kept or skipped with its reasons); a pod whose operator
//     reads its device request from the pod itself (LeaderWorkerSet's TPU
//     pods, operators.go) stays as submitted (OperatorReadsLimit), as does
//     a worker of a multi-host TPU slice whose environment the platform
//     gives only to pods that ask for google.com/tpu
//     (MultiHostTPUEnvironment), and so does a pod that only the device
//     plugin can serve (plugin.go): a KubeVirt virt-launcher with a VM's
//     devices (VirtLauncherDevices), a KAI-Scheduler GPU share held by a
//     reservation pod (SharedByReservationPod), a pod that asks HAMi for
//     MIG instances (HAMiMIGMode). A pod that KServe's pod webhook pins to
//     a GKE accelerator is decided with that node selector, which its
//     translation keeps (KServeAcceleratorPinned, kserve.go);
//  2. the placement proof (feasibility.Checker.Placement) compares, over the
//     nodes that publish DRA devices, where the translated pod can land with
//     where the legacy pod could; under the policy's placement rule (Exact by
//     default) a difference keeps the pod legacy (PlacementDiffers);
//  3. the verdict (feasibility.Checker.Check) says whether the fleet can
//     serve the claim now (FitsNow) or once devices are free (FitsWhenFree);
//     anything else keeps the pod legacy (Infeasible). A pod DRA serves only
//     once devices are free stays as submitted where the device plugin runs
//     it now (whenDRABusy: KeepLegacy, DRABusyLegacyFree) or where it may
//     run in a pool whose autoscaler adds no node for claims
//     (AutoscalerIgnoresClaims), else it is translated and waits
//     (DRABusyWaiting).
//
// What may import it: webhook/, cmd/ and internal/. It imports translate
// and feasibility only. It holds no state; the Checker's caches
// make repeated decisions cheap.
package decide

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// Input is what [Pod] decides on.
type Input struct {
	// Pod as submitted; not modified. Required.
	Pod *corev1.Pod
	// Policy to apply. Required.
	Policy *translate.Policy
	// Classes and Quotas as for translate.Input (KEP-5004 deference, quota
	// continuity). Nil when not known.
	Classes []*resourceapi.DeviceClass
	Quotas  []*corev1.ResourceQuota
	// Checker runs the placement proof and the verdict over Snapshot. Nil
	// when there is no fleet to check against (`claimbridge translate`
	// without --fleet): the decision is then the translation's alone.
	Checker *feasibility.Checker
	// Snapshot of the inventory. Nil with a Checker means the inventory is
	// not synced: a pod that would be translated stays legacy (verdict
	// Unknown).
	Snapshot *feasibility.Snapshot
	// ListNodes names the nodes of the placement check's two sets in
	// Decision.Placement (for explain).
	ListNodes bool
	// WhenDRABusy overrides the policy's rule for a pod that DRA can serve
	// only once devices free up (the namespace's label); "" takes the
	// policy's, KeepLegacy when the policy has none.
	WhenDRABusy v1alpha1.WhenDRABusy
	// DevicePluginPods gives the pods that will take device-plugin room
	// before this one (pending, or kept a moment ago), and the pods bound
	// to a node as they are now: whether the device plugin runs a pod that
	// DRA serves only once devices free up is judged after them. Nil: the
	// snapshot's bound pods alone.
	DevicePluginPods func() (waiting []*corev1.Pod, podsOn func(node string) []*corev1.Pod)
	// Admitted says the pod comes from the cluster's admission chain (the
	// webhook): it carries every toleration the cluster's built-in plugins
	// give (translate.Input.Admitted). Translation adds none, and the
	// placement check and the verdict take the pod as it is and its
	// translation as made. Offline (false), when the policy says the target
	// cluster runs ExtendedResourceToleration, both sides are seen with the
	// tolerations that plugin would add ([AsAdmitted]).
	Admitted bool
	// Platform is what is known of the platform (package platform): a pool
	// whose autoscaler it knows adds nodes for pods with claims is no pool
	// that ignores claims (AutoscalerIgnoresClaims). Nil: the policy's
	// autoscaling rule alone.
	Platform *platform.Platform
}

// Decision is what claimbridge does with one pod, and why.
type Decision struct {
	// Outcome: Translate only when translation, the placement proof and the
	// verdict all agree; KeepLegacy or Skip otherwise.
	Outcome reason.Outcome
	// Pod is the pod as submitted (the Input's, not a copy; for a pod that
	// KServe's pod webhook pins to a GKE accelerator, a copy with that node
	// selector, as the pod will run: kserve.go), and Requested
	// the devices it asks for per legacy resource the policy maps
	// (translate.Policy.DevicesRequested), whatever the outcome.
	Pod       *corev1.Pod
	Requested map[corev1.ResourceName]int64
	// Translation is the translator's result: Pod and Template are set when
	// it translated, even if the decision keeps the pod legacy (audit shows
	// what it would have been).
	Translation *translate.Result
	// Placement is the placement proof's answer; nil when it did not run.
	Placement *feasibility.Placement
	// Verdict of the allocator pass; nil when it did not run.
	Verdict *feasibility.Verdict
	// Legacy says where the device plugin runs the pod as submitted now;
	// set when the verdict is FitsWhenFree.
	Legacy *feasibility.LegacyFit
	// Reasons: translation's, then the placement proof's and the verdict's.
	Reasons []reason.Reason
	// Decisive is the reason that decided the outcome: for Translate the
	// verdict's (DRABusyWaiting when the pod will wait for DRA devices), for a pod the placement check or the verdict kept legacy
	// the first of theirs, otherwise translation's first warning or, with
	// none, its last reason.
	Decisive reason.Reason
	// Durations of the stages, for metrics.
	Durations Durations
}

// Durations of the stages of one decision; zero for a stage that did not run.
type Durations struct {
	Translate, Placement, Verdict time.Duration
}

// Pod decides for one pod. An error means the input itself was unusable
// (no pod, no policy); every other outcome is a Decision with reasons.
func Pod(ctx context.Context, in Input) (*Decision, error) {
	if in.Pod == nil {
		return nil, errors.New("no pod")
	}
	if in.Policy == nil {
		return nil, errors.New("no policy")
	}
	// The placement proof and the verdict ask the allocator the same
	// questions on the nodes whose devices are all free: asked once.
	ctx = feasibility.ShareAnswers(ctx)
	in.Pod = withKServePin(in.Pod)
	start := time.Now()
	tin := translate.Input{Pod: in.Pod, Policy: in.Policy, Classes: in.Classes, Quotas: in.Quotas, Admitted: in.Admitted, NoDeference: noDeference(in)}
	if in.Checker != nil && in.Snapshot != nil {
		// The fleet's devices say which families are shared, and how.
		sharing := in.Checker.Sharing(ctx, in.Snapshot, in.Policy)
		tin.Shares, tin.Memory, tin.Renamed = sharing.Shares, sharing.Memory, sharing.Renamed
	}
	res, err := translate.Pod(tin)
	if err != nil {
		return nil, err
	}
	d := &Decision{Outcome: res.Outcome, Pod: in.Pod, Requested: in.Policy.DevicesRequested(in.Pod), Translation: res, Reasons: slices.Clone(res.Reasons), Decisive: decisiveOf(res.Outcome, res.Reasons)}
	d.Durations.Translate = time.Since(start)
	if r := kservePinned(in.Pod, res); r != nil {
		d.Reasons = append(d.Reasons, *r)
	}
	if d.keepForDevicePlugin(in, res) {
		return d, nil
	}
	if code, why := operatorReadsPod(in.Pod); why != "" && res.Outcome == reason.OutcomeTranslate {
		d.Reasons = slices.DeleteFunc(d.Reasons, func(r reason.Reason) bool { return r.Code == translate.ReasonTranslated })
		d.keep(newReason(code, reason.SeverityWarning, why))
		return d, nil
	}
	if res.Output == v1alpha1.OutputExactlyOnly && res.Combinations > 1 {
		if !d.chooseSingle(ctx, in, tin) {
			return d, nil
		}
		res = d.Translation
	} else {
		if res.Outcome != reason.OutcomeTranslate {
			return d, nil
		}
		if in.Checker == nil {
			d.uncheckedLabels(in)
			d.tolerationsUnknown(in)
			return d, nil
		}
		if in.Snapshot == nil {
			d.notSynced()
			return d, nil
		}
		if !d.classesExist(in, res) {
			return d, nil
		}
		r, pl, ok := d.place(ctx, in, res)
		if !ok {
			d.verdictOfPlacement(pl)
			d.keep(r...)
			return d, nil
		}
		d.Reasons = append(d.Reasons, r...)
	}
	if in.Checker == nil {
		d.uncheckedLabels(in)
		d.tolerationsUnknown(in)
		return d, nil
	}
	if in.Snapshot == nil {
		d.notSynced()
		return d, nil
	}
	claims := []*resourceapi.ResourceClaimSpec{&res.Template.Spec.Spec}
	start = time.Now()
	v := in.Checker.Check(ctx, in.Snapshot, in.admitted(res.Pod), claims)
	d.Verdict = &v
	d.Durations.Verdict = time.Since(start)
	switch v.Kind {
	case feasibility.FitsNow:
		d.feasible(v)
	case feasibility.FitsWhenFree:
		d.whenBusy(ctx, in, res, v)
	default:
		d.keep(verdictReasons(&v)...)
		d.tolerationHint(ctx, in, res, claims)
	}
	return d, nil
}

// tolerationHint tells, offline, a pod that no DRA node can take, in a
// cluster taken not to run the ExtendedResourceToleration admission plugin
// (the policy says so, or says nothing and the pod names no GKE-only
// label), when the plugin's tolerations would let its translation in: the
// nodes with its devices are tainted for pods that request them, as GKE
// taints its GPU and TPU nodes. The decision stands (the pod as submitted
// cannot go there either without the plugin); the reason says what to set
// if the cluster does run it: Info when the policy said it does not, a
// Warning when it said nothing (ImplicitTolerationsUnknown).
func (d *Decision) tolerationHint(ctx context.Context, in Input, res *translate.Result, claims []*resourceapi.ResourceClaimSpec) {
	if in.Admitted {
		return
	}
	if runs, _, _ := in.Policy.RunsExtendedResourceToleration(in.Pod); runs {
		return
	}
	tolerations := podfacts.AdmissionTolerations(in.Pod)
	if len(tolerations) == 0 {
		return
	}
	pod := res.Pod.DeepCopy()
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, tolerations...)
	v := in.Checker.Check(ctx, in.Snapshot, pod, claims)
	if v.Kind != feasibility.FitsNow && v.Kind != feasibility.FitsWhenFree {
		return
	}
	keys := make([]string, 0, len(tolerations))
	for _, t := range tolerations {
		keys = append(keys, t.Key)
	}
	if !in.Policy.ImplicitTolerationsSaid() {
		d.Reasons = append(d.Reasons, newReason(ReasonImplicitTolerationsUnknown, reason.SeverityWarning, fmt.Sprintf(
			"with the tolerations that the ExtendedResourceToleration admission plugin gives pods requesting %s, the translation would fit on node %s: the nodes with its devices are tainted for such pods (as GKE taints GPU and TPU nodes); the policy does not say whether the target cluster runs the plugin (implicitTolerations unset) and the pod requires no label only GKE nodes carry, so it is judged as in a cluster that does not, where the pod as submitted cannot go there either",
			strings.Join(keys, ", "), v.Node)))
		return
	}
	d.Reasons = append(d.Reasons, newReason(ReasonImplicitTolerationsOff, reason.SeverityInfo, fmt.Sprintf(
		"with the tolerations that the ExtendedResourceToleration admission plugin gives pods requesting %s, the translation would fit on node %s: the nodes with its devices are tainted for such pods (as GKE taints GPU and TPU nodes); the policy says the target cluster does not run the plugin (implicitTolerations: false), and without it the pod as submitted cannot go there either",
		strings.Join(keys, ", "), v.Node)))
}

// tolerationsUnknown warns, offline without a fleet, of a translation made
// for a cluster of which neither the policy nor the pod tells whether it
// runs the ExtendedResourceToleration admission plugin: the translation
// carries no toleration for the extended resources it removed, which is
// right where the plugin does not run and leaves the pod Pending on the
// tainted nodes of a cluster where it does (GKE). With a fleet, its taints
// decide (tolerationHint).
func (d *Decision) tolerationsUnknown(in Input) {
	if d.Outcome != reason.OutcomeTranslate || in.Admitted || in.Checker != nil || in.Policy.ImplicitTolerationsSaid() {
		return
	}
	if runs, _, _ := in.Policy.RunsExtendedResourceToleration(in.Pod); runs {
		return
	}
	// The plugin's tolerations for what the translation no longer requests.
	still := map[string]bool{}
	for _, t := range podfacts.AdmissionTolerations(d.Translation.Pod) {
		still[t.Key] = true
	}
	var keys []string
	for _, t := range podfacts.AdmissionTolerations(in.Pod) {
		if !still[t.Key] && !podfacts.ToleratesLikeThePlugin(in.Pod, t.Key) {
			keys = append(keys, t.Key)
		}
	}
	if len(keys) == 0 {
		return
	}
	d.Reasons = append(d.Reasons, newReason(ReasonImplicitTolerationsUnknown, reason.SeverityWarning, fmt.Sprintf(
		"the translation no longer requests %s and carries no toleration for it: neither the policy (implicitTolerations unset) nor the pod's node labels say whether the target cluster runs the ExtendedResourceToleration admission plugin; where it runs (GKE), the pod as submitted tolerates the taint %s:NoSchedule of its devices' nodes and the translation would not",
		strings.Join(keys, ", "), strings.Join(keys, ":NoSchedule, "))))
}

func (d *Decision) feasible(v feasibility.Verdict) {
	d.Decisive = newReason(ReasonFeasible, reason.SeverityInfo, fmt.Sprintf("%s on node %s", v.Kind, v.Node))
	d.Reasons = append(d.Reasons, d.Decisive)
}

// whenBusy decides for a translation that DRA serves only once devices
// free up: a pod that the device plugin runs now stays as submitted
// (whenDRABusy: KeepLegacy); so does one that may run in a pool whose
// autoscaler adds no node for claims and whose nodes run it as submitted,
// whatever the rule (AutoscalerIgnoresClaims); else it is translated and
// told that it waits (and, in such a pool whose nodes run only its
// translation, that the pool will not grow for it).
func (d *Decision) whenBusy(ctx context.Context, in Input, res *translate.Result, v feasibility.Verdict) {
	rule := WhenDRABusy(in.Policy, in.WhenDRABusy)
	var (
		waiting []*corev1.Pod
		podsOn  func(string) []*corev1.Pod
	)
	if in.DevicePluginPods != nil {
		waiting, podsOn = in.DevicePluginPods()
	}
	legacy := in.Snapshot.LegacyFitsAfter(in.admitted(in.Pod), waiting, podsOn)
	d.Legacy = &legacy
	if legacy.Node != "" && rule == v1alpha1.WhenDRABusyKeepLegacy {
		d.keep(newReason(ReasonDRABusyLegacyFree, reason.SeverityInfo, fmt.Sprintf(
			"the DRA devices that could serve the pod are in use or held by pods admitted a moment ago (%s); the device plugin runs it now on %s",
			nodesLike(1, v.Node), nodesLike(legacy.Nodes, legacy.Node))))
		return
	}
	ai := feasibility.AutoscaledInput{
		Labels: in.Policy.AutoscaledPoolLabels(), Legacy: in.admitted(in.Pod),
		Translated: in.admitted(res.Pod), Claims: []*resourceapi.ResourceClaimSpec{&res.Template.Spec.Spec},
	}
	if in.Platform != nil {
		ai.Provisions, ai.ProvisionsKey = in.Platform.ProvisionsForClaims, in.Platform.PoolsKey()
	}
	pool := in.Checker.Autoscaled(ctx, in.Snapshot, ai)
	if pool.AsSubmitted > 0 {
		d.autoscaled(pool, v, rule)
		return
	}
	d.feasible(v)
	why := "no device-plugin node has room for it either"
	if n := len(waiting); n > 0 {
		pods := fmt.Sprintf("%d pods that wait", n)
		if n == 1 {
			pods = "1 pod that waits"
		}
		why += ", after " + pods + " for the device plugin before it"
	}
	switch {
	case !legacy.Known:
		why = "whether a device-plugin node has room for it is not known"
	case legacy.Node != "":
		why = fmt.Sprintf("whenDRABusy is Wait, although the device plugin has room now on %s", nodesLike(legacy.Nodes, legacy.Node))
	}
	if pool.Node != "" {
		// The pool grows for neither: no node like its nodes runs the pod
		// as submitted.
		why += fmt.Sprintf("; the autoscaled pool %s=%s (%s) adds no node for it: its autoscaler does not provision for claims, and its nodes do not run the pod as submitted either (no device plugin, no DeviceClass maps its extended resources)",
			pool.Label, pool.Pool, nodesLike(pool.Nodes, pool.Node))
	}
	// The translation stands, and what a person needs to know first is that
	// the pod will wait: this is the reason shown for it.
	d.Decisive = newReason(ReasonDRABusyWaiting, reason.SeverityWarning,
		fmt.Sprintf("the pod will wait Pending until DRA devices free up on a node such as %s: they are in use or held by pods admitted a moment ago; %s", v.Node, why))
	d.Reasons = append(d.Reasons, d.Decisive)
}

// autoscaled keeps as submitted a pod that DRA serves only once devices
// free up, which may run in a pool whose autoscaler adds no node for a pod
// whose devices come from a claim (feasibility.Checker.Autoscaled, the
// policy's autoscaling rule) and whose nodes run the pod as submitted:
// translated, it would wait there for devices no new node brings; as
// submitted, it runs on the device plugin now, or waits Pending on its
// extended resources, for which the autoscaler adds a node like them.
// whenDRABusy: Wait acts as KeepLegacy there.
func (d *Decision) autoscaled(pool feasibility.AutoscaledPool, v feasibility.Verdict, rule v1alpha1.WhenDRABusy) {
	var now string
	switch {
	case d.Legacy.Node != "":
		now = "the device plugin runs it now on " + nodesLike(d.Legacy.Nodes, d.Legacy.Node)
	case !d.Legacy.Known:
		now = "whether a device-plugin node has room for it now is not known; if none has, it waits Pending on its extended resources, for which the autoscaler adds a node"
	default:
		now = "no device-plugin node has room for it now: it waits Pending on its extended resources, for which the autoscaler adds a node"
	}
	if rule == v1alpha1.WhenDRABusyWait {
		now += "; whenDRABusy: Wait acts as KeepLegacy in an autoscaled pool"
	}
	d.keep(newReason(ReasonAutoscalerIgnoresClaims, reason.SeverityWarning, fmt.Sprintf(
		"the DRA devices that could serve the pod are in use or held by pods admitted a moment ago (%s), and it may run in the autoscaled pool %s=%s (%s), whose autoscaler adds no node for a pod whose devices come from a claim: kept as submitted; %s",
		nodesLike(1, v.Node), pool.Label, pool.Pool, nodesLike(pool.AsSubmitted, pool.Node), now)))
}

// nodesLike names n nodes by one of them.
func nodesLike(n int, node string) string {
	if n == 1 {
		return "node " + node
	}
	return fmt.Sprintf("%d nodes such as %s", n, node)
}

// classesExist checks that the fleet has the DeviceClasses the translation
// names, before the placement check: a claim on a class the fleet lacks can
// never be allocated anywhere, so the pod stays as submitted with a
// NeverFits verdict (DeviceClassNotFound) that says which class to install,
// not with the allocator's error about an internal claim. It returns false
// when the pod is kept.
func (d *Decision) classesExist(in Input, res *translate.Result) bool {
	v := in.Snapshot.MissingClasses([]*resourceapi.ResourceClaimSpec{&res.Template.Spec.Spec})
	if v == nil {
		return true
	}
	d.Verdict = v
	d.keep(verdictReasons(v)...)
	return false
}

// verdictOfPlacement: a placement check that could not tell where the
// translation lands because its claims read attributes the fleet's devices
// leave unknown (a forecast's) is the verdict too: Unknown
// (AttributesUnknown), with the attributes, never NeverFits.
func (d *Decision) verdictOfPlacement(pl *feasibility.Placement) {
	if pl == nil || len(pl.DependsOn) == 0 {
		return
	}
	d.Verdict = &feasibility.Verdict{Kind: feasibility.Unknown, Code: feasibility.ReasonAttributesUnknown, DependsOn: pl.DependsOn, Reasons: []string{pl.Unknown}}
}

func (d *Decision) notSynced() {
	v := feasibility.Verdict{Kind: feasibility.Unknown, Code: feasibility.ReasonInventoryNotSynced, Reasons: []string{"the device inventory is not synced yet"}}
	d.Verdict = &v
	d.keep(verdictReasons(&v)...)
}

// placementRule is the policy's placement rule, Exact when unset.
func placementRule(p *translate.Policy) v1alpha1.PlacementRule {
	if rule := p.Spec().Placement; rule != "" {
		return rule
	}
	return v1alpha1.PlacementExact
}

// place runs the placement check on a translation. It returns the reasons,
// the answer (nil when the policy turns the check off) and whether the rule
// accepts it.
func (d *Decision) place(ctx context.Context, in Input, res *translate.Result) ([]reason.Reason, *feasibility.Placement, bool) {
	rule := placementRule(in.Policy)
	if rule == v1alpha1.PlacementOff {
		return []reason.Reason{newReason(ReasonPlacementNotChecked, reason.SeverityInfo, "the policy turns the placement check off (placement: Off)")}, nil, true
	}
	start := time.Now()
	pl := in.Checker.Placement(ctx, in.Snapshot, feasibility.PlacementInput{
		Policy: in.Policy, Legacy: in.admitted(in.Pod), Translated: in.admitted(res.Pod),
		Claims: []*resourceapi.ResourceClaimSpec{&res.Template.Spec.Spec}, ListNodes: in.ListNodes,
		NoFallbacks: res.Output == v1alpha1.OutputExactlyOnly,
	})
	d.Placement = &pl
	d.Durations.Placement += time.Since(start)
	r, ok := placementReasons(&pl, rule)
	if !ok && pl.Translated < pl.Legacy {
		// A whole-node driver's rule narrows where the translation lands:
		// say it first.
		for _, w := range res.Reasons {
			if w.Code == translate.ReasonWholeNodeOnly && len(r) > 0 {
				r[0].Message += "; " + w.Message
			}
		}
	}
	return r, &pl, ok
}

// maxSingleTries bounds the single-alternative translations whose placement
// decide checks for one pod (plus the faithful one when it comes later).
const maxSingleTries = 8

// chooseSingle decides for a pod whose scheduler or queue takes no
// firstAvailable (output ExactlyOnly) and whose requests have several
// alternatives: it tries the single-alternative translations in preference
// order and keeps the first whose placement check the policy's rule
// accepts. Without a fleet (no Checker) nothing can be proven, so it takes
// the faithful combination (each request's only mandatory alternative:
// what the pod as submitted asks for), and keeps the pod legacy when there
// is none; with the placement check off it takes the most preferred. It
// returns false when the decision is made (the pod stays legacy).
func (d *Decision) chooseSingle(ctx context.Context, in Input, tin translate.Input) bool {
	first := d.Translation
	n, faithful := first.Combinations, first.FaithfulCombination
	translateAt := func(i int) (*translate.Result, error) {
		if i == 0 {
			return first, nil
		}
		start := time.Now()
		tin.Alternative = i
		res, err := translate.Pod(tin)
		d.Durations.Translate += time.Since(start)
		return res, err
	}
	use := func(res *translate.Result, extra ...reason.Reason) {
		d.Outcome, d.Translation = res.Outcome, res
		d.Reasons = append(slices.Clone(res.Reasons), extra...)
		d.Decisive = decisiveOf(d.Outcome, d.Reasons)
	}
	noneReason := func(why string) reason.Reason {
		return newReason(translate.ReasonNoSingleAlternative, reason.SeverityWarning, fmt.Sprintf(
			"the pod's scheduler or queue takes no firstAvailable (output ExactlyOnly), and %s; the pod keeps its device-plugin resources", why))
	}
	if in.Checker == nil || in.Snapshot == nil || placementRule(in.Policy) == v1alpha1.PlacementOff {
		pick := faithful
		if in.Checker != nil {
			pick = 0 // the check is off or the inventory not synced: the verdict decides
		}
		if pick < 0 {
			d.keep(noneReason(fmt.Sprintf("no one of its %d single-alternative translations means what the pod asks for (a request has several mandatory alternatives); only the placement check over a fleet could choose one", n)))
			return false
		}
		res, err := translateAt(pick)
		if err != nil {
			d.keep(noneReason(err.Error()))
			return false
		}
		use(res)
		if res.Outcome != reason.OutcomeTranslate {
			return false
		}
		if in.Checker != nil && in.Snapshot != nil {
			r, _, _ := d.place(ctx, in, res)
			d.Reasons = append(d.Reasons, r...)
		}
		return true
	}
	tries := make([]int, 0, maxSingleTries+1)
	for i := 0; i < n && i < maxSingleTries; i++ {
		tries = append(tries, i)
	}
	if faithful >= maxSingleTries {
		tries = append(tries, faithful)
	}
	var rejected []reason.Reason
	var firstPl *feasibility.Placement // the answer for the translation audit shows
	var missing *feasibility.Verdict   // when the most preferred alternative names a class the fleet lacks
	for _, i := range tries {
		res, err := translateAt(i)
		if err != nil {
			return d.keepWith(first, firstPl, rejected, noneReason(err.Error()))
		}
		what := fmt.Sprintf("single alternative %d of %d (%s)", i+1, n, strings.Join(res.Chosen, "; "))
		if res.Outcome != reason.OutcomeTranslate {
			w := decisiveOf(res.Outcome, res.Reasons)
			rejected = append(rejected, newReason(ReasonSingleAlternativeRejected, reason.SeverityInfo, fmt.Sprintf("%s: %s: %s", what, w.Code, w.Message)))
			continue
		}
		if v := in.Snapshot.MissingClasses([]*resourceapi.ResourceClaimSpec{&res.Template.Spec.Spec}); v != nil {
			if i == 0 {
				missing = v
			}
			rejected = append(rejected, newReason(ReasonSingleAlternativeRejected, reason.SeverityInfo,
				fmt.Sprintf("%s: %s (%s): %s", what, v.Kind, v.Code, strings.Join(v.Reasons, "; "))))
			continue
		}
		r, pl, ok := d.place(ctx, in, res)
		if i == 0 {
			firstPl = pl
		}
		if ok {
			use(res, append(rejected, r...)...)
			return true
		}
		why := r[0].Message
		if pl != nil && pl.Unknown == "" {
			why = fmt.Sprintf("lands on %d, the pod as submitted on %d of the %d DRA nodes", pl.Translated, pl.Legacy, pl.Nodes)
		}
		rejected = append(rejected, newReason(ReasonSingleAlternativeRejected, reason.SeverityInfo, fmt.Sprintf("%s: %s: %s", what, r[0].Code, why)))
	}
	if missing != nil {
		// The most preferred alternative, the translation audit shows,
		// names a class the fleet lacks: its verdict is the row's, so that
		// --fail-on never-fits sees it.
		d.Verdict = missing
	}
	return d.keepWith(first, firstPl, rejected, noneReason(fmt.Sprintf("none of the %d single-alternative translations tried (of %d) is accepted", len(tries), n)))
}

// keepWith keeps the pod legacy after trying single alternatives: the most
// preferred translation is what audit shows, with its placement answer and
// why each was rejected.
func (d *Decision) keepWith(first *translate.Result, pl *feasibility.Placement, rejected []reason.Reason, why reason.Reason) bool {
	d.Translation, d.Placement = first, pl
	d.Reasons = append(slices.Clone(first.Reasons), rejected...)
	d.keep(why)
	return false
}

// AsAdmitted is a pod that has not been through admission (a manifest)
// as the target cluster's admission would hand it to the scheduler: when
// the cluster runs the ExtendedResourceToleration plugin
// (translate.Policy.RunsExtendedResourceToleration: the policy says so, or
// the pod requires a label only GKE nodes carry), with the tolerations that
// plugin adds for the extended resources the pod requests
// (podfacts.AdmissionTolerations); else as it is. The pod as submitted thus
// tolerates the taints of its devices' nodes exactly when the cluster would
// make it. For a translation, whose node selection may have lost the label
// that told, use [AsAdmittedLike] with the pod as submitted.
func AsAdmitted(pod *corev1.Pod, p *translate.Policy) *corev1.Pod {
	return AsAdmittedLike(pod, pod, p)
}

// AsAdmittedLike is pod as the target cluster's admission would hand it to
// the scheduler, the cluster being the one submitted (the pod as submitted,
// of which pod is a translation) runs on: a translation no longer requests
// what translation removed, and carries the tolerations translation added in
// their place; the plugin adds those of what it still requests.
func AsAdmittedLike(pod, submitted *corev1.Pod, p *translate.Policy) *corev1.Pod {
	if runs, _, _ := p.RunsExtendedResourceToleration(submitted); !runs {
		return pod
	}
	add := podfacts.AdmissionTolerations(pod)
	if len(add) == 0 {
		return pod
	}
	out := pod.DeepCopy()
	out.Spec.Tolerations = append(out.Spec.Tolerations, add...)
	return out
}

// admitted is a pod of the decision as the scheduler will see it: the
// webhook's pod as it is (admission has run), an offline one as admission
// would make it ([AsAdmittedLike], in the cluster the pod as submitted
// runs on).
func (in Input) admitted(pod *corev1.Pod) *corev1.Pod {
	if in.Admitted {
		return pod
	}
	return AsAdmittedLike(pod, in.Pod, in.Policy)
}

// keep makes the decision KeepLegacy with these reasons; the first decides.
func (d *Decision) keep(r ...reason.Reason) {
	d.Outcome = reason.OutcomeKeepLegacy
	d.Reasons = append(d.Reasons, r...)
	if len(r) > 0 {
		d.Decisive = r[0]
	}
}

// decisiveOf is the reason that decides a translation's outcome: for a pod
// kept or skipped, the first reason whose catalog entry leads to that
// outcome (a warning that only says what translation would risk, such as
// ExtendedResourceMappedByClass before KueueClassNotMapped, does not
// decide); else, and for a translated pod, the first warning, else the
// last reason.
func decisiveOf(outcome reason.Outcome, reasons []reason.Reason) reason.Reason {
	if outcome != reason.OutcomeTranslate {
		for _, r := range reasons {
			if e, ok := catalog.Lookup(r.Code); ok && e.Outcome == outcome {
				return r
			}
		}
	}
	return firstWarning(reasons)
}

// firstWarning is the first warning, else the last reason.
func firstWarning(reasons []reason.Reason) reason.Reason {
	for _, r := range reasons {
		if r.Severity == reason.SeverityWarning {
			return r
		}
	}
	if len(reasons) == 0 {
		return reason.Reason{}
	}
	return reasons[len(reasons)-1]
}

func newReason(code reason.Code, sev reason.Severity, msg string) reason.Reason {
	return reason.Reason{Code: code, Severity: sev, Message: msg}
}

// placementReasons explains the placement answer; ok is false when the
// rule keeps the pod legacy.
func placementReasons(pl *feasibility.Placement, rule v1alpha1.PlacementRule) ([]reason.Reason, bool) {
	if pl.Unknown != "" {
		return []reason.Reason{newReason(ReasonPlacementUnknown, reason.SeverityWarning,
			"could not compare where the translation lands with where the pod lands today: "+pl.Unknown)}, false
	}
	var out []reason.Reason
	if pl.Equal() {
		return []reason.Reason{newReason(ReasonPlacementProven, reason.SeverityInfo,
			fmt.Sprintf("lands on the same %d of %d DRA nodes as the pod as submitted would", pl.Translated, pl.Nodes))}, true
	}
	ok := rule == v1alpha1.PlacementSubset && pl.Subset()
	sev := reason.SeverityWarning
	if ok {
		sev = reason.SeverityInfo
	}
	for _, g := range pl.Gained {
		out = append(out, newReason(ReasonPlacementDiffers, sev, "would also land on "+g.String()))
	}
	for _, g := range pl.Lost {
		out = append(out, newReason(ReasonPlacementDiffers, sev, "could no longer land on "+g.String()))
	}
	if !ok {
		head := fmt.Sprintf("the translation would not land where the pod as submitted can (%d against %d of the %d DRA nodes; placement rule %s)", pl.Translated, pl.Legacy, pl.Nodes, rule)
		out = append([]reason.Reason{newReason(ReasonPlacementDiffers, reason.SeverityWarning, head)}, out...)
	}
	return out, ok
}

func verdictReasons(v *feasibility.Verdict) []reason.Reason {
	if len(v.Reasons) == 0 {
		return []reason.Reason{newReason(ReasonInfeasible, reason.SeverityWarning, fmt.Sprintf("%s (%s)", v.Kind, v.Code))}
	}
	out := make([]reason.Reason, 0, len(v.Reasons))
	for _, r := range v.Reasons {
		out = append(out, newReason(ReasonInfeasible, reason.SeverityWarning, fmt.Sprintf("%s (%s): %s", v.Kind, v.Code, r)))
	}
	return out
}

// noDeference says why a pod is not left to a class that maps its extended
// resources: it selects a Karpenter NodePool whose Karpenter the platform
// knows provisions for claims, and Karpenter provisions only for a pod's
// own claims — a pod served through an extendedResourceName class has none
// when it is Pending, so no node would be launched for it (Karpenter's
// DRA docs); translated, it keeps scale-from-zero. "" otherwise.
func noDeference(in Input) string {
	if in.Platform == nil || in.Pod == nil {
		return ""
	}
	for _, pool := range podfacts.RequiredValues(in.Pod, v1alpha1.KarpenterNodePoolLabel) {
		if in.Platform.ProvisionsForClaims(map[string]string{v1alpha1.KarpenterNodePoolLabel: pool}) {
			return fmt.Sprintf("it selects Karpenter NodePool %s, whose Karpenter provisions only for a pod's own claims: a pod served through an extendedResourceName class would get no new node", pool)
		}
	}
	return ""
}
