package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/metrics"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// Path is where the pod webhook is served.
const Path = "/mutate-v1-pod"

// ForwardedPath is where a replica that leads takes the admissions other
// replicas forward to it (Forwarder): they are decided there and never
// forwarded again.
const ForwardedPath = Path + "/forwarded"

// Forwarder sends an admission that would hold devices to the replica that
// leads, so that one replica decides every hold and two never hold the
// same device. An error (no leader known, or none answering in time) has
// the admission decided here.
type Forwarder interface {
	// Leads says this replica decides holds itself.
	Leads() bool
	Forward(ctx context.Context, req admission.Request) (admission.Response, error)
}

// forwardedKey marks the context of an admission forwarded by another
// replica.
type forwardedKey struct{}

// Forwarded is the handler of ForwardedPath: h's own, for admissions that
// other replicas forwarded.
func (h *PodHandler) Forwarded() admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		return h.Handle(context.WithValue(ctx, forwardedKey{}, true), req)
	})
}

// InventoryReader is what a decision reads: the informer-backed
// inventory.Inventory in the server, a static one in tests.
type InventoryReader interface {
	NamespaceMode(name string) (api.Mode, bool)
	Classes() []*resourceapi.DeviceClass
	Quotas(namespace string) []*corev1.ResourceQuota
	Snapshot(now time.Time) (*feasibility.Snapshot, error)
	Template(namespace, name string) (*resourceapi.ResourceClaimTemplate, bool)
	// WhenDRABusy is the namespace's rule for pods DRA serves only once
	// devices free up; "" for the policy's.
	WhenDRABusy(namespace string) v1alpha1.WhenDRABusy
	// OnUnservable is the namespace's rule for pods kept as submitted that
	// no node can serve; "" for the policy's.
	OnUnservable(namespace string) v1alpha1.OnUnservable
}

// DeviceHolder holds the devices of the pods admission translates until
// their claims are allocated, so that the checks of the pods after them in
// a burst count them as taken (inventory.Inventory, over its
// Reservations). It is the handler's one optional capability.
type DeviceHolder interface {
	// TakeOver holds the devices of translated pods still waiting that no
	// reservation of this replica covers, and picks again those that
	// kube-scheduler gave to other pods; it returns how many it took over.
	TakeOver(ctx context.Context, checker *feasibility.Checker, now time.Time) int
	// Reserve holds what a FitsNow verdict picked for the pod of an
	// admission (its id), from now on.
	Reserve(id string, checked *corev1.Pod, claims []*resourceapi.ResourceClaimSpec, v feasibility.Verdict, now time.Time)
	// HoldDevicePlugin counts the pod of an admission (its id) kept on the
	// device plugin while DRA was busy, until the informer shows it.
	HoldDevicePlugin(id string, pod *corev1.Pod, now time.Time)
	// DevicePluginPods lists the pods that take device-plugin room before
	// a pod admitted now (unbound, or held: HoldDevicePlugin), and gives
	// the pods bound to a node as they are now.
	DevicePluginPods(now time.Time) (waiting []*corev1.Pod, podsOn func(node string) []*corev1.Pod)
}

// RowRecorder keeps the row of each decision for the report
// (livereport.ReportStore).
type RowRecorder interface {
	Add(namespace string, row decisions.Row, now time.Time)
}

// TemplateClient creates and reads ResourceClaimTemplates (the API).
type TemplateClient interface {
	Create(ctx context.Context, t *resourceapi.ResourceClaimTemplate) error
	Get(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaimTemplate, error)
}

