package policyreport

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
	"github.com/claimbridge/claimbridge/webhook"
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

// Statuses of a workload on its way to DRA (the live report's words).
const (
	StatusMigrated = "Migrated"
	StatusReadyNow = "Ready now"
	// StatusReadyWhenFree: translatable, the devices that can serve it are in use.
	StatusReadyWhenFree = "Ready when free"
	StatusWaiting       = "Waiting"
	StatusBlocked       = "Blocked"
	StatusSkipped       = "Skipped"
)

// Results are the results of a live report, one per workload: rows of the
// same kind, namespace and name are one workload and its newest row (the
// last of them) speaks for it. Results come in the report's order (by
// namespace, kind and name); their timestamps are left zero.
func Results(rep *report.Report) []PolicyReportResult {
	if rep == nil {
		return nil
	}
	catalog := rep.Reasons
	if catalog == nil {
		catalog = webhook.Reasons()
	}
	type key struct{ kind, ns, name string }
	var order []key
	latest := map[key]report.Row{}
	for _, row := range rep.Items {
		k := key{row.Kind, row.Namespace, row.Name}
		if _, seen := latest[k]; !seen {
			order = append(order, k)
		}
		latest[k] = row
	}
	out := make([]PolicyReportResult, 0, len(order))
	for _, k := range order {
		out = append(out, result(latest[k], catalog))
	}
	return out
}

// result is the result of one workload's row.
func result(row report.Row, catalog translate.Catalog) PolicyReportResult {
	status := StatusOf(row)
	reason := decisiveReason(row)
	msg := row.Headline()
	if remedy := catalog.Remedy(reason.Code); remedy != "" {
		if msg != "" {
			msg += " — "
		}
		msg += remedy
	}
	props := map[string]string{
		"decision": decisionOf(row),
		"status":   status,
	}
	if row.Template != "" && row.Outcome == translate.OutcomeTranslate {
		props["template"] = row.Template
	}
	if d := devices(row.DevicesRequested); d != "" {
		props["devices"] = d
	}
	if row.Replicas != nil {
		props["replicas"] = strconv.Itoa(int(*row.Replicas))
	}
	if row.Node != "" {
		props["node"] = row.Node
	}
	if row.Waiting != "" {
		props["waiting"] = row.Waiting
	}
	return PolicyReportResult{
		Source:      SourceName,
		Policy:      PolicyName,
		Rule:        string(cmpOr(reason.Code, translate.ReasonCode(row.Outcome))),
		Category:    Category,
		Severity:    severityOf(reason.Severity),
		Result:      resultOf(status),
		Subjects:    []corev1.ObjectReference{subject(row)},
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

// StatusOf is where a workload stands: Migrated (translated by the webhook
// and no longer waiting for its claim), Ready now or Ready when free
// (would be translated: audit mode), Waiting (translated, its claim not
// allocated yet), Blocked (stays on the device plugin) or Skipped.
func StatusOf(row report.Row) string {
	switch {
	case row.Outcome == translate.OutcomeTranslate && row.WaitingSince != nil:
		return StatusWaiting
	case row.Outcome == translate.OutcomeTranslate && decisionOf(row) == webhook.DecisionTranslated:
		return StatusMigrated
	case row.Outcome == translate.OutcomeTranslate && row.Verdict == string(feasibility.FitsWhenFree):
		return StatusReadyWhenFree
	case row.Outcome == translate.OutcomeTranslate:
		return StatusReadyNow
	case row.Outcome == translate.OutcomeKeepLegacy:
		return StatusBlocked
	}
	return StatusSkipped
}

// decisionOf is the row's decision in the words of the pod annotation
// claimbridge.io/decision: a translated row carries the id of the
// admission that translated it (enforce mode); audit mode leaves it out.
func decisionOf(row report.Row) string {
	switch row.Outcome {
	case translate.OutcomeTranslate:
		if row.Admission != "" || row.WaitingSince != nil {
			return webhook.DecisionTranslated
		}
		return webhook.DecisionWouldTranslate
	case translate.OutcomeKeepLegacy:
		return webhook.DecisionKeptLegacy
	}
	return webhook.DecisionSkipped
}

// resultOf: migrated pass; ready or waiting warn (not there yet); blocked
// fail; skipped skip.
func resultOf(status string) PolicyResult {
	switch status {
	case StatusMigrated:
		return ResultPass
	case StatusReadyNow, StatusReadyWhenFree, StatusWaiting:
		return ResultWarn
	case StatusBlocked:
		return ResultFail
	}
	return ResultSkip
}

// severityOf: a reason worth a human's attention (Warning) is medium, a
// recorded decision (Info) info.
func severityOf(s translate.Severity) PolicyResultSeverity {
	if s == translate.SeverityWarning {
		return SeverityMedium
	}
	return SeverityInfo
}

// decisiveReason is the reason Headline shows: the one that decided, else
// the first warning, else the last reason.
func decisiveReason(row report.Row) translate.Reason {
	if row.Decisive != nil && row.Decisive.Code != "" {
		return *row.Decisive
	}
	for _, r := range row.Reasons {
		if r.Severity == translate.SeverityWarning {
			return r
		}
	}
	if n := len(row.Reasons); n > 0 {
		return row.Reasons[n-1]
	}
	return translate.Reason{}
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
