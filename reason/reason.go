// Package reason is how claimbridge says why: the reason code, the reason
// it is given with (a field path and a message), its severity, the outcome
// it leads to, and the catalog that says what each code means and what to
// do about it. It sits at the bottom of the tree: every layer declares its
// own codes with their entries and may import it; it imports nothing of
// claimbridge.
//
// A reason code is declared once, as a constant in the lowest package that
// emits it, with one entry in that package's catalog: the severity it is
// reported with, the outcome it leads to when it decides, the one-line
// remedy and the section of the docs that explains it. The packages above
// merge the catalogs below them ([Catalog.With]). Warnings, Events,
// metrics, the CLI's explain and the report's remedies all read the
// merged catalog; the catalog test (hack/reasons) fails when a code a
// package declares has no entry, or an entry has no remedy or no section.
//
// [Nodes] aggregates why nodes failed into the sentences a verdict gives
// ("2 nodes (a, b): …"), the nodes closest to serving named first.
package reason

import "fmt"

// Outcome is what a decision did with a pod.
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

// Code is a stable PascalCase reason code, usable as a metrics label.
type Code string

// Reason explains one decision, with the field it is about.
type Reason struct {
	Code     Code     `json:"code"`
	Severity Severity `json:"severity"`
	Field    string   `json:"field,omitempty"`
	Message  string   `json:"message"`
}

func (r Reason) String() string {
	if r.Field == "" {
		return fmt.Sprintf("%s: %s", r.Code, r.Message)
	}
	return fmt.Sprintf("%s: %s: %s", r.Code, r.Field, r.Message)
}