// PodHandler is the mutating admission handler for pods.
type PodHandler struct {
	Decoder   admission.Decoder
	Policy    func() *translate.Policy
	Inventory InventoryReader
	Checker   *feasibility.Checker
	// Platform is what is known of the platform, detected and declared
	// (package platform); nil, or a nil answer: none.
	Platform  func() *platform.Platform
	Templates TemplateClient
	// Namespace is claimbridge's own namespace; its pods are never touched.
	Namespace string
	// LookupNamespace reads a namespace the cache does not have yet (a
	// namespace created a moment ago). Optional.
	LookupNamespace func(ctx context.Context, name string) (*corev1.Namespace, error)
	// Recorder records a Denied Event in the namespace of a pod it refuses
	// (the pod never exists): at most one per namespace and reason per
	// EventInterval (default 10s), then client-go's correlator. The Events
	// of admitted pods are the leader's explain controller's, on the pod.
	// Optional.
	Recorder      record.EventRecorder
	EventInterval time.Duration
	// Report keeps every decision's row. Optional.
	Report  RowRecorder
	Metrics *metrics.Metrics
	// Recent remembers the templates admission created, so that the
	// template controller can recreate one that goes missing. Optional.
	Recent *inventory.RecentTemplates
	// Holder holds the devices of the pods this replica translates.
	// Optional: without it every check sees the fleet as the informers
	// last showed it.
	Holder DeviceHolder
	// Leader takes the admissions that would hold devices when this
	// replica does not lead. Optional: without it every replica holds
	// what it admits.
	Leader Forwarder
	Now    func() time.Time
	// SlowAdmission: an admission that takes longer is logged with where
	// its time went and counted (claimbridge_slow_admissions_total); 0:
	// never.
	SlowAdmission time.Duration

	// admitting serializes the decisions that may hold devices (enforce
	// mode, with a Holder): a check and the reservation of what it picked
	// go together, as in kube-scheduler's one scheduling loop.
	admitting sync.Mutex

	templates verifiedTemplates
	events    eventLimiter
	lookups   namespaceLookups
}

var _ admission.Handler = &PodHandler{}

// decision is what Handle decided, for metrics, events and the log.
type decision struct {
	mode    api.Mode
	outcome string
	reason  reason.Code
	message string
}

// Handle decides for one pod: decode → skip with a stated reason → namespace
// mode → decide (translation, placement, verdict) → in enforce mode, ensure
// the template, hold its devices and patch; otherwise warnings and the
// decision's annotations only. A pod admitted without translation that no
// node can serve (LegacyUnservable) is told so; it is denied only in an
// enforce namespace whose rule is onUnservable: Deny (dry runs alike).
func (h *PodHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	t := startTrace()
	resp, d := h.handle(ctx, req, t)
	t.mark(StageRespond)
	h.done(ctx, t, d)
	if h.Metrics != nil && d.outcome != outcomeForwarded {
		h.Metrics.Admissions.WithLabelValues(string(d.mode), d.outcome, string(d.reason)).Inc()
	}
	log.FromContext(ctx).V(1).Info("admission decided", "namespace", req.Namespace, "name", req.Name, "mode", d.mode,
		"outcome", d.outcome, "reason", d.reason, "dryRun", req.DryRun != nil && *req.DryRun)
	return resp
}

// handle is decode → decide → reserve → respond.
func (h *PodHandler) handle(ctx context.Context, req admission.Request, t *trace) (admission.Response, decision) {
	a, early := h.admit(ctx, req, t)
	if a == nil {
		return early.resp, early.d
	}
	defer func() { a.release() }()
	if failed := h.decide(ctx, a, t); failed != nil {
		return failed.resp, failed.d
	}
	if done := h.forward(ctx, a, t); done != nil {
		return done.resp, done.d
	}
	if failed := h.reserve(ctx, a, t); failed != nil {
		return failed.resp, failed.d
	}
	return h.respond(a)
}

// admitting is one pod creation on its way through handle.
type admitting struct {
	req  admission.Request
	mode api.Mode
	// looked is the namespace when it had to be read (newer than the
	// cache), for its other labels.
	looked *corev1.Namespace
	// pod is the pod as decided (its namespace filled in); submitted the
	// pod as it came, which the annotations are added to.
	pod, submitted *corev1.Pod
	dryRun         bool
	// holding: the decision may hold devices (enforce mode, a Holder, not
	// a dry run); release ends its serialized part. forwarding: it is
	// sent to the replica that leads if it would hold any (forward), so
	// this replica decides it without waiting or taking over.
	// devicePluginHeld: the pod is kept on the device plugin while DRA is
	// busy, and counted as taking its room (HoldDevicePlugin).
	holding, forwarding, devicePluginHeld bool
	release                               func()
	now                                   time.Time
	snap                                  *feasibility.Snapshot
	dec                                   *decide.Decision
	row                                   decisions.Row
	said                                  explain.Said
	// resp is the response as reserve left it: the patch of a translated
	// pod, or what a translation that could not be applied says.
	resp admission.Response
}

