package livereport

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// The live report counts what a person counts: its rows are the workloads
// of the pods the cluster has now in opted-in namespaces, read from the
// pod informer and the decision each pod carries (AnnotationDecision), so
// they survive a restart of the webhook; the rows admission recorded add
// what only the decision knew (verdict, placement, alternatives, every
// reason). Pods that ask for mapped devices and were never decided (Unseen)
// are rows too, Skipped, with their devices.

// LiveSource is what the live report reads of the cluster: the Inventory's
// pods, namespaces and claimbridge's templates.
type LiveSource interface {
	// Pods lists the pods of a namespace, of all for "".
	Pods(namespace string) []*corev1.Pod
	NamespaceMode(name string) (api.Mode, bool)
	Template(namespace, name string) (*resourceapi.ResourceClaimTemplate, bool)
}

// processStart stands for ReportStore.Started when it is not set.
var processStart = time.Now()

// Defaults of the progress history.
const (
	DefaultProgressInterval = time.Minute
	DefaultProgressSamples  = 1440 // a day, one a minute
	// DefaultProgressSamplesPerNamespace: an hour, one a minute.
	DefaultProgressSamplesPerNamespace = 60
)

// WorkloadOf names the workload a pod stands for, as the offline audit
// groups pods (it lists the controllers, and the pods no controller owns):
// a ReplicaSet's pod is its Deployment's when the pod carries the
// pod-template-hash label that the Deployment controller appends to the
// ReplicaSet's name; any other controller (Job, StatefulSet, DaemonSet, a
// custom resource) by its ownerReference; a pod without one is its own.
func WorkloadOf(p *corev1.Pod) (kind, name string) {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return "Pod", p.Name
	}
	if ref.Kind == "ReplicaSet" && strings.HasPrefix(ref.APIVersion, "apps/") {
		if h := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; h != "" {
			if dep, ok := strings.CutSuffix(ref.Name, "-"+h); ok && dep != "" {
				return "Deployment", dep
			}
		}
	}
	return ref.Kind, ref.Name
}

// livePod is one pod as the live report sees it.
type livePod struct {
	pod        *corev1.Pod
	kind, name string
	status     decisions.Status
	outcome    reason.Outcome
	reason     reason.Code
	cause      string // why an unseen pod was not decided
	unseen     bool   // asks for mapped devices, never decided
	// unservable: kept as submitted (or never decided), it does not run,
	// and no node it may run on offers what it asks for (after the switch
	// to DRA, a pod bound at creation to a node that lost the device
	// plugin): it is Blocked, and its devices are served by no one.
	unservable *reason.Reason
	// away: for an unseen pod that is unservable, the reason the webhook
	// never saw it.
	away     *reason.Reason
	admitted *decisions.Row // the admission's row, when the store has it
}

// admissions indexes the admission rows by what a pod shows of them, and
// remembers those a pod of the cache was found for.
type admissions struct {
	byID map[string]*decisions.Row
	// byName: by namespace, pod name or generateName*, outcome ("" any),
	// oldest first.
	byName map[string][]*decisions.Row
	used   map[*decisions.Row]bool
}

func indexAdmissions(rows []admitted) admissions {
	ix := admissions{byID: map[string]*decisions.Row{}, byName: map[string][]*decisions.Row{}, used: map[*decisions.Row]bool{}}
	for i := range rows { // oldest first: the latest decision wins
		r := &rows[i].row
		if r.Admission != "" {
			ix.byID[r.Admission] = r
		}
		for _, k := range []string{r.Namespace + "\x00" + r.Name + "\x00" + string(r.Outcome), r.Namespace + "\x00" + r.Name + "\x00"} {
			ix.byName[k] = append(ix.byName[k], r)
		}
	}
	return ix
}

// of finds the admission row of a pod with that outcome ("": any): by
// admission id, else by name, else by generateName (the pods of one
// template share it, and admission names such a pod "<generateName>*").
// A pod found by generateName uses every row of that name and outcome:
// the pods of its template are one row of the report, and the admissions
// of those the cache does not show yet are not rows of their own.
func (ix admissions) of(p *corev1.Pod, outcome reason.Outcome) *decisions.Row {
	if r, ok := ix.byID[p.Annotations[api.AnnotationAdmission]]; ok && (outcome == "" || r.Outcome == outcome) {
		ix.used[r] = true
		return r
	}
	for _, name := range []string{p.Name, p.GenerateName + "*"} {
		if rows := ix.byName[p.Namespace+"\x00"+name+"\x00"+string(outcome)]; len(rows) > 0 && name != "*" {
			for _, r := range rows {
				ix.used[r] = true
			}
			return rows[len(rows)-1]
		}
	}
	return nil
}

