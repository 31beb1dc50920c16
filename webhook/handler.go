package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// Path is where the pod webhook is served.
const Path = "/mutate-v1-pod"

// InventoryReader is what a decision reads: the informer-backed [Inventory]
// in the server, a [StaticInventory] for one-shot audits and tests.
type InventoryReader interface {
	NamespaceMode(name string) (Mode, bool)
	Classes() []*resourceapi.DeviceClass
	Quotas(namespace string) []*corev1.ResourceQuota
	Snapshot(now time.Time) (*feasibility.Snapshot, error)
	Template(namespace, name string) (*resourceapi.ResourceClaimTemplate, bool)
	// WhenDRABusy is the namespace's rule for pods DRA serves only once
	// devices free up; "" for the policy's.
	WhenDRABusy(namespace string) translate.WhenDRABusy
	// OnUnservable is the namespace's rule for pods kept as submitted that
	// no node can serve; "" for the policy's.
	OnUnservable(namespace string) translate.OnUnservable
}

// pendingLister lists the translated pods that wait for their claims: the
// informer-backed Inventory does, so that a replica holds the devices of
// pods another replica admitted (or it admitted before a restart).
type pendingLister interface {
	PendingTranslated() []*corev1.Pod
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
	// of admitted pods are the ExplainController's, on the pod. Optional.
	Recorder      record.EventRecorder
	EventInterval time.Duration
	Report        *ReportStore
	Metrics       *Metrics
	// Recent remembers the templates admission created, so that the
	// template controller can recreate one that goes missing. Optional.
	Recent *RecentTemplates
	// Reservations hold the devices of the pods this replica translated
	// until their claims are allocated, so that the checks of the pods
	// after them in a burst count them as taken. Optional: without it
	// every check sees the fleet as the informers last showed it.
	Reservations *Reservations
	Now          func() time.Time

	// admitting serializes the decisions that may hold devices (enforce
	// mode, with Reservations): a check and the reservation of what it
	// picked go together, as in kube-scheduler's one scheduling loop.
	admitting sync.Mutex

	// verified remembers "<namespace>/<name>@<resourceVersion>" of cached
	// templates already compared with the spec their name stands for
	// (bounded: emptied when it reaches maxVerified).
	mu       sync.Mutex
	verified map[string]bool
	events   eventLimiter
}

const maxVerified = 8192

func (h *PodHandler) isVerified(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.verified[key]
}

func (h *PodHandler) markVerified(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.verified == nil || len(h.verified) >= maxVerified {
		h.verified = map[string]bool{}
	}
	h.verified[key] = true
}

var _ admission.Handler = &PodHandler{}

// excludedNamespaces are never mutated, whatever their labels say.
var excludedNamespaces = []string{"kube-system"}

// decision is what Handle decided, for metrics, events and the report.
type decision struct {
	mode    Mode
	outcome string
	reason  translate.ReasonCode
	message string
}

// Handle decides for one pod: decode → skip with a stated reason → namespace
// mode → translate → feasibility → in enforce mode, ensure the template and
// patch; otherwise warnings only. A pod admitted without translation that
// no node can serve (LegacyUnservable) is told so; it is denied only in an
// enforce namespace whose rule is onUnservable: Deny (dry runs alike).
func (h *PodHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp, d := h.handle(ctx, req)
	if h.Metrics != nil {
		h.Metrics.Admissions.WithLabelValues(string(d.mode), d.outcome, string(d.reason)).Inc()
	}
	log.FromContext(ctx).V(1).Info("admission decided", "namespace", req.Namespace, "name", req.Name, "mode", d.mode,
		"outcome", d.outcome, "reason", d.reason, "dryRun", req.DryRun != nil && *req.DryRun)
	return resp
}

func skip(mode Mode, code translate.ReasonCode, format string, args ...any) (admission.Response, decision) {
	msg := fmt.Sprintf(format, args...)
	return admission.Allowed("claimbridge: " + msg + "; not mutated"), decision{mode: mode, outcome: string(translate.OutcomeSkip), reason: code, message: msg}
}