// answered is a request answered before the end: skipped, or failed.
type answered struct {
	resp admission.Response
	d    decision
}

// admit screens the request (skipped with a reason) and decodes the pod.
func (h *PodHandler) admit(ctx context.Context, req admission.Request, t *trace) (*admitting, *answered) {
	mode, looked, skipped := h.screen(ctx, req)
	t.mark(StageLookup)
	if skipped != nil {
		return nil, &answered{admission.Allowed("claimbridge: " + skipped.message + "; not mutated"), *skipped}
	}
	pod := &corev1.Pod{}
	if err := decodePod(h.Decoder, req, pod); err != nil {
		msg := fmt.Sprintf("cannot decode the pod: %v", err)
		warning := explain.WarningLine(explain.WarningPrefix(mode), explain.ReasonDecodeError, explain.Reasons().Remedy(explain.ReasonDecodeError)+"; "+msg)
		return nil, &answered{admission.Allowed("claimbridge: " + msg + "; not mutated").WithWarnings(warning),
			decision{mode: mode, outcome: "Error", reason: explain.ReasonDecodeError, message: msg}}
	}
	a := &admitting{req: req, mode: mode, looked: looked, pod: pod, submitted: pod.DeepCopy(), release: func() {}}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	t.mark(StageDecode)
	a.dryRun = req.DryRun != nil && *req.DryRun
	a.holding = mode == api.ModeEnforce && h.Holder != nil && !a.dryRun
	a.forwarding = a.holding && h.Leader != nil && ctx.Value(forwardedKey{}) == nil && !h.Leader.Leads()
	return a, nil
}

// decide decides for the pod. A holding decision waits for those before it
// and takes over what other replicas hold: the devices held and the
// verdicts are as of this decision, not of when the request came. A
// decision that does not translate in enforce mode releases at once.
func (h *PodHandler) decide(ctx context.Context, a *admitting, t *trace) *answered {
	serialized := a.holding && !a.forwarding
	if serialized {
		h.admitting.Lock()
		a.release = sync.OnceFunc(h.admitting.Unlock)
		t.mark(StageWait)
	}
	a.now = h.now()
	if serialized {
		if n := h.Holder.TakeOver(ctx, h.Checker, a.now); n > 0 && h.Metrics != nil {
			h.Metrics.ReservationsTakenOver.Add(float64(n))
		}
		t.mark(StageTakeOver)
	}
	if snap, err := h.Inventory.Snapshot(a.now); err == nil {
		a.snap = snap // nil: the decision then says the inventory is not synced
	}
	t.mark(StageSnapshot)
	// Admitted: kube-apiserver's built-in mutating plugins ran before this
	// webhook; the pod carries the tolerations its cluster gives (the
	// ExtendedResourceToleration plugin's, where it runs) and gets none
	// from claimbridge.
	in := decide.Input{Pod: a.pod, Policy: h.Policy(), Classes: h.Inventory.Classes(), Quotas: h.Inventory.Quotas(a.req.Namespace),
		Checker: h.Checker, Snapshot: a.snap, WhenDRABusy: h.Inventory.WhenDRABusy(a.req.Namespace), Admitted: true, Platform: h.platform()}
	if h.Holder != nil {
		in.DevicePluginPods = func() ([]*corev1.Pod, func(string) []*corev1.Pod) { return h.Holder.DevicePluginPods(a.now) }
	}
	dec, err := decide.Pod(ctx, in)
	if dec != nil {
		t.decided(dec.Durations)
	}
	if err != nil {
		return h.failed(a, err)
	}
	h.observe(dec)
	a.dec, a.row = dec, decisions.NewRow("Pod", a.pod, "", dec)
	if serialized && a.keptOnDevicePlugin() {
		// Counted before the next decision reads what the device plugin
		// has free.
		h.Holder.HoldDevicePlugin(string(a.req.UID), a.pod, a.now)
		a.devicePluginHeld = true
	}
	if !a.translating() {
		a.release()
	}
	return nil
}

