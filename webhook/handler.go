package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/reason"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/metrics"
	"github.com/claimbridge/claimbridge/translate"
)

// Path is where the pod webhook is served.
const Path = "/mutate-v1-pod"

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

// decision is what Handle decided, for metrics, events and the report.
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
	if h.Metrics != nil {
		h.Metrics.Admissions.WithLabelValues(string(d.mode), d.outcome, string(d.reason)).Inc()
	}
	log.FromContext(ctx).V(1).Info("admission decided", "namespace", req.Namespace, "name", req.Name, "mode", d.mode,
		"outcome", d.outcome, "reason", d.reason, "dryRun", req.DryRun != nil && *req.DryRun)
	return resp
}

func (h *PodHandler) handle(ctx context.Context, req admission.Request, t *trace) (admission.Response, decision) {
	mode, looked, skipped, d := h.screen(ctx, req)
	t.mark(StageLookup)
	if skipped {
		return admission.Allowed("claimbridge: " + d.message + "; not mutated"), d
	}
	pod := &corev1.Pod{}
	if err := h.Decoder.Decode(req, pod); err != nil {
		msg := fmt.Sprintf("cannot decode the pod: %v", err)
		warning := explain.WarningLine(explain.WarningPrefix(mode), explain.ReasonDecodeError, explain.Reasons().Remedy(explain.ReasonDecodeError)+"; "+msg)
		return admission.Allowed("claimbridge: " + msg + "; not mutated").WithWarnings(warning),
			decision{mode: mode, outcome: "Error", reason: explain.ReasonDecodeError, message: msg}
	}
	// What the annotations are added to: the pod as it came, before the
	// decision fills in its namespace.
	submitted := pod.DeepCopy()
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	t.mark(StageDecode)
	dryRun := req.DryRun != nil && *req.DryRun
	holding := mode == api.ModeEnforce && h.Holder != nil && !dryRun
	// release ends the serialized part of a holding decision: once its
	// devices are reserved (or it holds none), the next decision can see
	// them; the patch, warnings, report row and Event are its own.
	release := func() {}
	if holding {
		h.admitting.Lock()
		release = sync.OnceFunc(h.admitting.Unlock)
		defer release()
		t.mark(StageWait)
	}
	// Read after the wait: the devices held and the verdicts are as of
	// this decision, not of when the request came.
	now := h.now()
	if holding {
		if n := h.Holder.TakeOver(ctx, h.Checker, now); n > 0 && h.Metrics != nil {
			h.Metrics.ReservationsTakenOver.Add(float64(n))
		}
		t.mark(StageTakeOver)
	}
	snap, err := h.Inventory.Snapshot(now)
	if err != nil {
		snap = nil // the decision then says the inventory is not synced
	}
	t.mark(StageSnapshot)
	// Admitted: kube-apiserver's built-in mutating plugins ran before this
	// webhook; the pod carries the tolerations its cluster gives (the
	// ExtendedResourceToleration plugin's, where it runs) and gets none
	// from claimbridge.
	dec, err := decide.Pod(ctx, decide.Input{Pod: pod, Policy: h.Policy(), Classes: h.Inventory.Classes(), Quotas: h.Inventory.Quotas(req.Namespace),
		Checker: h.Checker, Snapshot: snap, WhenDRABusy: h.Inventory.WhenDRABusy(req.Namespace), Admitted: true})
	if dec != nil {
		t.decided(dec.Durations)
	}
	if err != nil {
		msg := fmt.Sprintf("translation failed: %v", err)
		// Admitted as submitted: kept, and annotated so.
		row := decisions.Row{Decisive: &reason.Reason{Code: explain.ReasonDecideError, Severity: reason.SeverityWarning, Message: msg}}
		resp := admission.Allowed("claimbridge: " + msg)
		resp.Patches = decisionPatch(submitted, api.DecisionKeptLegacy, explain.ReasonDecideError, explain.Explanation(api.DecisionKeptLegacy, explain.ReasonDecideError, row))
		return resp, decision{mode: mode, outcome: "Error", reason: explain.ReasonDecideError, message: msg}
	}
	h.observe(dec)
	row := decisions.NewRow("Pod", pod, "", dec)
	row.Reasons = slices.Clone(dec.Reasons)
	var resp admission.Response
	if mode == api.ModeEnforce && dec.Outcome == reason.OutcomeTranslate {
		var failed *decision
		if resp, failed = h.mutate(ctx, req, pod, dec, &row, holding, dryRun, now, release, t); failed != nil {
			return resp, *failed
		}
	} else {
		release()
		resp = admission.Allowed("claimbridge: " + string(row.Outcome) + ": " + explain.Truncate(row.Headline(), maxAllowedMessage) + "; not mutated")
	}
	row.Name = podName(pod)
	var unserved *unservable
	if row.Outcome != reason.OutcomeTranslate {
		rule, source := h.unservableRule(req.Namespace, looked)
		unserved = h.checkUnservable(pod, snap, mode, rule, source)
	}
	resp, d = h.tell(submitted, mode, &row, unserved, resp, dryRun)
	if h.Report != nil && !dryRun {
		h.Report.Add(req.Namespace, row, now)
	}
	h.event(req.Namespace, mode, d, row, dryRun)
	return resp, d
}

