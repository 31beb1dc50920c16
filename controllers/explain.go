package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// Event reasons of the ExplainController, by decision.
const (
	EventTranslated          = "Translated"
	EventAuditWouldTranslate = "AuditWouldTranslate"
	EventKeptLegacy          = "KeptLegacy"
	EventSkipped             = "Skipped"
	// EventUndecided: a pod that asks for mapped devices and carries no
	// decision (Unseen).
	EventUndecided = "Undecided"
)

// Defaults of the ExplainController.
const (
	DefaultExplainInterval = 15 * time.Second
	DefaultExplainBurst    = 5
	DefaultExplainRefill   = time.Minute
	DefaultExplainCatchUp  = 2 * time.Minute
)

// ExplainController makes every pod explain itself in `kubectl describe
// pod`: it watches the pod informer of the Inventory and records, once per
// pod UID, an Event on each pod that carries a decision of admission
// (claimbridge.io/decision): Translated (naming the template),
// AuditWouldTranslate, KeptLegacy and Skipped, the message leading with the
// reason code and its remedy (the claimbridge.io/decision-message
// annotation); a Warning or Normal Event as explain.Judge says (a pod kept
// on the device plugin that runs there for a reason that asks nothing is
// Normal, one no node serves a Warning). It also finds the pods admission never decided — in an
// opted-in namespace, asking for devices the policy maps, no decision:
// kept away by the webhook's matchConditions, created before claimbridge or
// the namespace's label, or while the webhook could not be reached (see
// Unseen) — and records one Undecided Event on each (the code, the cause,
// the remedy; Warning, Normal for an Info code such as OptedOut) and
// counts them in claimbridge_undecided_pods{reason} and their devices in
// claimbridge_undecided_devices{reason,resource}.
//
// Rate limits are per pod shape, not per namespace: pods of one owner
// (ReplicaSet, Job, …; bare pods: one template or generateName) with the
// same decision and reason share a token bucket of Burst Events refilled
// one per Refill. A pod over its shape's limit gets no Event of its own;
// every pod, limited or not, counts in one aggregated Event on its owner
// per Interval ("N pods: <decision> <code>: …"), and carries its
// annotations. A scale-up of 5,000 replicas thus writes Burst Events on
// pods and one on the ReplicaSet per Interval.
//
// Once per pod UID holds while a replica leads: a new leader tells the
// decided pods created in the CatchUp before it started (the previous
// leader may not have) and every undecided pod again, within the same
// limits. It runs on the leader.
type ExplainController struct {
	Inventory *inventory.Inventory
	Policy    func() *translate.Policy
	Recorder  record.EventRecorder
	// UndecidedPods and UndecidedDevices are the gauges. Optional.
	UndecidedPods    *prometheus.GaugeVec
	UndecidedDevices *prometheus.GaugeVec
	// Namespace is claimbridge's own: its pods, like kube-system's, are
	// never judged.
	Namespace string
	// Started is when the webhook began watching (see Unseen).
	Started time.Time
	// Interval of the owners' aggregated Events and of a full pass over
	// the pods. Default DefaultExplainInterval.
	Interval time.Duration
	// Burst and Refill of each pod shape's token bucket. Defaults
	// DefaultExplainBurst and DefaultExplainRefill.
	Burst  int
	Refill time.Duration
	// CatchUp: decided pods created this long before the controller
	// started are told too. Default DefaultExplainCatchUp.
	CatchUp time.Duration
	Now     func() time.Time

	mu    sync.Mutex
	dirty map[string]*corev1.Pod // pods the informer changed, by key
	kick  chan struct{}

	since   time.Time                  // when this term began
	told    map[types.UID]bool         // pods told (or covered) in this term
	buckets map[string]*bucket         // per shape
	owners  map[ownerKey]*ownerSummary // this interval's pods per owner
	gone    map[types.UID]struct{}     // deleted since the last pass
}

// processStart stands for Started when it is not set.
var processStart = time.Now()

// NeedLeaderElection: one replica speaks.
func (c *ExplainController) NeedLeaderElection() bool { return true }

func (c *ExplainController) defaults() {
	if c.Interval <= 0 {
		c.Interval = DefaultExplainInterval
	}
	if c.Burst <= 0 {
		c.Burst = DefaultExplainBurst
	}
	if c.Refill <= 0 {
		c.Refill = DefaultExplainRefill
	}
	if c.CatchUp <= 0 {
		c.CatchUp = DefaultExplainCatchUp
	}
	if c.Started.IsZero() {
		c.Started = processStart
	}
	if c.told == nil {
		c.told, c.buckets, c.owners = map[types.UID]bool{}, map[string]*bucket{}, map[ownerKey]*ownerSummary{}
	}
	if c.kick == nil {
		c.kick = make(chan struct{}, 1)
	}
}

