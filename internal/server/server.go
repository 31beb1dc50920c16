// Package server wires claimbridge's webhook server: a controller-runtime
// manager with the admission handler, the inventory, the template
// controller, policy reloading, certificates, health checks, and metrics and
// the report behind kube-apiserver's authentication and authorization.
// cmd/claimbridge parses flags into Options; the e2e suites run the same
// server in process.
package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/certs"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/policyreport"
	"github.com/claimbridge/claimbridge/webhook"
)

// TLS modes.
const (
	TLSSelfManaged = "self-managed"
	TLSCertManager = "cert-manager"
)

// Options of the server. Defaults are set on the fields by Run.
type Options struct {
	// Namespace is claimbridge's own namespace (never mutated; CA Secret and
	// leader Lease). Required.
	Namespace string
	// WebhookHost and WebhookPort of the webhook server. Defaults "" (all)
	// and 9443.
	WebhookHost string
	WebhookPort int
	// CertDir holds tls.crt and tls.key, reloaded on change. Required.
	CertDir string
	// TLSMode: TLSSelfManaged (default) or TLSCertManager (files only).
	TLSMode string
	// Self-managed: CA Secret, Service and webhook configuration names, and
	// lifetimes (defaults 5 years and 90 days).
	TLSSecretName, ServiceName, WebhookConfigName string
	CAValidity, CertValidity                      time.Duration
	// TLSMinVersion: tls.VersionTLS12 (default) or tls.VersionTLS13.
	TLSMinVersion uint16
	// Policy file; empty = the built-in default policy.
	Policy string
	// KueueConfig is a Kueue Configuration file (or its ConfigMap) whose
	// deviceClassMappings join the policy's kueue rule; empty = none.
	KueueConfig string
	// MetricsAddr serves /metrics and /report (default ":8080", "0" off);
	// ProbeAddr serves /healthz and /readyz (default ":8081", "0" off).
	MetricsAddr, ProbeAddr string
	// PprofAddr serves Go's /debug/pprof endpoints, plain HTTP without
	// authentication ("" or "0": off, the default); for a loopback address.
	PprofAddr string
	// MetricsInsecure serves /metrics and /report over plain HTTP to anyone
	// who reaches MetricsAddr, for local use. Default false: HTTPS with the
	// webhook's certificate (CertDir, reloaded on change), answering only a
	// bearer token that kube-apiserver authenticates (TokenReview) and
	// authorizes for get on the path (SubjectAccessReview), so the identity
	// of cfg needs create on tokenreviews and subjectaccessreviews.
	MetricsInsecure bool
	// LeaderElect for the template controller; LeaderElectionID names the Lease.
	LeaderElect      bool
	LeaderElectionID string
	// TemplateGCGrace: unused templates are deleted after it. Default 1h.
	TemplateGCGrace time.Duration
	// FeasibilityTimeout bounds the allocator check of one pod. Default 2s.
	FeasibilityTimeout time.Duration
	// FeasibilitySearches bounds the uncached allocator searches running at
	// once (cached verdicts are always served). Default 2 × GOMAXPROCS.
	FeasibilitySearches int
	// Features of the allocator. Default: Kubernetes 1.37 defaults.
	Features feasibility.Features
	// ShutdownTimeout for in-flight admissions. Default 30s.
	ShutdownTimeout time.Duration
	// SnapshotMinInterval bounds how often a changed fleet becomes a new
	// inventory snapshot. Default 500ms; negative: at every change.
	SnapshotMinInterval time.Duration
	// ReservationTTL bounds how long the devices of a translated pod are
	// held while its claim is not allocated. Default
	// webhook.DefaultReservationTTL.
	ReservationTTL time.Duration
	// StrandedAfter is how long a translated pod may wait for its claim
	// while the device plugin has room for it before it counts as
	// stranded. Default webhook.DefaultStrandedAfter.
	StrandedAfter time.Duration
	// PolicyReports: the leader writes the live report per opted-in
	// namespace as policyreport.APIWGPolicy (default) or APIOpenReports
	// once that API's CRD is served; APIOff writes none.
	PolicyReports policyreport.API
	// PolicyReportsInterval: how often at most they are brought up to
	// date. Default policyreport.DefaultInterval.
	PolicyReportsInterval time.Duration
}