// screen answers the requests that are no pod creation to decide (not a
// CREATE, not a core/v1 Pod, an excluded namespace, a namespace not opted
// in): skipped, with the decision that says why. Otherwise it returns the
// namespace's mode, and the namespace when it had to be read (newer than
// the cache).
func (h *PodHandler) screen(ctx context.Context, req admission.Request) (api.Mode, *corev1.Namespace, bool, decision) {
	skip := func(mode api.Mode, code reason.Code, format string, args ...any) (api.Mode, *corev1.Namespace, bool, decision) {
		return mode, nil, true, decision{mode: mode, outcome: string(reason.OutcomeSkip), reason: code, message: fmt.Sprintf(format, args...)}
	}
	if req.Operation != admissionv1.Create {
		return skip(api.ModeOff, explain.ReasonNotCreate, "operation %s", req.Operation)
	}
	// Only core/v1 pods are decoded and patched; a pod of another version
	// would be read, and patched, with the wrong schema.
	if req.Kind.Group != "" || req.Kind.Version != "v1" || req.Kind.Kind != "Pod" || req.SubResource != "" {
		gvk := schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
		return skip(api.ModeOff, explain.ReasonNotPod, "not a v1 Pod (%s) %s", gvk, req.SubResource)
	}
	if explain.Excluded(req.Namespace, h.Namespace) {
		return skip(api.ModeOff, explain.ReasonExcludedNS, "namespace %s is excluded", req.Namespace)
	}
	mode, looked := h.mode(ctx, req.Namespace)
	if mode == api.ModeOff {
		return skip(api.ModeOff, explain.ReasonNamespaceOff, "namespace %s is not opted in (label %s)", req.Namespace, api.LabelMode)
	}
	return mode, looked, false, decision{}
}

// mutate applies a translation in enforce mode: the template is ensured
// (none on a dry run), the pod as translated carries its decision and,
// when devices are held, its admission id and the pod as submitted; the
// response is the patch, and the verdict's devices are held. A template
// that cannot be ensured keeps the pod as submitted: row then says so. A
// failure is the decision of a request that fails.
func (h *PodHandler) mutate(ctx context.Context, req admission.Request, pod *corev1.Pod, dec *decide.Decision, row *decisions.Row, holding, dryRun bool, now time.Time, release func(), t *trace) (admission.Response, *decision) {
	res := dec.Translation
	if dryRun {
		row.Reasons = append(row.Reasons, reason.Reason{Code: explain.ReasonDryRun, Severity: reason.SeverityInfo, Message: "dry run: the template was not created"})
	} else {
		r := h.ensureTemplate(ctx, res.Template)
		t.mark(StageTemplate)
		if r != nil {
			row.Outcome, row.Decisive = reason.OutcomeKeepLegacy, r
			row.Reasons = append(row.Reasons, *r)
			return admission.Allowed("claimbridge: " + r.Message), nil
		}
	}
	// The translation is this request's own copy of the pod.
	decided := explain.DecisionOf(api.ModeEnforce, reason.OutcomeTranslate)
	setDecision(res.Pod, decided, translate.ReasonTranslated, explain.Explanation(decided, translate.ReasonTranslated, decisions.NewRow("Pod", pod, "", dec)))
	if holding {
		res.Pod.Annotations[api.AnnotationAdmission] = string(req.UID)
		if sub, err := explain.EncodeSubmitted(pod); err == nil {
			res.Pod.Annotations[api.AnnotationSubmitted] = sub
		}
		row.Admission = string(req.UID)
	}
	raw, err := json.Marshal(res.Pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err), &decision{mode: api.ModeEnforce, outcome: "Error", reason: explain.ReasonPatchError, message: err.Error()}
	}
	if holding && dec.Verdict != nil {
		checked := res.Pod
		if checked.Name == "" {
			checked = checked.DeepCopy()
			checked.Name = podName(pod)
		}
		h.Holder.Reserve(string(req.UID), checked, []*resourceapi.ResourceClaimSpec{&res.Template.Spec.Spec}, *dec.Verdict, now)
	}
	// Held: the patch (a diff of the pod as submitted and as translated)
	// is this request's alone.
	release()
	return admission.PatchResponseFromRaw(req.Object.Raw, raw), nil
}

// tell says what was decided: the warnings, the refusal of a pod no node
// can serve where the rule is Deny, and, for a pod admission does not
// otherwise change, the decision's annotations. row gets what the report
// keeps of it (the unservable reason, the refusal).
func (h *PodHandler) tell(submitted *corev1.Pod, mode api.Mode, row *decisions.Row, unserved *unservable, resp admission.Response, dryRun bool) (admission.Response, decision) {
	if unserved != nil {
		row.Reasons = append(row.Reasons, unserved.reason)
		if h.Metrics != nil && !dryRun {
			for _, g := range unserved.gaps {
				h.Metrics.Unservable.WithLabelValues(string(mode), string(g.Resource)).Inc()
			}
		}
	}
	d := decision{mode: mode, outcome: string(row.Outcome), reason: primaryReason(row.Outcome, *row), message: row.Headline()}
	ws := explain.Warnings(mode, row.Outcome, *row, dryRun)
	if unserved != nil && unserved.deny {
		// Refused: the denial says what the warning would; the pod's other
		// warnings (why it was not translated) stay.
		row.Decisive = &unserved.reason
		d = decision{mode: mode, outcome: OutcomeDeny, reason: explain.ReasonLegacyUnservable, message: unserved.reason.Message}
		return unserved.denied(withoutLine(ws, explain.ReasonLine(explain.WarningPrefix(mode), unserved.reason, *row))), d
	}
	if row.Outcome != reason.OutcomeTranslate || mode != api.ModeEnforce {
		// Audit mode, kept as submitted, skipped: only the decision's
		// annotations change.
		resp = annotate(submitted, mode, row.Outcome, d.reason, *row, resp)
	}
	return resp.WithWarnings(ws...), d
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

// primaryReason is the reason code a metric counts: Translated, else the
// reason that decided.
func primaryReason(outcome reason.Outcome, row decisions.Row) reason.Code {
	if outcome == reason.OutcomeTranslate {
		return translate.ReasonTranslated
	}
	if row.Decisive != nil {
		return row.Decisive.Code
	}
	return ""
}