func (c *ExplainController) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Start runs the controller until ctx ends: pods the informer adds or
// changes are told at once (in batches of at most one per 200ms), and
// every Interval the owners' Events go out and the gauges are counted.
func (c *ExplainController) Start(ctx context.Context) error {
	c.defaults()
	c.since = c.now()
	reg, err := c.Inventory.AddPodEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.observe(o) },
		UpdateFunc: func(_, n any) { c.observe(n) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				c.mu.Lock()
				delete(c.dirty, p.Namespace+"/"+p.Name)
				if c.gone == nil {
					c.gone = map[types.UID]struct{}{}
				}
				c.gone[p.UID] = struct{}{}
				c.mu.Unlock()
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watch pods: %w", err)
	}
	defer func() { _ = c.Inventory.RemovePodEventHandler(reg) }()
	tick := time.NewTicker(c.Interval)
	defer tick.Stop()
	batch := time.NewTicker(200 * time.Millisecond)
	defer batch.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if c.Inventory.Synced() {
				c.Reconcile(ctx)
			}
		case <-c.kick:
			if !c.Inventory.Synced() {
				continue
			}
			c.tellDirty(ctx)
			select { // at most one batch per 200ms
			case <-ctx.Done():
				return nil
			case <-batch.C:
			}
		}
	}
}

// observe queues a pod the informer added or changed.
func (c *ExplainController) observe(o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	c.mu.Lock()
	if c.dirty == nil {
		c.dirty = map[string]*corev1.Pod{}
	}
	c.dirty[p.Namespace+"/"+p.Name] = p
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// tellDirty tells the pods the informer changed since the last batch.
func (c *ExplainController) tellDirty(ctx context.Context) {
	c.mu.Lock()
	pods := slices.Collect(maps.Values(c.dirty))
	c.dirty = nil
	c.mu.Unlock()
	slices.SortFunc(pods, inventory.PendingOrder)
	now := c.now()
	for _, p := range pods {
		c.tell(ctx, p, now)
	}
}

// Reconcile runs a full pass: every pod in the cache is told if it was
// not, the owners' Events of the interval go out and the gauges are
// counted.
func (c *ExplainController) Reconcile(ctx context.Context) {
	c.defaults()
	if c.since.IsZero() {
		c.since = c.now()
	}
	now := c.now()
	c.mu.Lock()
	gone := c.gone
	c.gone = nil
	c.mu.Unlock()
	for uid := range gone {
		delete(c.told, uid)
	}
	pods := c.Inventory.Pods("")
	// Only the pods tell may act on are put in order: most pods of a large
	// cluster were told before, or are in no namespace claimbridge judges.
	var untold []*corev1.Pod
	for _, p := range pods {
		if !c.told[p.UID] && (p.Annotations[api.AnnotationDecision] != "" || c.judged(p)) {
			untold = append(untold, p)
		}
	}
	slices.SortFunc(untold, inventory.PendingOrder)
	for _, p := range untold {
		c.tell(ctx, p, now)
	}
	pol := c.policy()
	podsBy := map[string]float64{}
	devicesBy := map[[2]string]float64{}
	alive := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		alive[p.UID] = true
		if !c.judged(p) || p.Annotations[api.AnnotationDecision] != "" {
			continue
		}
		code, _, ok := explain.Unseen(p, pol, c.Started)
		if !ok {
			continue
		}
		podsBy[string(code)]++
		for res, n := range pol.DevicesRequested(p) {
			devicesBy[[2]string{string(code), string(res)}] += float64(n)
		}
	}
	for uid := range c.told {
		if !alive[uid] {
			delete(c.told, uid)
		}
	}
	c.flush(now)
	for key, b := range c.buckets {
		if b.full(now, c.Burst, c.Refill) {
			delete(c.buckets, key)
		}
	}
	if c.UndecidedPods != nil {
		c.UndecidedPods.Reset()
		for code, n := range podsBy {
			c.UndecidedPods.WithLabelValues(code).Set(n)
		}
	}
	if c.UndecidedDevices != nil {
		c.UndecidedDevices.Reset()
		for k, n := range devicesBy {
			c.UndecidedDevices.WithLabelValues(k[0], k[1]).Set(n)
		}
	}
	log.FromContext(ctx).WithName("explain").V(1).Info("pass", "pods", len(pods), "undecided", podsBy)
}

