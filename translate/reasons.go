package translate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Outcome is what translation decided for a pod.
type Outcome string

// Outcomes.
const (
	// OutcomeTranslate: the pod was rewritten to use a ResourceClaimTemplate.
	OutcomeTranslate Outcome = "Translate"
	// OutcomeKeepLegacy: the pod asks for legacy devices but stays as it is
	// (it cannot or should not be translated); Reasons say why.
	OutcomeKeepLegacy Outcome = "KeepLegacy"
	// OutcomeSkip: the pod is not claimbridge's business (opted out, already
	// translated, mirror pod, no legacy device request).
	OutcomeSkip Outcome = "Skip"
)

// Severity of a reason. Warnings are worth a human's attention (they become
// admission warnings); Info records a decision.
type Severity string

// Severities.
const (
	SeverityInfo    Severity = "Info"
	SeverityWarning Severity = "Warning"
)

// ReasonCode is a stable PascalCase code, usable as a metrics label.
type ReasonCode string

// Reason explains one decision, with the field it is about.
type Reason struct {
	Code     ReasonCode `json:"code"`
	Severity Severity   `json:"severity"`
	Field    string     `json:"field,omitempty"`
	Message  string     `json:"message"`
}

func (r Reason) String() string {
	if r.Field == "" {
		return fmt.Sprintf("%s: %s", r.Code, r.Message)
	}
	return fmt.Sprintf("%s: %s: %s", r.Code, r.Field, r.Message)
}

// Paths every translation names, built once: a field.Path is immutable, and
// its children only point at it.
var (
	pathNodeSelector   = field.NewPath("spec", "nodeSelector")
	pathNodeAffinity   = field.NewPath("spec", "affinity", "nodeAffinity")
	pathRequiredTerms  = pathNodeAffinity.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
	pathPreferredTerms = pathNodeAffinity.Child("preferredDuringSchedulingIgnoredDuringExecution")
	pathInitContainers = field.NewPath("spec", "initContainers")
	pathContainers     = field.NewPath("spec", "containers")
)

// sayAt is say with the field path already a string.
func sayAt(code ReasonCode, path string, format string, args ...any) Reason {
	r := say(code, nil, format, args...)
	r.Field = path
	return r
}

// sayText is sayAt with a message that needs no formatting.
func sayText(code ReasonCode, path, msg string) Reason {
	return Reason{Code: code, Severity: reasons[code].Severity, Message: msg, Field: path}
}

// say makes a reason of a code, with the severity its catalog entry gives.
func say(code ReasonCode, p *field.Path, format string, args ...any) Reason {
	r := Reason{Code: code, Severity: reasons[code].Severity, Message: fmt.Sprintf(format, args...)}
	if p != nil {
		r.Field = p.String()
	}
	return r
}