func (o *Options) defaults() {
	if o.WebhookPort == 0 {
		o.WebhookPort = 9443
	}
	if o.TLSMode == "" {
		o.TLSMode = TLSSelfManaged
	}
	if o.TLSMinVersion == 0 {
		o.TLSMinVersion = tls.VersionTLS12
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = ":8080"
	}
	if o.ProbeAddr == "" {
		o.ProbeAddr = ":8081"
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = "claimbridge"
	}
	if o.TemplateGCGrace == 0 {
		o.TemplateGCGrace = time.Hour
	}
	if o.FeasibilityTimeout == 0 {
		o.FeasibilityTimeout = 2 * time.Second
	}
	if o.PolicyReports == "" {
		o.PolicyReports = policyreport.APIWGPolicy
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	if o.Features == (feasibility.Features{}) {
		o.Features = feasibility.DefaultFeatures()
	}
}

// Run runs claimbridge's webhook server until ctx ends: the admission
// handler on every replica, the template controller on the leader.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	o.defaults()
	setup := ctrl.Log.WithName("setup")
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	features := o.Features

	var ready healthz.Checker
	var selfManaged *certs.SelfManaged
	if o.TLSMode == TLSSelfManaged {
		selfManaged, err = certs.NewSelfManaged(client, certs.Options{
			Namespace: o.Namespace, SecretName: o.TLSSecretName, ServiceName: o.ServiceName,
			WebhookConfigName: o.WebhookConfigName, CertDir: o.CertDir, CAValidity: o.CAValidity, CertValidity: o.CertValidity,
		})
		if err != nil {
			return err
		}
		// The server starts only once its certificate and the caBundle are in place.
		if err := selfManaged.Bootstrap(ctx); err != nil {
			return fmt.Errorf("serving certificate: %w", err)
		}
		ready = selfManaged.Ready
	} else {
		ready = certs.FilesReady(o.CertDir)
	}

	minTLS := o.TLSMinVersion
	metrics := webhook.NewMetrics()
	if err := metrics.Register(); err != nil {
		return err
	}
	store := &webhook.ReportStore{}
	policy, err := webhook.NewPolicyFiles(o.Policy, o.KueueConfig)
	if err != nil {
		return err
	}
	policy.Metrics = metrics

	metricsOpts := metricsserver.Options{
		BindAddress:   o.MetricsAddr,
		ExtraHandlers: map[string]http.Handler{"/report": store.Handler(func() string { return policy.Get().Name() })},
	}
	switch {
	case o.MetricsAddr == "0":
	case o.MetricsInsecure:
		setup.Info("WARNING: /metrics and /report are served over plain HTTP without authentication: whoever reaches the address reads the decisions of every namespace",
			"address", o.MetricsAddr)
	default:
		// The filter wraps /metrics and every extra handler (/report).
		metricsOpts.SecureServing = true
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
		metricsOpts.CertDir, metricsOpts.CertName, metricsOpts.KeyName = o.CertDir, certs.CertFile, certs.KeyFile
		metricsOpts.TLSOpts = []func(*tls.Config){certs.TLSConfig(minTLS)}
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  clientgoscheme.Scheme,
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: o.Namespace,
		// The process ends when the manager does: the lease is handed
		// over at once instead of after its duration, so that the next
		// leader's template, explain and strand controllers and its
		// PolicyReports do not pause for 15 s on every rollout.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &o.ShutdownTimeout,
		WebhookServer: crwebhook.NewServer(crwebhook.Options{
			Host:    o.WebhookHost,
			Port:    o.WebhookPort,
			CertDir: o.CertDir,
			TLSOpts: []func(*tls.Config){certs.TLSConfig(minTLS)},
		}),
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "claimbridge"})
	policy.OnReject = func(err error) {
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}
		recorder.Eventf(ns, corev1.EventTypeWarning, "PolicyRejected", "new policy rejected, the previous one stays in force: %v", err)
	}

	inv := webhook.NewInventory(client, webhook.InventoryOptions{Features: &features, MinRebuildInterval: o.SnapshotMinInterval, ReservationTTL: o.ReservationTTL})
	store.Fleet = inv
	store.Pending = inv
	// The report's rows are the workloads of the pods the informer has, so
	// they survive a restart; Start samples the migration's progress.
	started := time.Now()
	store.Live, store.Policy, store.Started, store.OwnNamespace = inv, policy.Get, started, o.Namespace
	store.MigrationDevices = metrics.MigrationDevices
	inv.OnChange(func() { metrics.InventoryNodes.Set(float64(inv.NodeCount())) })
	recent := &webhook.RecentTemplates{}
	handler := &webhook.PodHandler{
		Decoder:   admission.NewDecoder(clientgoscheme.Scheme),
		Policy:    policy.Get,
		Inventory: inv,
		Checker:   feasibility.NewChecker(feasibility.Options{Timeout: o.FeasibilityTimeout, MaxSearches: o.FeasibilitySearches}),
		Templates: webhook.APITemplates{Client: client},
		Namespace: o.Namespace,
		LookupNamespace: func(ctx context.Context, name string) (*corev1.Namespace, error) {
			return client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		},
		Recorder: recorder,
		Report:   store,
		Metrics:  metrics,
		Recent:   recent,
		// The devices of the pods this replica translates are held until
		// their claims are allocated; those of pods another replica (or this
		// one before a restart) translated are taken over from the informer.
		Reservations: inv.Reservations(),
	}
	mgr.GetWebhookServer().Register(webhook.Path, &admission.Webhook{Handler: handler, RecoverPanic: new(true)})

	for _, r := range []starter{inv, policy, warmer{inv: inv, checker: handler.Checker}, store} {
		if err := mgr.Add(runnable(r)); err != nil {
			return err
		}
	}
	if err := mgr.Add(&webhook.TemplateController{Client: client, Inventory: inv, Recent: recent,
		Grace: o.TemplateGCGrace, Recorder: recorder, Metrics: metrics}); err != nil {
		return err
	}
	if err := mgr.Add(&webhook.StrandController{Client: client, Inventory: inv, Policy: policy.Get, Recorder: recorder,
		Stranded: metrics.StrandedPods, Recreated: metrics.StrandedRecreated, After: o.StrandedAfter,
		Unservable: metrics.UnservablePending, Namespace: o.Namespace}); err != nil {
		return err
	}
	// Every pod explains itself: an Event on each decided pod and on its
	// owner, and on each pod the webhook never decided.
	if err := mgr.Add(&webhook.ExplainController{Inventory: inv, Policy: policy.Get, Recorder: recorder, Namespace: o.Namespace, Started: started,
		UndecidedPods: metrics.UndecidedPods, UndecidedDevices: metrics.UndecidedDevices}); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := mgr.Add(&policyreport.Writer{API: o.PolicyReports, Client: client, Dynamic: dyn, Source: store, Policy: func() string { return policy.Get().Name() },
		Namespace: o.Namespace, Interval: o.PolicyReportsInterval, Ready: inv.Synced, Log: ctrl.Log.WithName("policyreports")}); err != nil {
		return err
	}
	if selfManaged != nil {
		if err := mgr.Add(selfManaged); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	checks := map[string]healthz.Checker{
		"caches": func(*http.Request) error {
			if !inv.Synced() {
				return webhook.ErrNotSynced
			}
			return nil
		},
		"certificates": ready,
		"webhook":      mgr.GetWebhookServer().StartedChecker(),
		// The caches stay synced while kube-apiserver is unreachable, and go
		// stale: readiness says so until it answers again.
		"kube-apiserver": apiserverReachable(client.Discovery().RESTClient(), time.Second),
	}
	for name, check := range checks {
		if err := mgr.AddReadyzCheck(name, check); err != nil {
			return err
		}
	}
	setup.Info("starting", "namespace", o.Namespace, "tlsMode", o.TLSMode, "policy", policy.Get().Name(), "features", fmt.Sprintf("%+v", features))
	return mgr.Start(ctx)
}