// classify says where a pod stands; false for a pod the report leaves out
// (finished, being deleted, never decided and asking for no mapped
// device).
func (s *ReportStore) classify(p *corev1.Pod, pol *translate.Policy, ix admissions, snap *feasibility.Snapshot) (livePod, bool) {
	lp, ok := s.classified(p, pol, ix)
	if !ok || snap == nil || lp.outcome == reason.OutcomeTranslate || !inventory.NotRunning(p) {
		return lp, ok
	}
	if u := decide.JudgeUnservable(pol, snap, p); u != nil {
		r := explain.Unservable(u, p, "", "", "")
		msg := r.Message
		lp.unservable = &r
		if lp.unseen {
			// Why the webhook never saw it stays among the row's reasons.
			lp.away = &reason.Reason{Code: lp.reason, Severity: catalogSeverity(lp.reason, false), Message: lp.cause}
		}
		lp.status, lp.reason, lp.cause = decisions.StatusBlocked, explain.ReasonLegacyUnservable, msg
	}
	return lp, ok
}

// classified says where a pod stands by what it carries.
func (s *ReportStore) classified(p *corev1.Pod, pol *translate.Policy, ix admissions) (livePod, bool) {
	if inventory.PodGone(p) {
		return livePod{}, false
	}
	lp := livePod{pod: p}
	lp.kind, lp.name = WorkloadOf(p)
	decision := p.Annotations[api.AnnotationDecision]
	lp.reason = reason.Code(p.Annotations[api.AnnotationReason])
	if decision == "" && p.Annotations[api.AnnotationTemplate] != "" {
		decision = api.DecisionTranslated // translated before pods carried their decision
	}
	if decision == "" {
		// Decided by a version that did not annotate: the admission's row
		// says what (the pod is not translated, so Translate is audit's).
		if r := ix.of(p, ""); r != nil {
			decision = map[reason.Outcome]string{reason.OutcomeTranslate: api.DecisionWouldTranslate, reason.OutcomeKeepLegacy: api.DecisionKeptLegacy}[r.Outcome]
			decision = cmp.Or(decision, api.DecisionSkipped)
			if r.Decisive != nil {
				lp.reason = r.Decisive.Code
			}
		}
	}
	if decision == "" {
		code, cause, ok := explain.Unseen(p, pol, s.started())
		if !ok {
			return livePod{}, false
		}
		lp.status, lp.outcome, lp.reason, lp.cause, lp.unseen = decisions.StatusSkipped, reason.OutcomeSkip, code, cause, true
		return lp, true
	}
	lp.outcome = explain.OutcomeOf(decision)
	lp.admitted = ix.of(p, lp.outcome)
	switch decision {
	case api.DecisionTranslated:
		lp.status = decisions.StatusWaiting
		if p.Spec.NodeName != "" {
			lp.status = decisions.StatusMigrated
		}
	case api.DecisionWouldTranslate:
		lp.status = decisions.StatusReadyNow
		if lp.admitted != nil && lp.admitted.Verdict == "FitsWhenFree" {
			lp.status = decisions.StatusReadyWhenFree
		}
	case api.DecisionKeptLegacy:
		lp.status = keptStatus(lp.reason)
	default:
		lp.status = decisions.StatusSkipped
	}
	return lp, true
}

// keptStatus is where a pod kept on the device plugin stands, when a node
// serves it (classify makes one that no node serves Blocked): Kept when
// its reason asks nothing of anyone (explain.Judge passes it), else
// Blocked — the page's Blocked means someone must act.
func keptStatus(code reason.Code) decisions.Status {
	if explain.Judge(api.DecisionKeptLegacy, code, true).Result == explain.ResultPass {
		return decisions.StatusKept
	}
	return decisions.StatusBlocked
}

func (s *ReportStore) started() time.Time {
	if s.Started.IsZero() {
		return processStart
	}
	return s.Started
}

