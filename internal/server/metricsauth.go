package server

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// RefusalLogInterval is how often at most the metrics address logs the
// requests it refused for want of a token kube-apiserver authenticates.
const RefusalLogInterval = time.Minute

// metricsAuthFilter guards /metrics and /report as controller-runtime's
// filters.WithAuthenticationAndAuthorization does (kube-apiserver
// authenticates the bearer token with a TokenReview and authorizes get on
// the path with a SubjectAccessReview, with the same caches and retries),
// and answers a refused token as kube-apiserver itself does
// (k8s.io/apiserver/pkg/endpoints/filters/authentication.go: any failure
// to authenticate is 401): controller-runtime's answers a token the
// TokenReview rejects — which comes back as an error carrying the
// review's status.error — with 500 "Authentication failed" and an ERROR
// with a stack trace in the log, once per request. Here every refusal is
// 401 and the log says, at info and at most once per RefusalLogInterval,
// how many were refused and why the last one was. An identity without the
// right is 403, as before.
func metricsAuthFilter(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationv1.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationv1.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	// controller-runtime's values, and kube-apiserver's backoff
	// (k8s.io/apiserver/pkg/server/options.DefaultAuthWebhookRetryBackoff).
	backoff := &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
	a, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: false},
		CacheTTL:                 time.Minute,
		TokenAccessReviewClient:  authn,
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      backoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("authenticator: %w", err)
	}
	z, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: authz,
		AllowCacheTTL:             5 * time.Minute,
		DenyCacheTTL:              30 * time.Second,
		WebhookRetryBackoff:       backoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("authorizer: %w", err)
	}
	return (&metricsAuth{authn: a, authz: z}).filter, nil
}

// metricsAuth authenticates and authorizes requests to the metrics address.
type metricsAuth struct {
	authn authenticator.Request
	authz authorizer.Authorizer
	// Every and Now of the refusals' log line; defaults RefusalLogInterval
	// and time.Now.
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	logged  time.Time // when the last line was written
	refused int       // refusals since
}

// filter is the metricsserver.Filter.
func (m *metricsAuth) filter(log logr.Logger, handler http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		res, ok, err := m.authn.AuthenticateRequest(req)
		if err != nil || !ok {
			m.refuse(log, req, err)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := authorizer.AttributesRecord{User: res.User, Verb: strings.ToLower(req.Method), Path: req.URL.Path}
		decision, reason, err := m.authz.Authorize(req.Context(), attrs)
		if err != nil {
			msg := "Authorization for user " + attrs.User.GetName() + " failed"
			log.Error(err, msg)
			http.Error(w, msg, http.StatusInternalServerError)
			return
		}
		if decision != authorizer.DecisionAllow {
			msg := "Authorization denied for user " + attrs.User.GetName()
			log.V(4).Info(msg, "reason", reason)
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		handler.ServeHTTP(w, req)
	}), nil
}

// refuse counts a refusal and logs the count, at most once per interval.
func (m *metricsAuth) refuse(log logr.Logger, req *http.Request, err error) {
	now := time.Now()
	if m.now != nil {
		now = m.now()
	}
	every := m.every
	if every <= 0 {
		every = RefusalLogInterval
	}
	m.mu.Lock()
	m.refused++
	if !m.logged.IsZero() && now.Sub(m.logged) < every {
		m.mu.Unlock()
		return
	}
	refused := m.refused
	m.logged, m.refused = now, 0
	m.mu.Unlock()
	why := "no bearer token"
	if err != nil {
		why = err.Error()
	}
	log.Info("refused requests without a token kube-apiserver authenticates: 401", "refused", refused,
		"last", req.Method+" "+req.URL.Path, "from", req.RemoteAddr, "reason", why)
}
