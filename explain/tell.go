package explain

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// OutcomeDeny is the outcome of a refused admission in the metric
// claimbridge_admissions_total (the record keeps the decision's outcome).
const OutcomeDeny = "Deny"

// Admission is one admission's decision, as Tell reads it.
type Admission struct {
	Mode api.Mode
	// Row is the decision's record. Tell adds to it what the pod is told
	// beyond the decision (the LegacyUnservable reason; for a refused pod,
	// that reason is decisive), so that the report says what the pod was
	// told.
	Row *decisions.Row
	// Pod is the pod as decided (its namespace set), for the fields a
	// refusal names.
	Pod *corev1.Pod
	// Unservable is decide's judgement of a pod kept as submitted that no
	// node can serve; nil for any other. Rule and RuleFrom are the
	// namespace's onUnservable rule and where it came from
	// (decide.OnUnservable).
	Unservable *decide.Unservable
	Rule       v1alpha1.OnUnservable
	RuleFrom   string
	DryRun     bool
}

// Said is everything claimbridge says about one admission.
type Said struct {
	// Decision, Code and Message are the pod's annotations
	// (claimbridge.io/decision, claimbridge.io/reason,
	// claimbridge.io/decision-message); Message is the Event's note too.
	Decision string
	Code     reason.Code
	Message  string
	// Warnings are the admission warnings.
	Warnings []string
	// Outcome is what the metrics count: the record's outcome, or
	// OutcomeDeny for a refused pod.
	Outcome string
	// Headline is the decision's main reason as decided (before the
	// unservable reason), for the allowed response's message and the log;
	// a refused pod's is the refusal's.
	Headline string
	// Refusal refuses the pod, nil when it is admitted.
	Refusal *metav1.Status
}

// Tell turns one admission's decision into everything said about it: the
// warnings, the decision's annotations and the Event's note, and for a pod
// no node can serve whose namespace says Deny, the refusal.
func Tell(a Admission) Said {
	row := a.Row
	headline := row.Headline()
	var unservable *reason.Reason
	if a.Unservable != nil {
		r := Unservable(a.Unservable, a.Pod, a.Mode, a.Rule, a.RuleFrom)
		row.Reasons = append(row.Reasons, r)
		unservable = &r
	}
	s := Said{Decision: DecisionOf(a.Mode, row.Outcome), Code: deciding(*row), Outcome: string(row.Outcome), Headline: headline}
	s.Message = Explanation(s.Decision, s.Code, *row)
	s.Warnings = Warnings(a.Mode, row.Outcome, *row, a.DryRun)
	if unservable != nil && a.Unservable.Denied(a.Rule, a.Mode, a.Pod) {
		// Refused: the refusal says what the warning would; the pod's
		// other warnings (why it was not translated) stay.
		row.Decisive = unservable
		s.Warnings = without(s.Warnings, ReasonLine(WarningPrefix(a.Mode), *unservable, *row))
		s.Outcome, s.Code, s.Headline = OutcomeDeny, ReasonLegacyUnservable, unservable.Message
		s.Refusal = refusal(a.Unservable, a.Pod, row.Name, a.RuleFrom, *unservable)
	}
	return s
}

// deciding is the code a decision is counted and annotated by: Translated
// for a translation, else the reason that decided.
func deciding(row decisions.Row) reason.Code {
	if row.Outcome == reason.OutcomeTranslate {
		return translate.ReasonTranslated
	}
	if r := row.Deciding(); r != nil {
		return r.Code
	}
	return ""
}

// without drops the warning that says what the refusal says.
func without(warnings []string, line string) []string {
	out := warnings[:0:0]
	for _, w := range warnings {
		if w != line {
			out = append(out, w)
		}
	}
	return out
}