// optedIn reports whether the report covers a namespace's pods.
func (s *ReportStore) optedIn(ns string) bool {
	if explain.Excluded(ns, s.OwnNamespace) {
		return false
	}
	m, ok := s.Live.NamespaceMode(ns)
	return ok && m != api.ModeOff
}

// livePods lists the pods of the report's namespaces (all for ""),
// classified; the index says which admission rows they used.
func (s *ReportStore) livePods(namespace string, adm []admitted) ([]livePod, admissions) {
	pol := s.Policy()
	var snap *feasibility.Snapshot
	if s.Fleet != nil {
		snap, _ = s.Fleet.Snapshot(s.now())
	}
	ix := indexAdmissions(adm)
	var out []livePod
	for _, p := range s.Live.Pods(namespace) {
		if (namespace != "" && p.Namespace != namespace) || !s.optedIn(p.Namespace) {
			continue
		}
		if lp, ok := s.classify(p, pol, ix, snap); ok {
			out = append(out, lp)
		}
	}
	return out, ix
}

// NotCachedFor is how long an admission's row stands for its pod while no
// pod of the cache matches it: the informer shows a pod moments after its
// admission; a row older than that is of a pod that is gone (or was never
// created: another webhook refused it).
const NotCachedFor = 30 * time.Second

// notCached are the rows of the latest admissions whose pods the cache
// does not show yet, as admission recorded them, with their status.
func (s *ReportStore) notCached(adm []admitted, ix admissions) []decisions.Row {
	now := s.now()
	var out []decisions.Row
	for i := range adm {
		a := &adm[i]
		if ix.used[&a.row] || now.Sub(a.at) > NotCachedFor || !s.optedIn(a.row.Namespace) {
			continue
		}
		row := a.row
		row.Reasons = slices.Clone(row.Reasons)
		switch row.Outcome {
		case reason.OutcomeTranslate:
			row.Status = decisions.StatusReadyNow
			if m, _ := s.Live.NamespaceMode(row.Namespace); m == api.ModeEnforce {
				row.Status = decisions.StatusWaiting
				mt := metav1.NewTime(a.at)
				row.WaitingSince, row.Waiting = &mt, now.Sub(a.at).Round(time.Second).String()
			} else if row.Verdict == "FitsWhenFree" {
				row.Status = decisions.StatusReadyWhenFree
			}
		case reason.OutcomeKeepLegacy:
			var code reason.Code
			if row.Decisive != nil {
				code = row.Decisive.Code
			}
			row.Status, row.Template, row.Alternatives, row.Devices = keptStatus(code), "", nil, nil
		default:
			row.Status, row.Template = decisions.StatusSkipped, ""
		}
		advise(&row)
		out = append(out, row)
	}
	return out
}

// liveRows groups the pods into rows: one per workload and status.
func (s *ReportStore) liveRows(pods []livePod, now time.Time) []decisions.Row {
	groups := map[groupKey][]livePod{}
	for _, lp := range pods {
		k := groupKey{lp.pod.Namespace, lp.kind, lp.name, lp.status}
		groups[k] = append(groups[k], lp)
	}
	var pending map[string]time.Time
	if s.Pending != nil {
		pending = s.Pending.PendingSince()
	}
	in := grouping{pol: s.Policy(), pending: pending, now: now}
	rows := make([]decisions.Row, 0, len(groups))
	for _, k := range slices.SortedFunc(maps.Keys(groups), func(a, b groupKey) int {
		return cmp.Or(strings.Compare(a.ns, b.ns), strings.Compare(a.kind, b.kind), strings.Compare(a.name, b.name), strings.Compare(string(a.status), string(b.status)))
	}) {
		g := groups[k]
		// Newest first: the details come from the latest decision.
		slices.SortFunc(g, func(a, b livePod) int {
			return cmp.Or(b.pod.CreationTimestamp.Compare(a.pod.CreationTimestamp.Time), strings.Compare(a.pod.Name, b.pod.Name))
		})
		rows = append(rows, s.groupRow(k, g, in))
	}
	return rows
}

// groupKey is a row of the live report: one workload in one status.
type groupKey struct {
	ns, kind, name string
	status         decisions.Status
}

// grouping is what every row of one report reads: the policy, when the
// pending translated pods started waiting, and the report's time.
type grouping struct {
	pol     *translate.Policy
	pending map[string]time.Time
	now     time.Time
}

