package explain

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// kube-apiserver's limits on the warnings of an admission webhook. The
// mutating dispatcher passes each one to warning.AddWarning
// (k8s.io/apiserver/pkg/admission/plugin/webhook/mutating/dispatcher.go:
// `for _, w := range result.Warnings { warning.AddWarning(ctx, "", w) }`),
// whose recorder (k8s.io/apiserver/pkg/endpoints/filters/warning.go) has
//
//	truncateAtTotalRunes = 4 * 1024
//	truncateItemRunes    = 256
//
// and, once the warnings of one request (every webhook's and the
// apiserver's own) exceed 4096 runes, cuts every warning to 256 runes; a
// warning that is not valid UTF-8 or holds a control character is dropped
// (k8s.io/apimachinery/pkg/util/net.NewWarningHeader). The API says as
// much (k8s.io/api/admission/v1 AdmissionResponse.Warnings: "Limit warnings
// to 120 characters if possible. Warnings over 256 characters and large
// numbers of warnings may be truncated.").
const (
	// MaxWarningRunes: no warning of claimbridge is longer, so the
	// apiserver's cut never reaches one.
	MaxWarningRunes = 256
	// MaxWarningsRunes: claimbridge's warnings of one pod together stay
	// within half the apiserver's budget, leaving the rest to other
	// webhooks and the apiserver's own warnings.
	MaxWarningsRunes = 2048
)

// moreInEvents ends a warning whose details were cut: the Event on the
// pod has them whole.
const moreInEvents = "… (details: the pod's Events)"

// WarningLine is one admission warning: the prefix, the code, then what
// fits of the rest, cut at maxWarningRunes with a pointer to the Event.
// Control characters become spaces and invalid UTF-8 is replaced, so that
// kube-apiserver never drops the line.
func WarningLine(prefix string, code reason.Code, rest string) string {
	return fitRunes(OneLine(prefix+string(code)+": "+rest), MaxWarningRunes, moreInEvents)
}

// OneLine makes s valid UTF-8 without control characters.
func OneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// fitRunes cuts s to at most n runes, ending in tail when cut.
func fitRunes(s string, n int, tail string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	keep := n - utf8.RuneCountInString(tail)
	i := 0
	for j := range s {
		if keep == 0 {
			i = j
			break
		}
		keep--
	}
	return strings.TrimRight(s[:i], " ;,:—-") + tail
}

// RemedyOf is the catalog's remedy of the code that decided a row
// (report.RowRemedy).
func RemedyOf(code reason.Code, row decisions.Row) string {
	return row.Remedy(catalog, code)
}

// WithHardware fills a remedy's %[1]s with the resources the row asks for.
func WithHardware(remedy string, row decisions.Row) string {
	return decisions.WithHardware(remedy, row)
}

// details is a reason's message without the code the line starts with.
func details(r *reason.Reason) string {
	if r == nil {
		return ""
	}
	if r.Field != "" {
		return r.Field + ": " + r.Message
	}
	return r.Message
}

// Warnings are the admission warnings: one line per fact worth a human's
// attention, each leading with the reason code and its remedy, the
// details after them as far as they fit (the Event on the pod has them
// whole). In audit mode the would-be change is one line.
func Warnings(mode api.Mode, outcome reason.Outcome, row decisions.Row, dryRun bool) []string {
	var out []string
	prefix := WarningPrefix(mode)
	switch outcome {
	case reason.OutcomeTranslate:
		out = append(out, WarningLine(prefix, translate.ReasonTranslated, translatedLine(mode, row, dryRun)))
	}
	decisive := row.Deciding()
	if outcome == reason.OutcomeKeepLegacy && decisive != nil {
		out = append(out, keptLine(prefix, *decisive, row))
	}
	// A code's remedy is said once: the lines after the first of a code
	// (the verdict's per-node-group details) carry their details only.
	told := map[reason.Code]bool{}
	if outcome == reason.OutcomeKeepLegacy && decisive != nil {
		told[decisive.Code] = true
	}
	for _, r := range row.Reasons {
		// The decisive reason of a kept pod is its first line already.
		if r.Severity != reason.SeverityWarning || (outcome == reason.OutcomeKeepLegacy && decisive != nil && sameReason(r, *decisive)) {
			continue
		}
		if told[r.Code] {
			out = append(out, WarningLine(prefix, r.Code, details(&r)))
			continue
		}
		told[r.Code] = true
		out = append(out, ReasonLine(prefix, r, row))
	}
	return withinBudget(out)
}

// translatedLine says which template the pod uses (or would use) and where
// the allocator found room for it.
func translatedLine(mode api.Mode, row decisions.Row, dryRun bool) string {
	verb := "uses"
	switch {
	case mode == api.ModeAudit:
		verb = "would use"
	case dryRun:
		verb = "would use (dry run, nothing created)"
	}
	return fmt.Sprintf("%s ResourceClaimTemplate %s (%s)", verb, row.Template, fitNote(row))
}

