package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/translate"
)

// DefaultStrandedAfter is how long a translated pod may wait for its claim
// while the device plugin has room for it before it counts as stranded.
const DefaultStrandedAfter = 2 * time.Minute

// StrandController finds translated pods that wait for their claims while
// the device plugin has room for them as submitted — what a burst can
// still leave behind, e.g. pods admitted by two replicas at the same
// moment — and says so: a Warning Event on the pod and on its owner, and
// the gauge claimbridge_stranded_pods. In a namespace labelled
// claimbridge.io/repair=Recreate it deletes such a pod when a controller
// owns it and it has never started, so that the controller creates it again
// and the webhook decides again; bare pods are never deleted. Namespaces
// that chose whenDRABusy: Wait are neither counted nor repaired.
//
// A translated pod that waits for its DRA devices past After with no
// device-plugin node to run it instead (or in a namespace that chose to
// wait) gets a DRABusyWaiting Warning Event, and its owner one: admission
// told it Normal, and waiting this long someone must act
// (free or add DRA devices, or keep such pods on the device plugin).
//
// It also finds the pods that no node can serve: Pending and unbound in an
// opted-in namespace, asking for an extended resource that no node
// advertises as much of as they need (after the switch to DRA, no node
// offers nvidia.com/gpu any more). Each gets a LegacyUnservable Warning
// Event once, and its owner (a Deployment's ReplicaSet, a Job, …) one while
// it has such pods; the gauge claimbridge_unservable_pods counts them.
// Admission cannot put these Events on the pod: it has no name yet.
//
// It runs on the leader.
type StrandController struct {
	Client    kubernetes.Interface
	Inventory *inventory.Inventory
	Policy    func() *translate.Policy
	Recorder  record.EventRecorder
	Stranded  prometheus.Gauge
	Recreated prometheus.Counter
	// Unservable counts the pods no node can serve. Optional.
	Unservable prometheus.Gauge
	// Namespace is claimbridge's own: its pods, like kube-system's, are
	// never judged.
	Namespace string
	// After is how long a pod waits before it counts. Default
	// DefaultStrandedAfter.
	After time.Duration
	// Interval between passes. Default After/4, between 1s and 30s.
	Interval time.Duration
	Now      func() time.Time

	told map[string]bool // pods (namespace/name/uid) already told about
	// buckets limit the LegacyUnservable Events on pods per pod shape, as
	// the ExplainController's (DefaultExplainBurst, one more every
	// DefaultExplainRefill): a scale-up after the switch tells a few pods
	// and the owner, whose Event counts them, not every pod.
	buckets map[string]*bucket
}

// NeedLeaderElection: one replica speaks and repairs.
func (c *StrandController) NeedLeaderElection() bool { return true }

// Start runs the controller until ctx ends.
func (c *StrandController) Start(ctx context.Context) error {
	if c.After <= 0 {
		c.After = DefaultStrandedAfter
	}
	if c.Interval <= 0 {
		c.Interval = min(max(c.After/4, time.Second), 30*time.Second)
	}
	t := time.NewTicker(c.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if c.Inventory.Synced() {
				c.Reconcile(ctx)
			}
		}
	}
}

// Reconcile runs one pass.
func (c *StrandController) Reconcile(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("stranded")
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	if c.told == nil {
		c.told = map[string]bool{}
	}
	snap, err := c.Inventory.Snapshot(now)
	if err != nil {
		return
	}
	stranded := 0
	seen := map[string]bool{}
	for _, p := range c.Inventory.PendingTranslated() {
		if now.Sub(p.CreationTimestamp.Time) < c.After {
			continue
		}
		var fit feasibility.LegacyFit
		if legacy, ok := explain.Submitted(p); ok {
			fit = snap.LegacyFitsNow(legacy)
		}
		if fit.Node == "" || c.waits(p.Namespace) {
			c.tellWaiting(p, fit, seen, now)
			continue
		}
		stranded++
		key := p.Namespace + "/" + p.Name + "/" + string(p.UID)
		seen[key] = true
		msg := fmt.Sprintf("translated pod %s has waited %s for DRA devices while the device plugin has room for it as submitted on %d node(s), e.g. %s",
			p.Name, now.Sub(p.CreationTimestamp.Time).Round(time.Second), fit.Nodes, fit.Node)
		owner := metav1.GetControllerOf(p)
		if c.Inventory.Repair(p.Namespace) == api.RepairRecreate && owner != nil {
			err := c.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
			switch {
			case err == nil:
				c.event(p, owner, "StrandedPodRecreated", msg+"; deleted so that its "+owner.Kind+" creates it again")
				if c.Recreated != nil {
					c.Recreated.Inc()
				}
				logger.Info("recreating stranded pod", "namespace", p.Namespace, "name", p.Name, "owner", owner.Kind+"/"+owner.Name)
				continue
			case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
				logger.Error(err, "delete stranded pod", "namespace", p.Namespace, "name", p.Name)
			}
		}
		if !c.told[key] {
			c.told[key] = true
			c.event(p, owner, "StrandedPod", msg+"; it would run now if created again (label the namespace claimbridge.io/repair=Recreate to have its controller do so)")
		}
	}
	unservable := c.tellUnservable(snap, seen, now)
	for key := range c.told {
		if !seen[key] {
			delete(c.told, key)
		}
	}
	if c.Stranded != nil {
		c.Stranded.Set(float64(stranded))
	}
	if c.Unservable != nil {
		c.Unservable.Set(float64(unservable))
	}
}

