package explain

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// TestWarningLinesAreCutWithTheirCodeAndRemedyFirst: a reason whose
// details are longer than a warning keeps its code and remedy, and says
// where the rest is.
func TestWarningLinesAreCutWithTheirCodeAndRemedyFirst(t *testing.T) {
	long := reason.Reason{Code: translate.ReasonNodeNamePreset, Severity: reason.SeverityWarning, Message: strings.Repeat("détail ", 100)}
	got := ReasonLine("claimbridge: ", long, decisions.Row{})
	want := "claimbridge: NodeNamePreset: " + catalog.Remedy(translate.ReasonNodeNamePreset) + "; détail"
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, moreInEvents) || utf8.RuneCountInString(got) != MaxWarningRunes {
		t.Errorf("line %q (%d runes), want it to start with %q and end with %q at %d runes", got, utf8.RuneCountInString(got), want, moreInEvents, MaxWarningRunes)
	}
	short := reason.Reason{Code: translate.ReasonOptedOut, Message: "the pod opted out\r\nX: 1\xff"}
	if got, want := ReasonLine("claimbridge: ", short, decisions.Row{}), "claimbridge: OptedOut: "+catalog.Remedy(translate.ReasonOptedOut)+"; the pod opted out  X: 1\uFFFD"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	if got := withinBudget([]string{strings.Repeat("a", 2000), strings.Repeat("b", 48), "c"}); len(got) != 2 {
		t.Errorf("kept %d lines of 2049 runes, want the 2 within %d", len(got), MaxWarningsRunes)
	}
}