// keptOnDevicePlugin: enforce mode, and the pod is kept as submitted
// because DRA is busy while the device plugin runs it now.
func (a *admitting) keptOnDevicePlugin() bool {
	return a.mode == api.ModeEnforce && a.row.Outcome == reason.OutcomeKeepLegacy && a.dec.Legacy != nil && a.dec.Legacy.Node != ""
}

// failed answers a decision that refused the pod: admitted as submitted,
// kept, and annotated so.
func (h *PodHandler) failed(a *admitting, err error) *answered {
	msg := fmt.Sprintf("translation failed: %v", err)
	row := decisions.Row{Decisive: &reason.Reason{Code: explain.ReasonDecideError, Severity: reason.SeverityWarning, Message: msg}}
	resp := admission.Allowed("claimbridge: " + msg)
	resp.Patches = decisionPatch(a.submitted, api.DecisionKeptLegacy, explain.ReasonDecideError, explain.Explanation(api.DecisionKeptLegacy, explain.ReasonDecideError, row))
	return &answered{resp, decision{mode: a.mode, outcome: "Error", reason: explain.ReasonDecideError, message: msg}}
}

// forward sends a decision that would hold devices, DRA's or the device
// plugin's, to the replica that leads (h.Leader), which decides it again
// with every hold of the cluster and answers it. When no leader takes it,
// the pod is decided here again, this time serialized, taking over and
// holding.
func (h *PodHandler) forward(ctx context.Context, a *admitting, t *trace) *answered {
	if !a.forwarding || (!a.translating() && !a.keptOnDevicePlugin()) {
		return nil
	}
	resp, err := h.Leader.Forward(ctx, a.req)
	t.mark(StageForward)
	if h.Metrics != nil {
		decided := "leader"
		if err != nil {
			decided = "here"
		}
		h.Metrics.AdmissionsForwarded.WithLabelValues(decided).Inc()
	}
	if err == nil {
		d := decision{mode: a.mode, outcome: outcomeForwarded, message: "decided by the replica that leads"}
		if a.row.Decisive != nil {
			d.reason = a.row.Decisive.Code
		}
		return &answered{resp, d}
	}
	log.FromContext(ctx).V(1).Info("the replica that leads did not take the admission; deciding it here", "error", err.Error())
	a.forwarding = false
	if failed := h.decide(ctx, a, t); failed != nil {
		return failed
	}
	return nil
}

// outcomeForwarded: the admission was decided by the replica that leads;
// it counts there.
const outcomeForwarded = "Forwarded"

// translating: enforce mode, and the decision translates.
func (a *admitting) translating() bool {
	return a.mode == api.ModeEnforce && a.row.Outcome == reason.OutcomeTranslate
}