// groupRow is the row of the pods of one workload in one status, newest
// first.
func (s *ReportStore) groupRow(k groupKey, g []livePod, in grouping) decisions.Row {
	first, status, pol, pending, now := g[0], k.status, in.pol, in.pending, in.now
	row := decisions.Row{Kind: k.kind, Namespace: k.ns, Name: k.name, Outcome: first.outcome, Status: status, Replicas: ptr.To(int32(len(g))), Unseen: first.unseen}
	for _, lp := range g {
		if lp.admitted == nil {
			continue
		}
		a := lp.admitted
		row.Verdict, row.VerdictCode, row.Node, row.Placement = a.Verdict, a.VerdictCode, a.Node, a.Placement
		row.Alternatives, row.Devices, row.Template, row.Charge = slices.Clone(a.Alternatives), slices.Clone(a.Devices), a.Template, a.Charge
		row.Decisive, row.Reasons, row.Hardware = a.Decisive, slices.Clone(a.Reasons), a.Hardware
		row.DevicesRequested = maps.Clone(a.DevicesRequested)
		break
	}
	if row.DevicesRequested == nil {
		row.DevicesRequested = s.devicesOf(first.pod, pol, first.admitted)
	}
	if row.Hardware == "" {
		submitted := first.pod
		if sub, ok := explain.Submitted(first.pod); ok {
			submitted = sub
		}
		row.Hardware = decisions.PodHardware(row.DevicesRequested, submitted)
	}
	if row.Decisive == nil || first.unseen {
		// The catalog's severity, as admission reported it.
		r := reason.Reason{Code: first.reason, Severity: catalogSeverity(first.reason, status == decisions.StatusBlocked), Message: first.cause}
		if r.Message == "" {
			r.Message = restartedMessage(status, first)
		}
		if r.Code != "" {
			row.Decisive, row.Reasons = &r, []reason.Reason{r}
			if first.away != nil {
				row.Reasons = []reason.Reason{*first.away, r}
			}
		}
	}
	// Only a translated pod names its template: a pod kept on the device
	// plugin or skipped references none, and the name its translation
	// would have had is a template that does not exist.
	switch status {
	case decisions.StatusMigrated, decisions.StatusWaiting:
		if t := first.pod.Annotations[api.AnnotationTemplate]; t != "" {
			row.Template = t
		}
		// The newest pod's admission, when it holds devices (enforce mode).
		row.Admission = first.pod.Annotations[api.AnnotationAdmission]
	case decisions.StatusKept, decisions.StatusBlocked, decisions.StatusSkipped:
		row.Template, row.Alternatives, row.Devices = "", nil, nil
	}
	switch status {
	case decisions.StatusMigrated, decisions.StatusKept:
		bound := map[string]bool{}
		for _, lp := range g {
			if lp.pod.Spec.NodeName != "" {
				bound[lp.pod.Spec.NodeName] = true
			}
		}
		row.BoundTo = slices.Sorted(maps.Keys(bound))
	case decisions.StatusWaiting:
		var since time.Time
		for _, lp := range g {
			t, ok := pending[lp.pod.Annotations[api.AnnotationAdmission]]
			if !ok || lp.pod.Annotations[api.AnnotationAdmission] == "" {
				t = lp.pod.CreationTimestamp.Time
			}
			if since.IsZero() || t.Before(since) {
				since = t
			}
		}
		mt := metav1.NewTime(since)
		row.WaitingSince, row.Waiting = &mt, now.Sub(since).Round(time.Second).String()
	}
	advise(&row)
	return row
}

// restartedMessage says what a pod's annotations tell of a decision whose
// details this replica does not have (it was decided before a restart, or
// by another replica).
func restartedMessage(status decisions.Status, lp livePod) string {
	const lost = "the verdict and reasons were not kept (decided by another replica or before a restart)"
	switch status {
	case decisions.StatusMigrated, decisions.StatusWaiting:
		return fmt.Sprintf("translated at admission to ResourceClaimTemplate %s; %s", lp.pod.Annotations[api.AnnotationTemplate], lost)
	case decisions.StatusReadyNow, decisions.StatusReadyWhenFree:
		return "would be translated (audit mode); " + lost
	}
	// Kept or skipped: the pod's own account (code, remedy, details).
	if m := lp.pod.Annotations[api.AnnotationDecisionMessage]; m != "" {
		return strings.TrimPrefix(m, string(lp.reason)+": ")
	}
	msg := fmt.Sprintf("%s at admission (%s); %s", lp.pod.Annotations[api.AnnotationDecision], lp.reason, lost)
	if e, ok := explain.Reasons().Lookup(lp.reason); ok && e.Remedy != "" {
		msg += " — " + e.Remedy
	}
	return msg
}

