package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/reason"
)

// TestARehearsalSaysWhichReleaseItRan: the page of a rehearsal, in every format, says the
// Kubernetes release of its control plane, where its binaries came from, and how many
// workloads were bound as forecast.
func TestARehearsalSaysWhichReleaseItRan(t *testing.T) {
	rows := []Row{
		{Row: decisions.Row{Kind: "Deployment", Namespace: "lab", Name: "notebook", Outcome: reason.OutcomeTranslate},
			Cutover: &cutover.Effect{Result: cutover.Moves, Pods: 2, Served: 2}, Rehearsed: &cutover.Rehearsed{Pods: 2, Bound: 2, Agrees: true}},
		{Row: decisions.Row{Kind: "Job", Namespace: "research", Name: "batch", Outcome: reason.OutcomeTranslate},
			Cutover: &cutover.Effect{Result: cutover.Moves, Pods: 3, Served: 3}, Rehearsed: &cutover.Rehearsed{Pods: 3, Bound: 2}},
	}
	rep := New("fleet (rehearsed after the switch to DRA)", "default", rows)
	rep.Forecast = &cutover.Summary{Nodes: 2, Switched: 2}
	rep.Rehearsal = &cutover.Rehearsal{Kubernetes: "v1.36.4", Binaries: "download", Workloads: 2, Disagree: 1}
	for format, want := range map[string][]string{
		"table":    {"rehearsed on Kubernetes v1.36.4 (control plane: download): 1 of 2 workloads bound as forecast", "2/3 (not as forecast)"},
		"markdown": {"rehearsed on Kubernetes v1.36.4 (control plane: download): 1 of 2 workloads bound as forecast"},
		"json":     {`"rehearsal": {`, `"kubernetes": "v1.36.4"`, `"binaries": "download"`, `"disagree": 1`},
		"html":     {`Rehearsed on kube-scheduler <span data-rehearsal="kubernetes">v1.36.4</span> (control plane: download)`},
	} {
		var b bytes.Buffer
		if err := rep.Write(&b, format); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: the page does not say %q", format, w)
			}
		}
	}
}