// reserve applies a translation in enforce mode: the template is ensured
// (none on a dry run), the pod as translated carries what Tell says of its
// decision and, when devices are held, its admission id and the pod as
// submitted, and the verdict's devices are held. A template that cannot be
// ensured keeps the pod as submitted. Any other decision is told here.
func (h *PodHandler) reserve(ctx context.Context, a *admitting, t *trace) *answered {
	if !a.translating() {
		h.tell(a)
		return nil
	}
	res := a.dec.Translation
	if a.dryRun {
		a.row.Reasons = append(a.row.Reasons, reason.Reason{Code: explain.ReasonDryRun, Severity: reason.SeverityInfo, Message: "dry run: the template was not created"})
	} else if r := h.ensureTemplate(ctx, res.Template); r != nil {
		t.mark(StageTemplate)
		a.row.Outcome, a.row.Decisive = reason.OutcomeKeepLegacy, r
		a.row.Reasons = append(a.row.Reasons, *r)
		a.resp = admission.Allowed("claimbridge: " + r.Message)
		a.release()
		h.tell(a)
		return nil
	} else {
		t.mark(StageTemplate)
	}
	h.tell(a)
	// The translation is this request's own copy of the pod.
	setDecision(res.Pod, a.said.Decision, a.said.Code, a.said.Message)
	if a.holding {
		res.Pod.Annotations[api.AnnotationAdmission] = string(a.req.UID)
		if sub, err := explain.EncodeSubmitted(a.pod); err == nil {
			res.Pod.Annotations[api.AnnotationSubmitted] = sub
		}
		a.row.Admission = string(a.req.UID)
	}
	// The patch is written from the fields a translation changes; a pod it
	// changed anywhere else is diffed whole, once held.
	ops, written := translationPatch(a.submitted, res.Pod)
	var raw []byte
	if !written {
		var err error
		if raw, err = json.Marshal(res.Pod); err != nil {
			return &answered{admission.Errored(http.StatusInternalServerError, err), decision{mode: api.ModeEnforce, outcome: "Error", reason: explain.ReasonPatchError, message: err.Error()}}
		}
	}
	if a.holding && a.dec.Verdict != nil {
		checked := res.Pod
		if checked.Name == "" {
			checked = checked.DeepCopy()
			checked.Name = podName(a.pod)
		}
		h.Holder.Reserve(string(a.req.UID), checked, []*resourceapi.ResourceClaimSpec{&res.Template.Spec.Spec}, *a.dec.Verdict, a.now)
	}
	// Held: the patch is this request's alone.
	a.release()
	if written {
		jp := admissionv1.PatchTypeJSONPatch
		a.resp = admission.Response{Patches: ops, AdmissionResponse: admissionv1.AdmissionResponse{Allowed: true, PatchType: &jp}}
	} else {
		a.resp = admission.PatchResponseFromRaw(a.req.Object.Raw, raw)
	}
	return nil
}

// tell says what was decided (explain.Tell): for a pod kept as submitted,
// whether any node can serve it, under the namespace's onUnservable rule.
// Mirror pods (the kubelet's copies of static pods) are never judged.
func (h *PodHandler) tell(a *admitting) {
	a.row.Name = podName(a.pod)
	in := explain.Admission{Mode: a.mode, Row: &a.row, Pod: a.pod, DryRun: a.dryRun}
	if a.row.Outcome != reason.OutcomeTranslate && a.pod.Annotations[corev1.MirrorPodAnnotationKey] == "" {
		in.Unservable = decide.JudgeUnservable(h.Policy(), a.snap, a.pod)
		in.Rule, in.RuleFrom = decide.OnUnservable(h.Policy(), h.namespaceOnUnservable(a))
	}
	a.said = explain.Tell(in)
	if u := in.Unservable; u != nil && h.Metrics != nil && !a.dryRun {
		for _, g := range u.Gaps {
			h.Metrics.Unservable.WithLabelValues(string(a.mode), string(g.Resource)).Inc()
		}
	}
}

// namespaceOnUnservable is the namespace's onUnservable label, read from
// the namespace looked up when the cache did not have it yet.
func (h *PodHandler) namespaceOnUnservable(a *admitting) v1alpha1.OnUnservable {
	if a.looked != nil {
		return inventory.OnUnservableOf(a.looked)
	}
	return h.Inventory.OnUnservable(a.req.Namespace)
}

// respond answers with what was told: the refusal, the translation's
// patch, or the decision's annotations on a pod admission does not
// otherwise change; the warnings; the report's row and the Event.
func (h *PodHandler) respond(a *admitting) (admission.Response, decision) {
	s := a.said
	d := decision{mode: a.mode, outcome: s.Outcome, reason: s.Code, message: s.Headline}
	resp := a.resp
	switch {
	case s.Refusal != nil:
		resp = admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: s.Refusal}}
	case a.row.Outcome == reason.OutcomeTranslate && a.mode == api.ModeEnforce:
	default:
		// Audit mode, kept as submitted, skipped: only the decision's
		// annotations change.
		if resp.Result == nil {
			resp = admission.Allowed("claimbridge: " + string(a.row.Outcome) + ": " + explain.Truncate(s.Headline, maxAllowedMessage) + "; not mutated")
		}
		resp = annotate(a.submitted, a.row.Outcome, s, resp)
		if a.devicePluginHeld {
			resp.Patches = append(resp.Patches, jsonpatch.NewOperation("add", "/metadata/annotations/"+jsonPointerEscape(api.AnnotationDevicePluginHold), string(a.req.UID)))
		}
	}
	if h.Report != nil && !a.dryRun {
		h.Report.Add(a.req.Namespace, a.row, a.now)
	}
	h.event(a.req.Namespace, a.mode, d, a.row, a.dryRun)
	return resp.WithWarnings(s.Warnings...), d
}