func (h *PodHandler) handle(ctx context.Context, req admission.Request) (admission.Response, decision) {
	if req.Operation != admissionv1.Create {
		return skip(ModeOff, ReasonNotCreate, "operation %s", req.Operation)
	}
	// Only core/v1 pods are decoded and patched; a pod of another version
	// would be read, and patched, with the wrong schema.
	if req.Kind.Group != "" || req.Kind.Version != "v1" || req.Kind.Kind != "Pod" || req.SubResource != "" {
		gvk := schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
		return skip(ModeOff, ReasonNotPod, "not a v1 Pod (%s) %s", gvk, req.SubResource)
	}
	ns := req.Namespace
	if ns == h.Namespace || slices.Contains(excludedNamespaces, ns) {
		return skip(ModeOff, ReasonExcludedNS, "namespace %s is excluded", ns)
	}
	mode, looked := h.mode(ctx, ns)
	if mode == ModeOff {
		return skip(ModeOff, ReasonNamespaceOff, "namespace %s is not opted in (label %s)", ns, ModeLabel)
	}
	pod := &corev1.Pod{}
	if err := h.Decoder.Decode(req, pod); err != nil {
		msg := fmt.Sprintf("cannot decode the pod: %v", err)
		return admission.Allowed("claimbridge: " + msg + "; not mutated").WithWarnings(warningLine(warningPrefix(mode), ReasonDecodeError, catalog.Remedy(ReasonDecodeError)+"; "+msg)),
			decision{mode: mode, outcome: "Error", reason: ReasonDecodeError, message: msg}
	}
	// What the annotations are added to: the pod as it came, before the
	// decision fills in its namespace.
	submitted := pod.DeepCopy()
	if pod.Namespace == "" {
		pod.Namespace = ns
	}
	now := h.now()
	reserving := mode == ModeEnforce && h.Reservations != nil && (req.DryRun == nil || !*req.DryRun)
	if reserving {
		h.admitting.Lock()
		defer h.admitting.Unlock()
		h.takeOver(ctx, now)
	}

	snap, err := h.Inventory.Snapshot(now)
	if err != nil {
		snap = nil // the decision then says the inventory is not synced
	}
	// Admitted: kube-apiserver's built-in mutating plugins ran before this
	// webhook; the pod carries the tolerations its cluster gives (the
	// ExtendedResourceToleration plugin's, where it runs) and gets none
	// from claimbridge.
	dec, err := decide.Pod(ctx, decide.Input{Pod: pod, Policy: h.Policy(), Classes: h.Inventory.Classes(), Quotas: h.Inventory.Quotas(ns),
		Checker: h.Checker, Snapshot: snap, WhenDRABusy: h.Inventory.WhenDRABusy(ns), Admitted: true})
	if err != nil {
		msg := fmt.Sprintf("translation failed: %v", err)
		d := decision{mode: mode, outcome: "Error", reason: ReasonDecideError, message: msg}
		// Admitted as submitted: kept, and annotated so.
		row := report.Row{Decisive: &translate.Reason{Code: ReasonDecideError, Severity: translate.SeverityWarning, Message: msg}}
		return h.annotated(req, submitted, DecisionKeptLegacy, ReasonDecideError, row, admission.Allowed("claimbridge: "+msg)), d
	}
	h.observe(dec)
	res := dec.Translation
	outcome, reasons := dec.Outcome, slices.Clone(dec.Reasons)
	dryRun := req.DryRun != nil && *req.DryRun

	var resp admission.Response
	var ensureReason *translate.Reason
	mutating := mode == ModeEnforce && outcome == translate.OutcomeTranslate
	if mutating {
		if dryRun {
			reasons = append(reasons, translate.Reason{Code: ReasonDryRun, Severity: translate.SeverityInfo, Message: "dry run: the template was not created"})
		} else if r := h.ensureTemplate(ctx, res.Template); r != nil {
			ensureReason = r
		}
		if ensureReason != nil {
			outcome = translate.OutcomeKeepLegacy
			reasons = append(reasons, *ensureReason)
			resp = admission.Allowed("claimbridge: " + ensureReason.Message)
		} else {
			// The translation is this request's own copy of the pod.
			setDecision(res.Pod, DecisionOf(mode, outcome), translate.ReasonTranslated,
				explanation(DecisionOf(mode, outcome), translate.ReasonTranslated, report.NewRow("Pod", pod, "", dec)))
			if reserving {
				res.Pod.Annotations[AnnotationAdmission] = string(req.UID)
				if sub, err := submittedAnnotation(pod); err == nil {
					res.Pod.Annotations[AnnotationSubmitted] = sub
				}
			}
			raw, err := json.Marshal(res.Pod)
			if err != nil {
				return admission.Errored(http.StatusInternalServerError, err), decision{mode: mode, outcome: "Error", reason: ReasonPatchError, message: err.Error()}
			}
			resp = admission.PatchResponseFromRaw(req.Object.Raw, raw)
			if reserving && dec.Verdict != nil {
				checked := res.Pod
				if checked.Name == "" {
					checked = checked.DeepCopy()
					checked.Name = podName(pod)
				}
				h.Reservations.Reserve(string(req.UID), checked, []*resourceapi.ResourceClaimSpec{&res.Template.Spec.Spec}, *dec.Verdict, now)
			}
		}
	}

	row := report.NewRow("Pod", pod, "", dec)
	row.Outcome, row.Reasons = outcome, reasons
	if reserving && outcome == translate.OutcomeTranslate {
		row.Admission = string(req.UID)
	}
	if ensureReason != nil {
		row.Decisive = ensureReason
	}
	if !mutating {
		resp = admission.Allowed("claimbridge: " + string(outcome) + ": " + truncate(row.Headline(), maxAllowedMessage) + "; not mutated")
	}
	row.Name = podName(pod)
	var unserved *unservable
	if outcome != translate.OutcomeTranslate {
		rule, source := h.unservableRule(ns, looked)
		unserved = h.checkUnservable(pod, snap, mode, rule, source)
	}
	if unserved != nil {
		row.Reasons = append(row.Reasons, unserved.reason)
		if h.Metrics != nil && !dryRun {
			for _, g := range unserved.gaps {
				h.Metrics.Unservable.WithLabelValues(string(mode), string(g.Resource)).Inc()
			}
		}
	}
	d := decision{mode: mode, outcome: string(outcome), reason: primaryReason(outcome, row), message: row.Headline()}
	ws := warnings(mode, outcome, row, dryRun)
	if unserved != nil && unserved.deny {
		// Refused: the denial says what the warning would; the pod's other
		// warnings (why it was not translated) stay.
		row.Decisive = &unserved.reason
		d = decision{mode: mode, outcome: OutcomeDeny, reason: ReasonLegacyUnservable, message: unserved.reason.Message}
		resp = unserved.denied(withoutLine(ws, reasonLine(warningPrefix(mode), unserved.reason, row)))
	} else {
		if outcome != translate.OutcomeTranslate || mode != ModeEnforce {
			// Audit mode, kept as submitted, skipped: only the decision's
			// annotations change.
			resp = h.annotate(req, submitted, mode, outcome, d.reason, row, resp)
		}
		resp = resp.WithWarnings(ws...)
	}
	if h.Report != nil && !dryRun {
		h.Report.Add(ns, row, now)
	}
	h.event(ns, mode, d, row, dryRun)
	return resp, d
}