func (c *ExplainController) policy() *translate.Policy {
	if c.Policy != nil {
		return c.Policy()
	}
	return translate.DefaultPolicy()
}

// judged: the pod is one the controller speaks about — alive, in an
// opted-in namespace that is neither kube-system nor claimbridge's own.
func (c *ExplainController) judged(p *corev1.Pod) bool {
	if inventory.PodGone(p) || explain.Excluded(p.Namespace, c.Namespace) {
		return false
	}
	mode, ok := c.Inventory.NamespaceMode(p.Namespace)
	return ok && mode != api.ModeOff
}

// tell records the pod's Event once, within its shape's limit, and
// counts it for its owner's Event.
func (c *ExplainController) tell(_ context.Context, p *corev1.Pod, now time.Time) {
	if c.told[p.UID] || p.UID == "" || inventory.PodGone(p) {
		return
	}
	decision := p.Annotations[api.AnnotationDecision]
	var e podEvent
	switch {
	case decision != "":
		if explain.Excluded(p.Namespace, c.Namespace) {
			return
		}
		if p.CreationTimestamp.Time.Before(c.since.Add(-c.CatchUp)) {
			// Decided before this term: the leader of its time told it.
			c.told[p.UID] = true
			return
		}
		e = decidedEvent(p, decision, decision == api.DecisionTranslated || !c.unservable(p, now))
	case c.judged(p):
		code, cause, ok := explain.Unseen(p, c.policy(), c.Started)
		if !ok || c.unservable(p, now) {
			// An undecided pod no node can serve is told LegacyUnservable
			// by the strand controller: not that it stays on the device
			// plugin.
			return
		}
		e = undecidedEvent(p, code, cause, c.policy())
	default:
		return
	}
	c.told[p.UID] = true
	owner := metav1.GetControllerOf(p)
	shape := p.Namespace + "/" + shapeOf(p, owner) + "/" + e.decision + "/" + string(e.code)
	b := c.buckets[shape]
	if b == nil {
		b = &bucket{tokens: float64(c.Burst), at: now}
		c.buckets[shape] = b
	}
	if b.take(now, c.Burst, c.Refill) && c.Recorder != nil {
		c.Recorder.Event(&corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID}, e.typ, e.reason, e.message)
	}
	if owner == nil {
		return
	}
	// Translated pods of one owner that fit now and that wait for DRA
	// devices are two Events: the count of each is what it says.
	k := ownerKey{namespace: p.Namespace, uid: owner.UID, decision: e.decision, code: e.code, verdict: explain.VerdictOfExplanation(e.message)}
	s := c.owners[k]
	if s == nil {
		s = &ownerSummary{ref: corev1.ObjectReference{Kind: owner.Kind, APIVersion: owner.APIVersion, Namespace: p.Namespace, Name: owner.Name, UID: owner.UID},
			typ: e.typ, reason: e.reason, message: e.message, example: p.Name}
		c.owners[k] = s
	}
	s.pods++
}

// unservable: the pod does not run and no node it may run on offers what
// it asks for (StrandController tells it).
func (c *ExplainController) unservable(p *corev1.Pod, now time.Time) bool {
	if !inventory.NotRunning(p) {
		return false
	}
	snap, err := c.Inventory.Snapshot(now)
	return err == nil && decide.JudgeUnservable(c.policy(), snap, p) != nil
}

// flush records the owners' Events of the interval, in a stable order.
func (c *ExplainController) flush(time.Time) {
	keys := slices.SortedFunc(maps.Keys(c.owners), func(a, b ownerKey) int {
		return strings.Compare(a.namespace+"/"+string(a.uid)+"/"+a.decision+"/"+string(a.code)+"/"+a.verdict, b.namespace+"/"+string(b.uid)+"/"+b.decision+"/"+string(b.code)+"/"+b.verdict)
	})
	for _, k := range keys {
		s := c.owners[k]
		if c.Recorder != nil {
			noun := "pods"
			if s.pods == 1 {
				noun = "pod"
			}
			msg := fmt.Sprintf("%d %s: %s %s (e.g. pod %s)", s.pods, noun, k.decision, s.message, s.example)
			c.Recorder.Event(&s.ref, s.typ, s.reason, explain.Truncate(msg, explain.MaxExplanation))
		}
	}
	clear(c.owners)
}