// fitNote says where the allocator found room and with which
// alternatives, as advice: kube-scheduler picks the node, not claimbridge.
func fitNote(row decisions.Row) string {
	alts := strings.Join(row.Alternatives, ",")
	if row.Node == "" {
		return row.Verdict + ": " + alts
	}
	return fmt.Sprintf("%s, e.g. on %s; kube-scheduler picks the node: %s", row.Verdict, row.Node, alts)
}

// VerdictOfExplanation is the verdict the Explanation of a translated pod
// names in its fit note ("FitsNow", "FitsWhenFree"), "" when it names
// none: what the owner's Event groups its pods by, beside the reason.
func VerdictOfExplanation(msg string) string {
	_, rest, ok := strings.Cut(msg, "ResourceClaimTemplate ")
	if !ok {
		return ""
	}
	if _, rest, ok = strings.Cut(rest, " ("); !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, ")")
	v, _, _ = strings.Cut(v, ",")
	v, _, _ = strings.Cut(v, ":")
	return v
}

// keptLine is the warning of a pod kept as submitted: the decisive code,
// its remedy, then the reason's details.
func keptLine(prefix string, decisive reason.Reason, row decisions.Row) string {
	return WarningLine(prefix, decisive.Code, "kept as submitted; "+RemedyOf(decisive.Code, row)+"; "+details(&decisive))
}

func sameReason(a, b reason.Reason) bool {
	return a.Code == b.Code && a.Field == b.Field && a.Message == b.Message
}

// ReasonLine is the warning of one more reason: the code, its remedy (out
// of the message where the message ends with it), then the details.
func ReasonLine(prefix string, r reason.Reason, row decisions.Row) string {
	rest := details(&r)
	if remedy := RemedyOf(r.Code, row); remedy != "" {
		for _, sep := range []string{": ", "; ", " — "} {
			rest = strings.TrimSuffix(rest, sep+remedy)
		}
		rest = remedy + "; " + rest
	}
	return WarningLine(prefix, r.Code, rest)
}

// withinBudget keeps the first lines that fit in maxWarningsRunes
// together; the decisive line comes first, so it always stays. A line
// said already goes (kube-apiserver would drop it: its recorder
// deduplicates).
func withinBudget(lines []string) []string {
	seen := map[string]bool{}
	lines = slices.DeleteFunc(lines, func(l string) bool {
		dup := seen[l]
		seen[l] = true
		return dup
	})
	total := 0
	for i, l := range lines {
		total += utf8.RuneCountInString(l)
		if total > MaxWarningsRunes {
			return lines[:i]
		}
	}
	return lines
}

// Explanation is the one-line account of a decision that the Event on the
// pod carries (annotation claimbridge.io/decision-message): the code, its
// remedy and the details, whole up to maxExplanation bytes.
func Explanation(decision string, code reason.Code, row decisions.Row) string {
	var b strings.Builder
	b.WriteString(string(code))
	b.WriteString(": ")
	switch decision {
	case api.DecisionTranslated, api.DecisionWouldTranslate:
		verb := "uses"
		if decision == api.DecisionWouldTranslate {
			verb = "audit mode: would use"
		}
		fmt.Fprintf(&b, "%s ResourceClaimTemplate %s (%s)", verb, row.Template, fitNote(row))
		if decision == api.DecisionWouldTranslate {
			b.WriteString("; label the namespace " + api.LabelMode + "=enforce to have such pods translated")
		}
	default:
		if remedy := RemedyOf(code, row); remedy != "" {
			b.WriteString(remedy)
		}
		if r := row.Deciding(); r != nil && r.Code == code && details(r) != "" {
			d := details(r)
			b.WriteString(" — ")
			b.WriteString(d)
		}
	}
	// The other warnings, whole: what admission warnings had to cut.
	for _, r := range row.Reasons {
		if r.Severity == reason.SeverityWarning && r.Code != code {
			b.WriteString("; also ")
			b.WriteString(r.String())
		}
	}
	return Truncate(OneLine(b.String()), MaxExplanation)
}

// MaxExplanation bounds the annotation and the Event's message (an Event
// note is at most 1 kB in events.k8s.io/v1).
const MaxExplanation = 1000

// WarningPrefix starts every warning of a decision in that mode.
func WarningPrefix(mode api.Mode) string {
	if mode == api.ModeAudit {
		return "claimbridge (audit): "
	}
	return "claimbridge: "
}

// Truncate shortens s to at most n bytes, cut at a rune boundary and ending
// in "…" when cut.
func Truncate(s string, n int) string {
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