// advise rewords the verdict's node as advice: the allocator's node at
// admission is one place the pod could go, not where it went
// ("FitsNow on node a100-mig-0" → "FitsNow: could run on 6 nodes, e.g.
// a100-mig-0"); a Migrated row says where its pods run.
func advise(row *decisions.Row) {
	if row.Node == "" {
		return
	}
	msg := row.Verdict + ": " + row.Advisory()
	if len(row.BoundTo) > 0 {
		msg = fmt.Sprintf("%s at admission; its pods run on %s", row.Verdict, strings.Join(row.BoundTo, ", "))
	}
	reword := func(r reason.Reason) reason.Reason {
		if r.Code == decide.ReasonFeasible {
			r.Message = msg
		}
		return r
	}
	if row.Decisive != nil {
		d := reword(*row.Decisive)
		row.Decisive = &d
	}
	for i := range row.Reasons {
		row.Reasons[i] = reword(row.Reasons[i])
	}
}

// devicesOf counts the devices one pod asks for, per legacy resource the
// policy maps: as submitted (a translated pod's from its
// claimbridge.io/submitted annotation, or from the admission's row), else
// per DeviceClass of its template's requests.
func (s *ReportStore) devicesOf(p *corev1.Pod, pol *translate.Policy, admitted *decisions.Row) map[string]int64 {
	from := p
	if sub, ok := explain.Submitted(p); ok {
		from = sub
	}
	if n := pol.DevicesRequested(from); len(n) > 0 {
		out := map[string]int64{}
		for k, v := range n {
			out[string(k)] = v
		}
		return out
	}
	if admitted != nil && len(admitted.DevicesRequested) > 0 {
		return maps.Clone(admitted.DevicesRequested)
	}
	if t := p.Annotations[api.AnnotationTemplate]; t != "" {
		if tmpl, ok := s.Live.Template(p.Namespace, t); ok {
			return templateDevices(tmpl)
		}
	}
	return nil
}