// podEvent is what the pod's Event says.
type podEvent struct {
	typ, reason, decision string
	code                  reason.Code
	message               string
}

// decidedEvent is the Event of a pod that carries a decision: a Warning
// or Normal as explain.Judge says of its reason and whether the pod is
// served (a pod kept on the device plugin that runs there, for a reason
// that asks nothing, is Normal).
func decidedEvent(p *corev1.Pod, decision string, served bool) podEvent {
	code := reason.Code(p.Annotations[api.AnnotationReason])
	e := podEvent{typ: explain.Judge(decision, code, served).EventType(), decision: decision, code: code}
	switch decision {
	case api.DecisionTranslated:
		e.reason = EventTranslated
	case api.DecisionWouldTranslate:
		e.reason = EventAuditWouldTranslate
	case api.DecisionKeptLegacy:
		e.reason = EventKeptLegacy
	default:
		e.reason = EventSkipped
	}
	msg := p.Annotations[api.AnnotationDecisionMessage]
	if msg == "" {
		// Decided without the message (another version of claimbridge):
		// the code and its remedy.
		msg = string(code) + ": " + explain.WithHardware(explain.Reasons().Remedy(code), decisions.Row{DevicesRequested: devices(p)})
	}
	if t := p.Annotations[api.AnnotationTemplate]; decision == api.DecisionTranslated && t != "" && !strings.Contains(msg, t) {
		msg += "; ResourceClaimTemplate " + t
	}
	e.message = explain.Truncate(msg, explain.MaxExplanation)
	return e
}

// undecidedEvent is the Event of a pod admission never decided.
func undecidedEvent(p *corev1.Pod, code reason.Code, cause string, pol *translate.Policy) podEvent {
	// Served: the strand controller tells an undecided pod no node serves.
	e := podEvent{typ: explain.Judge("", code, true).EventType(), reason: EventUndecided, decision: "Undecided", code: code}
	remedy := explain.WithHardware(explain.Reasons().Remedy(code), decisions.Row{DevicesRequested: devicesOf(pol, p)})
	e.message = explain.Truncate(explain.OneLine(fmt.Sprintf("%s: %s — %s", code, cause, remedy)), explain.MaxExplanation)
	return e
}

// devices are the extended resources a pod asks for, for a remedy that
// names them (%[1]s of the feasibility catalog).
func devices(p *corev1.Pod) map[string]int64 {
	out := map[string]int64{}
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		for name, q := range c.Resources.Limits {
			if strings.Contains(string(name), "/") {
				out[string(name)] += q.Value()
			}
		}
	}
	return out
}

func devicesOf(pol *translate.Policy, p *corev1.Pod) map[string]int64 {
	out := map[string]int64{}
	for name, n := range pol.DevicesRequested(p) {
		out[string(name)] = n
	}
	return out
}

// shapeOf names the pods that look alike: those of one owner; bare pods
// of one template or generateName.
func shapeOf(p *corev1.Pod, owner *metav1.OwnerReference) string {
	switch {
	case owner != nil:
		return "owner:" + string(owner.UID)
	case p.Annotations[api.AnnotationTemplate] != "":
		return "template:" + p.Annotations[api.AnnotationTemplate]
	}
	return "generateName:" + p.GenerateName
}

// ownerKey is one owner's pods of one decision and reason.
type ownerKey struct {
	namespace string
	uid       types.UID
	decision  string
	code      reason.Code
	verdict   string // of a translated pod: FitsNow, FitsWhenFree
}

// ownerSummary counts them in an interval, with the first one's message.
type ownerSummary struct {
	ref                  corev1.ObjectReference
	typ, reason, message string
	example              string
	pods                 int
}

// bucket is a token bucket: burst tokens, one more every refill.
type bucket struct {
	tokens float64
	at     time.Time
}

func (b *bucket) fill(now time.Time, burst int, refill time.Duration) {
	if now.After(b.at) {
		b.tokens = min(float64(burst), b.tokens+float64(now.Sub(b.at))/float64(refill))
		b.at = now
	}
}

// take takes a token if there is one.
func (b *bucket) take(now time.Time, burst int, refill time.Duration) bool {
	b.fill(now, burst, refill)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// full: the bucket is as if new, and can go.
func (b *bucket) full(now time.Time, burst int, refill time.Duration) bool {
	b.fill(now, burst, refill)
	return b.tokens >= float64(burst)
}
