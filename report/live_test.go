package report_test

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
)

func TestLiveTableCountsWorkloadsPodsAndSaysWherePodsRun(t *testing.T) {
	rows := []report.Row{
		{Row: decisions.Row{Kind: "Deployment", Namespace: "prod", Name: "trainer", Outcome: reason.OutcomeTranslate, Status: decisions.StatusMigrated, Verdict: "FitsNow", Node: "a100-0", BoundTo: []string{"h100-0", "h100-1"}, Replicas: ptr.To[int32](2), DevicesRequested: map[string]int64{"nvidia.com/gpu": 2}}},
		{Row: decisions.Row{Kind: "Deployment", Namespace: "prod", Name: "trainer", Outcome: reason.OutcomeTranslate, Status: decisions.StatusWaiting, Verdict: "FitsNow", Node: "a100-0", Replicas: ptr.To[int32](1), DevicesRequested: map[string]int64{"nvidia.com/gpu": 2}}},
		{Row: decisions.Row{Kind: "Pod", Namespace: "prod", Name: "pinned", Outcome: reason.OutcomeSkip, Status: decisions.StatusSkipped, Unseen: true, Replicas: ptr.To[int32](1)}},
	}
	var b bytes.Buffer
	if err := report.New("live", "default", rows).Write(&b, "table"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"prod/Deployment/trainer  Translate/Migrated  -          FitsNow  h100-0,h100-1",
		"prod/Deployment/trainer  Translate/Waiting   -          FitsNow  a100-0",
		"2 workloads · 4 pods (3 rows, one per workload and status): 2 translate, 0 keep legacy, 1 skip",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table does not say %q:\n%s", want, out)
		}
	}
}

func TestAdvisoryNodesSaySo(t *testing.T) {
	tests := map[string]struct {
		row  report.Row
		want string
	}{
		"the placement check counted the nodes": {
			row:  report.Row{Row: decisions.Row{Verdict: "FitsNow", Node: "a100-mig-0", Placement: &decisions.Placement{Result: decisions.PlacementEqual, Translated: 6}}},
			want: "could run on 6 nodes, e.g. a100-mig-0",
		},
		"once devices are free": {
			row:  report.Row{Row: decisions.Row{Verdict: "FitsWhenFree", Node: "a100-mig-0", Placement: &decisions.Placement{Result: decisions.PlacementEqual, Translated: 6}}},
			want: "could run on 6 nodes once devices are free, e.g. a100-mig-0",
		},
		"only the verdict's node is known": {
			row:  report.Row{Row: decisions.Row{Verdict: "FitsNow", Node: "a100-mig-0"}},
			want: "could run on a100-mig-0 (first node found)",
		},
		"the placement check did not finish": {
			row:  report.Row{Row: decisions.Row{Verdict: "FitsNow", Node: "a100-mig-0", Placement: &decisions.Placement{Result: decisions.PlacementUnknown, Unknown: "deadline", Translated: 6}}},
			want: "could run on a100-mig-0 (first node found)",
		},
		"no node": {row: report.Row{Row: decisions.Row{Verdict: "NeverFits"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.row.Advisory(); got != tc.want {
				t.Errorf("Advisory() = %q, want %q", got, tc.want)
			}
		})
	}
}