// templateDevices counts the devices a template's requests ask for, per
// DeviceClass: a request's count (1 by default; "All" counts as 1, the
// number is the pool's), the first alternative of a firstAvailable one.
func templateDevices(t *resourceapi.ResourceClaimTemplate) map[string]int64 {
	out := map[string]int64{}
	add := func(class string, mode resourceapi.DeviceAllocationMode, count int64) {
		if mode != resourceapi.DeviceAllocationModeExactCount || count < 1 {
			count = 1
		}
		out[class] += count
	}
	for _, r := range t.Spec.Spec.Devices.Requests {
		switch {
		case r.Exactly != nil:
			add(r.Exactly.DeviceClassName, r.Exactly.AllocationMode, r.Exactly.Count)
		case len(r.FirstAvailable) > 0:
			add(r.FirstAvailable[0].DeviceClassName, r.FirstAvailable[0].AllocationMode, r.FirstAvailable[0].Count)
		}
	}
	return out
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// progress counts the devices of the bound pods: those DRA serves
// (translated pods) and those the device plugin serves (pods that ask for
// mapped extended resources).
func (s *ReportStore) progress(pods []livePod) report.ProgressSample {
	var out report.ProgressSample
	for _, p := range s.progressByNamespace(pods) {
		out.DRA, out.DevicePlugin, out.Unservable = out.DRA+p.DRA, out.DevicePlugin+p.DevicePlugin, out.Unservable+p.Unservable
	}
	return out
}

// progressByNamespace is the progress of each namespace with bound pods.
func (s *ReportStore) progressByNamespace(pods []livePod) map[string]report.ProgressSample {
	out := map[string]report.ProgressSample{}
	pol := s.Policy()
	for _, lp := range pods {
		if lp.pod.Spec.NodeName == "" {
			continue
		}
		p := out[lp.pod.Namespace]
		switch {
		case lp.status == decisions.StatusMigrated:
			p.DRA += sum(s.devicesOf(lp.pod, pol, lp.admitted))
		case lp.unservable != nil:
			// Bound where its resource is gone: no one serves it.
			p.Unservable += sum(stringKeys(pol.DevicesRequested(lp.pod)))
		default:
			p.DevicePlugin += sum(stringKeys(pol.DevicesRequested(lp.pod)))
		}
		out[lp.pod.Namespace] = p
	}
	return out
}

func stringKeys(m map[corev1.ResourceName]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}

// Sample measures the progress of every opted-in namespace now, keeps it
// in the bounded history and sets claimbridge_migration_devices.
func (s *ReportStore) Sample(now time.Time) report.ProgressSample {
	s.mu.Lock()
	adm := s.admittedRows("")
	s.mu.Unlock()
	pods, _ := s.livePods("", adm)
	byNS := s.progressByNamespace(pods)
	var p report.ProgressSample
	for _, n := range byNS {
		p.DRA, p.DevicePlugin, p.Unservable = p.DRA+n.DRA, p.DevicePlugin+n.DevicePlugin, p.Unservable+n.Unservable
	}
	p.Time = metav1.NewTime(now)
	if s.MigrationDevices != nil {
		s.MigrationDevices.WithLabelValues("dra").Set(float64(p.DRA))
		s.MigrationDevices.WithLabelValues("device-plugin").Set(float64(p.DevicePlugin))
		s.MigrationDevices.WithLabelValues("none").Set(float64(p.Unservable))
	}
	keep := func(h []report.ProgressSample, size int) []report.ProgressSample {
		if len(h) > size {
			h = slices.Delete(h, 0, len(h)-size)
		}
		return h
	}
	s.progMu.Lock()
	defer s.progMu.Unlock()
	s.history = keep(append(s.history, p), cmp.Or(s.ProgressSamples, DefaultProgressSamples))
	// A namespace keeps a shorter history, and none once it has no bound
	// pod left (or left the opted-in namespaces).
	perNS := cmp.Or(s.ProgressSamplesPerNamespace, DefaultProgressSamplesPerNamespace)
	if s.nsHistory == nil {
		s.nsHistory = map[string][]report.ProgressSample{}
	}
	for ns := range s.nsHistory {
		if _, ok := byNS[ns]; !ok {
			delete(s.nsHistory, ns)
		}
	}
	for ns, n := range byNS {
		n.Time = p.Time
		s.nsHistory[ns] = keep(append(s.nsHistory[ns], n), perNS)
	}
	return p
}

// progressHistory returns a copy of the samples of a namespace, of all for
// "", oldest first.
func (s *ReportStore) progressHistory(namespace string) []report.ProgressSample {
	s.progMu.Lock()
	defer s.progMu.Unlock()
	if namespace != "" {
		return slices.Clone(s.nsHistory[namespace])
	}
	return slices.Clone(s.history)
}

// synced is the live source's cache state, when it tells.
func (s *ReportStore) synced() bool {
	if sy, ok := s.Live.(interface{ Synced() bool }); ok {
		return sy.Synced()
	}
	return true
}

// Start samples the progress every ProgressInterval once the live source
// has synced, until ctx ends (a manager.Runnable, on every replica: each
// serves its own page and gauge).
func (s *ReportStore) Start(ctx context.Context) error {
	if s.Live == nil || s.Policy == nil {
		return nil
	}
	wait := time.NewTicker(200 * time.Millisecond)
	defer wait.Stop()
	for !s.synced() {
		select {
		case <-ctx.Done():
			return nil
		case <-wait.C:
		}
	}
	s.Sample(time.Now())
	tick := time.NewTicker(cmp.Or(s.ProgressInterval, DefaultProgressInterval))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			s.Sample(now)
		}
	}
}

// NeedLeaderElection: every replica serves its report.
func (s *ReportStore) NeedLeaderElection() bool { return false }

// catalogSeverity is the reason's severity in the catalog, as admission
// reports it; a code the catalog lacks is a Warning when it blocks.
func catalogSeverity(code reason.Code, blocked bool) reason.Severity {
	if e, ok := explain.Reasons().Lookup(code); (ok && e.Severity == reason.SeverityWarning) || (!ok && blocked) {
		return reason.SeverityWarning
	}
	return reason.SeverityInfo
}