// screen answers the requests that are no pod creation to decide (not a
// CREATE, not a core/v1 Pod, an excluded namespace, a namespace not opted
// in): skipped, with the decision that says why. Otherwise it returns the
// namespace's mode, and the namespace when it had to be read (newer than
// the cache).
func (h *PodHandler) screen(ctx context.Context, req admission.Request) (api.Mode, *corev1.Namespace, *decision) {
	skip := func(code reason.Code, format string, args ...any) (api.Mode, *corev1.Namespace, *decision) {
		return api.ModeOff, nil, &decision{mode: api.ModeOff, outcome: string(reason.OutcomeSkip), reason: code, message: fmt.Sprintf(format, args...)}
	}
	if req.Operation != admissionv1.Create {
		return skip(explain.ReasonNotCreate, "operation %s", req.Operation)
	}
	// Only core/v1 pods are decoded and patched; a pod of another version
	// would be read, and patched, with the wrong schema.
	if req.Kind.Group != "" || req.Kind.Version != "v1" || req.Kind.Kind != "Pod" || req.SubResource != "" {
		gvk := schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
		return skip(explain.ReasonNotPod, "not a v1 Pod (%s) %s", gvk, req.SubResource)
	}
	if explain.Excluded(req.Namespace, h.Namespace) {
		return skip(explain.ReasonExcludedNS, "namespace %s is excluded", req.Namespace)
	}
	mode, looked := h.mode(ctx, req.Namespace)
	if mode == api.ModeOff {
		return skip(explain.ReasonNamespaceOff, "namespace %s is not opted in (label %s)", req.Namespace, api.LabelMode)
	}
	return mode, looked, nil
}

// podName is the pod's name, or its generateName with a star.
func podName(pod *corev1.Pod) string {
	if pod.Name == "" {
		return pod.GenerateName + "*"
	}
	return pod.Name
}

func (h *PodHandler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// mode is the namespace's mode from the cache; a namespace newer than the
// cache is read once, and returned for its other labels.
func (h *PodHandler) mode(ctx context.Context, ns string) (api.Mode, *corev1.Namespace) {
	if m, ok := h.Inventory.NamespaceMode(ns); ok {
		return m, nil
	}
	if h.LookupNamespace == nil {
		return api.ModeOff, nil
	}
	// The namespace is newer than the cache: one read answers it.
	obj, err := h.lookups.get(ctx, ns, h.now(), h.LookupNamespace)
	if err != nil {
		log.FromContext(ctx).Error(err, "read namespace missing from the cache", "namespace", ns)
		return api.ModeOff, nil
	}
	return inventory.ModeOf(obj), obj
}

// observe records the durations of the decision's stages.
func (h *PodHandler) observe(d *decide.Decision) {
	if h.Metrics == nil {
		return
	}
	h.Metrics.TranslateDuration.Observe(d.Durations.Translate.Seconds())
	if d.Placement != nil {
		result := "Equal"
		switch {
		case d.Placement.Unknown != "":
			result = "Unknown"
		case !d.Placement.Equal():
			result = "Differs"
		}
		h.Metrics.PlacementDuration.WithLabelValues(result).Observe(d.Durations.Placement.Seconds())
	}
	if d.Verdict != nil {
		h.Metrics.FeasibilityDuration.WithLabelValues(string(d.Verdict.Kind)).Observe(d.Durations.Verdict.Seconds())
	}
}

// platform is what the handler knows of the platform, nil for nothing.
func (h *PodHandler) platform() *platform.Platform {
	if h.Platform == nil {
		return nil
	}
	return h.Platform()
}
