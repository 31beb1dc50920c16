package policyreport

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
)

// Names of what claimbridge writes.
const (
	// Name of the report in every opted-in namespace.
	Name = "claimbridge"
	// SourceName and PolicyName of every result.
	SourceName = "claimbridge"
	PolicyName = "claimbridge"
	// Category of every result.
	Category = "DRA migration"
	// ManagedByLabel marks the reports claimbridge writes (and may delete).
	ManagedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "claimbridge"
)

// Results are the results of a live report, one per workload: the rows of
// one kind, namespace and name (the live report gives one per workload and
// status) are one workload, and the row that needs attention most speaks
// for it (fail, warn, pass, skip; among equals by status: Blocked, Waiting,
// Ready when free, Ready now, Kept, Migrated, Skipped); the statuses of the
// others are counted in its properties. A row's result and severity are
// explain.Judge's, the Event types' too: pass for pods translated or kept
// where they run for a reason that asks nothing, warn for pods that run
// (or will) with a decision to make — a Warning reason, audit mode — fail
// for pods no node serves and translated pods Waiting longer than
// strandedAfter at now (0: never). Results come in the report's order (by
// namespace, kind and name); their timestamps are left zero.
func Results(rep *report.Report, strandedAfter time.Duration, now time.Time) []PolicyReportResult {
	if rep == nil {
		return nil
	}
	catalog := rep.Reasons
	if catalog == nil {
		catalog = explain.Reasons()
	}
	type key struct{ kind, ns, name string }
	var order []key
	groups := map[key][]report.Row{}
	for _, row := range rep.Items {
		k := key{row.Kind, row.Namespace, row.Name}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], row)
	}
	j := judging{strandedAfter: strandedAfter, now: now}
	out := make([]PolicyReportResult, 0, len(order))
	for _, k := range order {
		out = append(out, j.result(groups[k], catalog))
	}
	return out
}

// rank orders the statuses by how much they need attention.
var rank = map[decisions.Status]int{
	decisions.StatusSkipped: 0, decisions.StatusMigrated: 1, decisions.StatusKept: 2, decisions.StatusReadyNow: 3,
	decisions.StatusReadyWhenFree: 4, decisions.StatusWaiting: 5, decisions.StatusBlocked: 6,
}

// resultRank orders the results by how much they need attention.
var resultRank = map[explain.Result]int{explain.ResultSkip: 0, explain.ResultPass: 1, explain.ResultWarn: 2, explain.ResultFail: 3}

// judging judges rows: a translated pod waiting longer than strandedAfter
// (0: never) at now is not served.
type judging struct {
	strandedAfter time.Duration
	now           time.Time
}

// judge is a row's judgement (explain.Judge): its decision, the reason
// that decided and whether its pods are served — not when no node serves
// them (LegacyUnservable), nor when translated and waiting too long.
func (j judging) judge(row report.Row) explain.Judgement {
	status := StatusOf(row)
	code := deciding(row.Row).Code
	served := code != explain.ReasonLegacyUnservable
	if status == decisions.StatusWaiting && j.strandedAfter > 0 && row.WaitingSince != nil && j.now.Sub(row.WaitingSince.Time) >= j.strandedAfter {
		served = false
	}
	decision := decisionOf(status)
	if row.Unseen {
		decision = ""
	}
	return explain.Judge(decision, code, served)
}

