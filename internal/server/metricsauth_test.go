package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// A token kube-apiserver rejects is 401, as kube-apiserver answers it,
// not 500; the refusals are logged at info, one line per interval with
// their count; an identity without the right is 403; a reader gets the
// page.
func TestMetricsAddressRefusesWhatKubeAPIServerDoesNotAuthenticate(t *testing.T) {
	tokens := map[string]string{"reader": "system:serviceaccount:monitoring:prometheus", "stranger": "system:serviceaccount:default:stranger"}
	authn := authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return nil, false, nil
		}
		name, known := tokens[token]
		if !known {
			// What the delegating authenticator returns for a TokenReview
			// whose status says the token is not authenticated.
			return nil, false, errors.New("[invalid bearer token, service account token has been invalidated]")
		}
		return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
	})
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetUser().GetName() == tokens["reader"] && a.GetVerb() == "get" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "no RBAC rule", nil
	})
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	m := &metricsAuth{authn: authn, authz: authz, now: func() time.Time { return now }}
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 0})
	h, err := m.filter(log, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("claimbridge_inventory_nodes 3")) }))
	if err != nil {
		t.Fatal(err)
	}
	get := func(token string) int {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	got := map[string]int{
		"no token":          get(""),
		"a rejected token":  get("not-a-token"),
		"another rejected":  get("expired"),
		"no right":          get("stranger"),
		"the reader's":      get("reader"),
		"rejected, again":   get("not-a-token"),
		"rejected, a third": get("not-a-token"),
	}
	want := map[string]int{"no token": 401, "a rejected token": 401, "another rejected": 401, "no right": 403, "the reader's": 200,
		"rejected, again": 401, "rejected, a third": 401}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status codes (-want,+got):\n%s", diff)
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"refused"=1`) || strings.Contains(lines[0], `"error"`) {
		t.Errorf("log within the first interval: %q, want one info line", lines)
	}
	now = now.Add(RefusalLogInterval)
	if code := get("not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("a rejected token: %d, want 401", code)
	}
	if len(lines) != 2 || !strings.Contains(lines[1], `"refused"=5`) || !strings.Contains(lines[1], "invalid bearer token") {
		t.Errorf("log after an interval: %q, want a second line counting the 5 refusals since the first, with the last one's reason", lines)
	}
}
