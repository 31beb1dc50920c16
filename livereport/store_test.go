package livereport

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/claimbridge/claimbridge/decisions"
)

func TestReportStoreKeepsTheLatestRowsPerNamespace(t *testing.T) {
	s := &ReportStore{PerNamespace: 3, MaxNamespaces: 2}
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		s.Add("a", decisions.Row{Name: fmt.Sprint(i)}, now.Add(time.Duration(i)*time.Second))
	}
	var names []string
	for _, r := range s.Report(t.Context(), "a", "p").Items {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff([]string{"2", "3", "4"}, names); diff != "" {
		t.Errorf("rows of a (-want,+got):\n%s", diff)
	}
	s.Add("b", decisions.Row{Name: "b"}, now.Add(10*time.Second))
	s.Add("c", decisions.Row{Name: "c"}, now.Add(11*time.Second)) // a was seen least recently
	if got := s.Report(t.Context(), "a", "p").Summary.Total; got != 0 {
		t.Errorf("namespace a kept %d rows after eviction", got)
	}
	if got := s.Report(t.Context(), "", "p").Summary.Total; got != 2 {
		t.Errorf("%d rows in all, want 2", got)
	}
}