// starter is a runnable's Start.
type starter interface{ Start(context.Context) error }

// warmer prepares the checker once the inventory is synced: the node classes
// of the placement check and the allocators, so that the first admission
// does not pay for a large fleet. Later snapshots reuse the classes of the
// nodes that did not change.
type warmer struct {
	inv     *webhook.Inventory
	checker *feasibility.Checker
}

func (w warmer) Start(ctx context.Context) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !w.inv.Synced() {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	if snap, err := w.inv.Snapshot(time.Now()); err == nil {
		start := time.Now()
		w.checker.Prepare(ctx, snap)
		ctrl.Log.WithName("feasibility").Info("prepared the checker", "nodes", w.inv.NodeCount(), "duration", time.Since(start).String())
	}
	<-ctx.Done()
	return nil
}

// nonLeader marks a runnable that every replica runs.
type nonLeader struct{ starter }

func (nonLeader) NeedLeaderElection() bool { return false }

func runnable(r starter) nonLeader { return nonLeader{r} }

// apiserverReachable is a readiness check: kube-apiserver answers /readyz
// (readable by everyone, system:public-info-viewer). An answer is reused for
// ttl so that frequent probes do not load the apiserver.
func apiserverReachable(rc rest.Interface, ttl time.Duration) healthz.Checker {
	var mu sync.Mutex
	var at time.Time
	var last error
	return func(req *http.Request) error {
		mu.Lock()
		defer mu.Unlock()
		if !at.IsZero() && time.Since(at) < ttl {
			return last
		}
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		if _, err := rc.Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
			last = fmt.Errorf("kube-apiserver unreachable: %w", err)
		} else {
			last = nil
		}
		at = time.Now()
		return last
	}
}
