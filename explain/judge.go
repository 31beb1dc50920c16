package explain

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/reason"
)

// Result is what a decision about a pod comes to for whoever reads it:
// the result of its workload in a PolicyReport, and whether the page's
// Blocked speaks of it.
type Result string

// Results, as the PolicyReport's.
const (
	// ResultPass: nothing to do — translated, or kept as submitted where
	// the pod runs and its reason asks nothing of anyone.
	ResultPass Result = "pass"
	// ResultWarn: the pod runs, or will, and someone has a decision to
	// make: a Warning reason of a pod that is served, an audit pod that
	// would move.
	ResultWarn Result = "warn"
	// ResultFail: the pod will not run, or its migration is blocked until
	// someone acts: no node it may run on serves what it asks for
	// (LegacyUnservable), or translated, it has waited for its devices past
	// --stranded-after.
	ResultFail Result = "fail"
	// ResultSkip: not claimbridge's business, and nothing to do.
	ResultSkip Result = "skip"
)

// Judgement is what a decision says to people, one answer for everything
// that speaks of it: the Event on the pod (and its owner) and the result of
// its workload in the PolicyReport.
type Judgement struct {
	Result Result
	// Warning: the Event is a Warning and the PolicyReport result's
	// severity medium (high when it fails); otherwise a Normal Event and
	// severity info.
	Warning bool
}

// Judge judges a decision from the reason that decided it and whether the
// pod is served — the one place Event types and PolicyReport results come
// from. decision is the claimbridge.io/decision value ("" for a pod
// admission never decided); code the reason that decided, whose catalog
// severity says whether it asks something of a person (a code the catalog
// does not know does, for a pod kept as submitted); served is false for a
// pod that will not run without someone acting: kept or never decided and
// no node serves what it asks for (LegacyUnservable), or translated and
// waiting for its devices past --stranded-after.
func Judge(decision string, code reason.Code, served bool) Judgement {
	e, known := catalog[code]
	warning := e.Severity == reason.SeverityWarning || (!known && decision == api.DecisionKeptLegacy)
	switch {
	case !served:
		return Judgement{Result: ResultFail, Warning: true}
	case decision == api.DecisionTranslated:
		return Judgement{Result: ResultPass}
	case decision == api.DecisionWouldTranslate:
		// Runs as submitted; moving it is the namespace's decision
		// (claimbridge.io/mode=enforce), nothing is wrong.
		return Judgement{Result: ResultWarn}
	case warning:
		return Judgement{Result: ResultWarn, Warning: true}
	case decision == api.DecisionKeptLegacy:
		return Judgement{Result: ResultPass}
	}
	return Judgement{Result: ResultSkip}
}

// EventType is the type of the Event that tells the decision.
func (j Judgement) EventType() string {
	if j.Warning {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}
