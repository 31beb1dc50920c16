package webhook

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/claimbridge/claimbridge/report"
)

func TestReportEndpointServesThePageWithTheFleet(t *testing.T) {
	f := newFixture(t, "mixed", nil)
	f.store.Fleet = f.inv
	f.handler.Handle(t.Context(), request(t, admissionv1.Create, l4Pod("prod"), false))
	srv := httptest.NewServer(f.store.Handler(func() string { return "p" }))
	defer srv.Close()

	get := func(query string) (*http.Response, string) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + "/report?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(body)
	}
	resp, page := get("format=html")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("format=html: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("the page is served without a Content-Security-Policy that forbids loading anything: %q", csp)
	}
	_, js := get("format=json")
	rep, err := report.Read(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if rep.FleetSummary == nil || rep.FleetSummary.Nodes != 12 || rep.FleetSummary.DevicePluginNodes != 2 {
		t.Fatalf("the live report's fleet summary: %+v", rep.FleetSummary)
	}
	var want strings.Builder
	if err := rep.WriteHTML(&want); err != nil {
		t.Fatal(err)
	}
	if page != want.String() {
		t.Errorf("/report?format=html is not the page of /report?format=json")
	}
	if resp, _ := get("format=pdf"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("format=pdf: %d, want 400", resp.StatusCode)
	}
}