// result is the result of one workload's rows.
func (j judging) result(rows []report.Row, catalog reason.Catalog) PolicyReportResult {
	// The last row of the highest rank speaks: among rows of one result
	// and status, the newest admission (the store's order).
	top, judged := rows[0], j.judge(rows[0])
	for _, r := range rows[1:] {
		rj := j.judge(r)
		if c := cmp.Or(resultRank[rj.Result]-resultRank[judged.Result], rank[StatusOf(r)]-rank[StatusOf(top)]); c >= 0 {
			top, judged = r, rj
		}
	}
	status := StatusOf(top)
	decisive := deciding(top.Row)
	msg := top.Headline()
	// The remedy follows the headline unless the headline says it already
	// (the live report's reasons of pods decided elsewhere do).
	if remedy := top.Remedy(catalog, decisive.Code); remedy != "" && !strings.Contains(msg, remedy) {
		if msg != "" {
			msg += " — "
		}
		msg += remedy
	}
	if msg == "" {
		// No reason recorded (a pod admitted before the webhook wrote
		// decisions): say where it stands.
		msg = fmt.Sprintf("%s (decision %s)", status, decisionOf(status))
	}
	props := map[string]string{
		"decision": decisionOf(status),
		"status":   string(status),
	}
	if top.Template != "" && (status == decisions.StatusMigrated || status == decisions.StatusWaiting) {
		props["template"] = top.Template
	}
	if d := devices(top.DevicesRequested); d != "" {
		props["devices"] = d
	}
	var replicas int64
	counted := false
	byStatus := map[decisions.Status]int64{}
	bound := map[string]bool{}
	for _, r := range rows {
		byStatus[StatusOf(r)] += r.Pods()
		if r.Replicas != nil {
			replicas += r.Pods()
			counted = true
		}
		for _, n := range r.BoundTo {
			bound[n] = true
		}
	}
	if counted {
		props["replicas"] = strconv.FormatInt(replicas, 10)
	}
	if len(byStatus) > 1 {
		var parts []string
		for _, st := range slices.SortedFunc(maps.Keys(byStatus), func(a, b decisions.Status) int { return rank[b] - rank[a] }) {
			parts = append(parts, fmt.Sprintf("%d %s", byStatus[st], st))
		}
		props["statuses"] = strings.Join(parts, ", ")
	}
	if len(bound) > 0 {
		props["node"] = strings.Join(slices.Sorted(maps.Keys(bound)), ",")
	} else if top.Node != "" && status != decisions.StatusKept && status != decisions.StatusBlocked && status != decisions.StatusSkipped {
		props["advice"] = top.Advisory()
	}
	if top.Waiting != "" && status == decisions.StatusWaiting {
		props["waiting"] = top.Waiting
	}
	return PolicyReportResult{
		Source:      SourceName,
		Policy:      PolicyName,
		Rule:        string(cmpOr(decisive.Code, reason.Code(top.Outcome))),
		Category:    Category,
		Severity:    severityOf(judged),
		Result:      PolicyResult(judged.Result),
		Subjects:    []corev1.ObjectReference{subject(top)},
		Description: msg,
		Properties:  props,
	}
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// StatusOf is where a row stands: its Status (the webhook's live rows),
// else, for rows without one, from its outcome: Waiting (translated, its
// claim not allocated yet), Migrated (translated by an admission that
// holds devices: enforce mode), Ready when free or Ready now (would be
// translated), Kept (stays on the device plugin for a reason that asks
// nothing), Blocked (stays on the device plugin, someone must act) or
// Skipped.
func StatusOf(row report.Row) decisions.Status {
	if row.Status != "" {
		return row.Status
	}
	switch {
	case row.Outcome == reason.OutcomeTranslate && row.WaitingSince != nil:
		return decisions.StatusWaiting
	case row.Outcome == reason.OutcomeTranslate && row.Admission != "":
		return decisions.StatusMigrated
	case row.Outcome == reason.OutcomeTranslate && row.Verdict == string(feasibility.FitsWhenFree):
		return decisions.StatusReadyWhenFree
	case row.Outcome == reason.OutcomeTranslate:
		return decisions.StatusReadyNow
	case row.Outcome == reason.OutcomeKeepLegacy && explain.Judge(api.DecisionKeptLegacy, deciding(row.Row).Code, true).Result == explain.ResultPass:
		return decisions.StatusKept
	case row.Outcome == reason.OutcomeKeepLegacy:
		return decisions.StatusBlocked
	}
	return decisions.StatusSkipped
}

// decisionOf is a status in the words of the pod annotation
// claimbridge.io/decision.
func decisionOf(status decisions.Status) string {
	switch status {
	case decisions.StatusMigrated, decisions.StatusWaiting:
		return api.DecisionTranslated
	case decisions.StatusReadyNow, decisions.StatusReadyWhenFree:
		return api.DecisionWouldTranslate
	case decisions.StatusKept, decisions.StatusBlocked:
		return api.DecisionKeptLegacy
	}
	return api.DecisionSkipped
}

// severityOf: what the Event would say with a Warning is medium (high
// when the pod will not run), with Normal info.
func severityOf(j explain.Judgement) PolicyResultSeverity {
	switch {
	case j.Result == explain.ResultFail:
		return SeverityHigh
	case j.Warning:
		return SeverityMedium
	}
	return SeverityInfo
}

// devices says what one pod asks for: "2× nvidia.com/gpu, 1× rdma/ib".
func devices(m map[string]int64) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d× %s", m[name], name))
	}
	return strings.Join(parts, ", ")
}

// apiVersions of the workload kinds the report names.
var apiVersions = map[string]string{
	"Pod": "v1", "ReplicationController": "v1",
	"Deployment": "apps/v1", "ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1",
	"Job": "batch/v1", "CronJob": "batch/v1",
}

// subject is the workload's object reference.
func subject(row report.Row) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: apiVersions[row.Kind], Kind: row.Kind, Namespace: row.Namespace, Name: row.Name}
}

// Summarize counts results by result.
func Summarize(results []PolicyReportResult) PolicyReportSummary {
	var s PolicyReportSummary
	for _, r := range results {
		switch r.Result {
		case ResultPass:
			s.Pass++
		case ResultFail:
			s.Fail++
		case ResultWarn:
			s.Warn++
		case ResultError:
			s.Error++
		case ResultSkip:
			s.Skip++
		}
	}
	return s
}

// deciding is the reason the headline shows (decisions.Row.Deciding), an
// empty one when the row has none.
func deciding(row decisions.Row) reason.Reason {
	if r := row.Deciding(); r != nil {
		return *r
	}
	return reason.Reason{}
}