// tellWaiting puts a DRABusyWaiting Warning Event on a translated pod that
// has waited for its DRA devices past After — no device-plugin node has
// room for it as submitted either, or its namespace chose whenDRABusy:
// Wait — once, within its shape's limit, and one on its owner while it has
// such pods; it marks what it told in seen. Admission told it Normal
// Translated (explain.Judge: translated and served); waiting this long, it
// is not served, and someone must act.
func (c *StrandController) tellWaiting(p *corev1.Pod, fit feasibility.LegacyFit, seen map[string]bool, now time.Time) {
	reason := string(decide.ReasonDRABusyWaiting)
	why := "no device-plugin node has room for it as submitted either"
	switch {
	case fit.Node != "":
		why = fmt.Sprintf("its namespace chose whenDRABusy: Wait, although the device plugin has room for it on %d node(s), e.g. %s", fit.Nodes, fit.Node)
	case !fit.Known:
		why = "whether a device-plugin node has room for it is not known"
	}
	msg := fmt.Sprintf("translated pod %s has waited %s for DRA devices (in use, or held for other pods); %s: %s",
		p.Name, now.Sub(p.CreationTimestamp.Time).Round(time.Second), why, explain.Reasons().Remedy(decide.ReasonDRABusyWaiting))
	typ := explain.Judge(api.DecisionTranslated, decide.ReasonDRABusyWaiting, false).EventType()
	c.tellOnce(p, telling{typ: typ, reason: reason, msg: msg, ownerMsg: msg}, seen, now)
}

// telling is one Event of a pod and its owner's: its type, reason and
// note on each.
type telling struct {
	typ, reason, msg, ownerMsg string
}

// tellOnce records the Event on the pod once (within its shape's limit: a
// pod over it is told by its owner's Event and is not tried again) and on
// its owner once while the owner has such pods; it marks both in seen.
func (c *StrandController) tellOnce(p *corev1.Pod, e telling, seen map[string]bool, now time.Time) {
	typ, reason, msg, ownerMsg := e.typ, e.reason, e.msg, e.ownerMsg
	owner := metav1.GetControllerOf(p)
	key := reason + "/" + p.Namespace + "/" + p.Name + "/" + string(p.UID)
	seen[key] = true
	if !c.told[key] {
		c.told[key] = true
		if c.allow(reason+"/"+shapeOf(p, owner), now) {
			c.recordAs(&corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID}, typ, reason, msg)
		}
	}
	if owner == nil {
		return
	}
	key = reason + "/owner/" + string(owner.UID)
	seen[key] = true
	if !c.told[key] {
		c.told[key] = true
		c.recordAs(&corev1.ObjectReference{Kind: owner.Kind, APIVersion: owner.APIVersion, Namespace: p.Namespace, Name: owner.Name, UID: owner.UID}, typ, reason, ownerMsg)
	}
}

// tellUnservable puts a LegacyUnservable Warning Event on each pending,
// unbound pod of an opted-in namespace that no node can serve, once, and on
// its owner, once while the owner has such pods; it marks what it told in
// seen and returns how many such pods there are.
func (c *StrandController) tellUnservable(snap *feasibility.Snapshot, seen map[string]bool, now time.Time) int {
	policy := translate.DefaultPolicy()
	if c.Policy != nil {
		policy = c.Policy()
	}
	count := 0
	for _, p := range c.Inventory.NotRunning() {
		if explain.Excluded(p.Namespace, c.Namespace) {
			continue
		}
		if mode, ok := c.Inventory.NamespaceMode(p.Namespace); !ok || mode == api.ModeOff {
			continue
		}
		u := decide.JudgeUnservable(policy, snap, p)
		if u == nil {
			continue
		}
		count++
		msg := explain.Unservable(u, p, "", "", "").Message
		c.tellOnce(p, telling{typ: corev1.EventTypeWarning, reason: string(explain.ReasonLegacyUnservable), msg: msg, ownerMsg: "pod " + p.Name + ": " + msg}, seen, now)
	}
	c.forgetFullBuckets(now)
	return count
}

// allow takes a token of the shape's bucket.
func (c *StrandController) allow(shape string, now time.Time) bool {
	if c.buckets == nil {
		c.buckets = map[string]*bucket{}
	}
	b := c.buckets[shape]
	if b == nil {
		b = &bucket{tokens: float64(DefaultExplainBurst), at: now}
		c.buckets[shape] = b
	}
	return b.take(now, DefaultExplainBurst, DefaultExplainRefill)
}

// forgetFullBuckets drops the buckets that are as if new.
func (c *StrandController) forgetFullBuckets(now time.Time) {
	for shape, b := range c.buckets {
		if b.full(now, DefaultExplainBurst, DefaultExplainRefill) {
			delete(c.buckets, shape)
		}
	}
}

// recordAs records an Event of that type.
func (c *StrandController) recordAs(ref *corev1.ObjectReference, typ, reason, msg string) {
	if c.Recorder != nil {
		c.Recorder.Event(ref, typ, reason, msg)
	}
}

// waits: the namespace (or the policy) chose to wait for DRA.
func (c *StrandController) waits(ns string) bool {
	var p *translate.Policy
	if c.Policy != nil {
		p = c.Policy()
	}
	return decide.WhenDRABusy(p, c.Inventory.WhenDRABusy(ns)) == v1alpha1.WhenDRABusyWait
}

// event records a Warning on the pod and on its controller.
func (c *StrandController) event(p *corev1.Pod, owner *metav1.OwnerReference, reason, msg string) {
	if c.Recorder == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID}
	c.Recorder.Event(ref, corev1.EventTypeWarning, reason, msg)
	if owner != nil {
		c.Recorder.Event(&corev1.ObjectReference{Kind: owner.Kind, APIVersion: owner.APIVersion, Namespace: p.Namespace, Name: owner.Name, UID: owner.UID},
			corev1.EventTypeWarning, reason, msg)
	}
}