// takeOver holds the devices of translated pods that wait for their claims
// and that no reservation of this replica covers (another replica admitted
// them, or this one before a restart): each is checked against the fleet
// as it stands, in creation order, and what the allocator picks for it is
// held like a pod admitted here. A pod that does not fit now is not tried
// again before the reservation TTL.
func (h *PodHandler) takeOver(ctx context.Context, now time.Time) {
	h.repick(ctx, now)
	lister, ok := h.Inventory.(pendingLister)
	if !ok {
		return
	}
	var allocated Allocations
	if src, ok := h.Inventory.(allocationSource); ok {
		allocated = src.Allocations()
	}
	// kube-scheduler allocated the claim of a pod it has not bound yet:
	// the inventory counts that claim already (its reservation ended for
	// that reason); holding devices for it again would count the pod twice.
	unheld := func(p *corev1.Pod) bool {
		return !h.Reservations.Held(p.Annotations[AnnotationAdmission], now) && (allocated == nil || !allocated.PodClaimAllocated(p.UID))
	}
	var pending []*corev1.Pod
	if where, ok := lister.(interface {
		PendingTranslatedWhere(func(*corev1.Pod) bool) []*corev1.Pod
	}); ok {
		pending = where.PendingTranslatedWhere(unheld) // sorts those only
	} else {
		for _, p := range lister.PendingTranslated() {
			if unheld(p) {
				pending = append(pending, p)
			}
		}
	}
	for _, p := range pending {
		id := p.Annotations[AnnotationAdmission]
		tmpl, ok := h.Inventory.Template(p.Namespace, p.Annotations[translate.AnnotationTemplate])
		snap, err := h.Inventory.Snapshot(now)
		if !ok || err != nil {
			h.Reservations.Tried(id, now)
			continue
		}
		v := h.Checker.Check(ctx, snap, p, []*resourceapi.ResourceClaimSpec{&tmpl.Spec.Spec})
		if v.Kind != feasibility.FitsNow {
			h.Reservations.Tried(id, now)
			continue
		}
		h.Reservations.Reserve(id, p, []*resourceapi.ResourceClaimSpec{&tmpl.Spec.Spec}, v, p.CreationTimestamp.Time)
		h.Reservations.Seen(id, p.UID)
		if h.Metrics != nil {
			h.Metrics.ReservationsTakenOver.Inc()
		}
	}
}

