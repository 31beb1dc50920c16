package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/claimbridge/claimbridge/internal/rehearsal/published"
)

func TestRehearsalServesThePublishedPage(t *testing.T) {
	c := fake.NewClientset()
	get := func(h http.Handler) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/rehearsal", nil))
		return w
	}
	if w := get(rehearsalHandler(c, "cb", "")); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "--rehearsal-configmap") {
		t.Errorf("without --rehearsal-configmap: %d %q, want 404 naming the flag", w.Code, w.Body)
	}
	h := rehearsalHandler(c, "cb", "cb-rehearsal")
	if w := get(h); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "no rehearsal has been published yet") || !strings.Contains(w.Body.String(), "kubectl -n cb get jobs") {
		t.Errorf("before the Job ran: %d %q, want 404 saying so and where to look", w.Code, w.Body)
	}
	at := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	page := "<!doctype html><html><body>rehearsed on Kubernetes v1.36.3</body></html>"
	if err := published.Publish(t.Context(), c, "cb", "cb-rehearsal", published.Page{HTML: []byte(page), At: at, Summary: "s"}); err != nil {
		t.Fatal(err)
	}
	w := get(h)
	if w.Code != http.StatusOK || w.Body.String() != page || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") || w.Header().Get("Last-Modified") != at.Format(http.TimeFormat) {
		t.Errorf("published: %d %q %v, want 200 and the page as HTML, dated", w.Code, w.Body, w.Header())
	}
}