// allocationSource answers what the inventory's allocated claims hold
// (without the reservations).
type allocationSource interface {
	Allocations() Allocations
}

// repick picks again the devices of reservations that kube-scheduler gave
// to another pod's claim in the meantime (it places pods in its own order):
// held on devices already counted as allocated, they would leave the
// devices the scheduler will give their pod looking free.
func (h *PodHandler) repick(ctx context.Context, now time.Time) {
	src, ok := h.Inventory.(allocationSource)
	if !ok || h.Reservations.Len() == 0 {
		return
	}
	for _, c := range h.Reservations.Conflicting(src.Allocations()) {
		snap, err := h.Inventory.Snapshot(now)
		if err != nil {
			return
		}
		h.Reservations.Repick(c, h.Checker.Check(ctx, snap, c.Pod, c.Claims))
	}
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
func (h *PodHandler) mode(ctx context.Context, ns string) (Mode, *corev1.Namespace) {
	if m, ok := h.Inventory.NamespaceMode(ns); ok {
		return m, nil
	}
	if h.LookupNamespace == nil {
		return ModeOff, nil
	}
	// The namespace is newer than the cache: one read answers it.
	obj, err := h.LookupNamespace(ctx, ns)
	if err != nil {
		log.FromContext(ctx).Error(err, "read namespace missing from the cache", "namespace", ns)
		return ModeOff, nil
	}
	return modeOf(obj), obj
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

// ensureTemplate makes sure the template exists with this spec: the cache
// answers for templates that exist; otherwise it is created (AlreadyExists
// from a concurrent replica is success once the specs agree). A template of
// that name with another spec, or not made by claimbridge, is a conflict:
// the pod then stays legacy.
func (h *PodHandler) ensureTemplate(ctx context.Context, t *resourceapi.ResourceClaimTemplate) *translate.Reason {
	if h.Recent != nil {
		h.Recent.Remember(t)
	}
	if have, ok := h.Inventory.Template(t.Namespace, t.Name); ok {
		key := have.Namespace + "/" + have.Name + "@" + have.ResourceVersion
		if have.ResourceVersion != "" && h.isVerified(key) {
			return nil
		}
		r := conflict(have, t)
		if r == nil {
			h.markVerified(key)
		}
		return r
	}
	err := h.Templates.Create(ctx, t)
	if err == nil {
		if h.Metrics != nil {
			h.Metrics.TemplatesCreated.Inc()
		}
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return &translate.Reason{Code: ReasonTemplateError, Severity: translate.SeverityWarning,
			Message: fmt.Sprintf("cannot create ResourceClaimTemplate %s/%s: %v; the pod stays as submitted", t.Namespace, t.Name, err)}
	}
	have, err := h.Templates.Get(ctx, t.Namespace, t.Name)
	if err != nil {
		return &translate.Reason{Code: ReasonTemplateError, Severity: translate.SeverityWarning,
			Message: fmt.Sprintf("cannot read ResourceClaimTemplate %s/%s: %v; the pod stays as submitted", t.Namespace, t.Name, err)}
	}
	return conflict(have, t)
}

func conflict(have, want *resourceapi.ResourceClaimTemplate) *translate.Reason {
	if have.Labels[translate.LabelManagedBy] == translate.ManagedByValue && equality.Semantic.DeepEqual(have.Spec.Spec, want.Spec.Spec) {
		return nil
	}
	return &translate.Reason{Code: ReasonTemplateConflict, Severity: translate.SeverityWarning,
		Message: fmt.Sprintf("ResourceClaimTemplate %s/%s exists with another spec or was not created by claimbridge; the pod stays as submitted", want.Namespace, want.Name)}
}

// primaryReason is the reason code a metric counts: Translated, else the
// reason that decided.
func primaryReason(outcome translate.Outcome, row report.Row) translate.ReasonCode {
	if outcome == translate.OutcomeTranslate {
		return translate.ReasonTranslated
	}
	if row.Decisive != nil {
		return row.Decisive.Code
	}
	return ""
}

// warningPrefix starts every warning of a decision in that mode.
func warningPrefix(mode Mode) string {
	if mode == ModeAudit {
		return "claimbridge (audit): "
	}
	return "claimbridge: "
}

// event records a Denied Event in the namespace: a denied pod never
// exists, so there is no pod to put it on (a controller's own FailedCreate
// Event says so on the owner). Every pod admitted gets its Event from the
// leader's ExplainController instead. At most one per namespace and reason
// per EventInterval (default 10s), then client-go's correlator.
func (h *PodHandler) event(ns string, mode Mode, d decision, row report.Row, dryRun bool) {
	if h.Recorder == nil || dryRun || d.outcome != OutcomeDeny {
		return
	}
	obj := &corev1.ObjectReference{Kind: "Namespace", APIVersion: "v1", Name: ns, Namespace: ns}
	if !h.events.allow(ns+"/Denied/"+string(d.reason), h.now(), h.EventInterval) {
		return
	}
	h.Recorder.Eventf(obj, corev1.EventTypeWarning, "Denied", "pod %s/%s (%s mode): %s", ns, row.Name, mode, truncate(d.message, 900))
}

// eventLimiter lets one Event per key through per interval, before the
// recorder's own correlator: a Deployment of a thousand replicas produces a
// handful of Events, and admission does not pay for a thousand.
type eventLimiter struct {
	mu   sync.Mutex
	last map[string]time.Time
}

const maxEventKeys = 4096

func (l *eventLimiter) allow(key string, now time.Time, interval time.Duration) bool {
	if interval <= 0 {
		interval = 10 * time.Second
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.last[key]; ok && now.Sub(t) < interval {
		return false
	}
	if l.last == nil || len(l.last) >= maxEventKeys {
		l.last = map[string]time.Time{}
	}
	l.last[key] = now
	return true
}

// truncate shortens s to at most n bytes, cut at a rune boundary and ending
// in "…" when cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
