// Package server wires claimbridge's webhook server: a controller-runtime
// manager with the admission handler, the inventory, the template
// controller, policy reloading, certificates, health checks, and metrics and
// the report behind kube-apiserver's authentication and authorization.
// cmd/claimbridge parses flags into Options; the e2e suites run the same
// server in process.
package server

import (
	"cmp"
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
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/certs"
	"github.com/claimbridge/claimbridge/controllers"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/policyreport"
	"github.com/claimbridge/claimbridge/inventory"
	"github.com/claimbridge/claimbridge/livereport"
	"github.com/claimbridge/claimbridge/metrics"
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
	// SlowAdmission: an admission that takes longer is logged with where
	// its time went; 0: never.
	SlowAdmission time.Duration
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
	// inventory.DefaultReservationTTL.
	ReservationTTL time.Duration
	// StrandedAfter is how long a translated pod may wait for its claim
	// while the device plugin has room for it before it counts as
	// stranded. Default controllers.DefaultStrandedAfter.
	StrandedAfter time.Duration
	// PolicyReports: the leader writes the live report per opted-in
	// namespace as policyreport.APIWGPolicy (default) or APIOpenReports
	// once that API's CRD is served; APIOff writes none.
	PolicyReports policyreport.API
	// PlatformDetect: detect the platform from the cluster every
	// PlatformRefresh; PlatformFile: a Platform document declared over it.
	// AdvertiseAddress is where the other replicas reach this replica's
	// webhook server when it leads: with LeaderElect, a replica that does
	// not lead forwards the admissions that would hold devices to the one
	// that does (leader.go). "": none forwarded.
	AdvertiseAddress string
	PlatformDetect   bool
	PlatformRefresh  time.Duration
	PlatformFile     string
	// PolicyReportsInterval: how often at most they are brought up to
	// date. Default policyreport.DefaultInterval.
	PolicyReportsInterval time.Duration
	// RehearsalConfigMap names the ConfigMap of Namespace whose page
	// `claimbridge rehearse --publish` wrote: served at /rehearsal beside
	// /report. "": /rehearsal says none is served.
	RehearsalConfigMap string
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
	if o.StrandedAfter <= 0 {
		o.StrandedAfter = controllers.DefaultStrandedAfter
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
// handler, the inventory, policy reloading and the report on every
// replica; the template, strand and explain controllers and the
// PolicyReports on the leader.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	o.defaults()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ready, selfManaged, err := serving(ctx, client, o)
	if err != nil {
		return err
	}
	m := metrics.NewMetrics()
	if err := m.Register(); err != nil {
		return err
	}
	policy, err := NewPolicyFiles(o.Policy, o.KueueConfig)
	if err != nil {
		return err
	}
	policy.Metrics = m
	store := &livereport.ReportStore{}
	mgr, err := newManager(cfg, o, map[string]http.Handler{
		"/report":    store.Handler(func() string { return policy.Get().Name() }),
		"/rehearsal": rehearsalHandler(client, o.Namespace, o.RehearsalConfigMap),
	})
	if err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "claimbridge"})
	policy.OnReject = func(err error) {
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}
		recorder.Eventf(ns, corev1.EventTypeWarning, "PolicyRejected", "new policy rejected, the previous one stays in force: %v", err)
	}
	// Admission's own API calls (a template to create, a namespace newer
	// than the cache) get a client of their own: client-go's rate limiter
	// is per client, and the leader's controllers, Events and reports must
	// never make an admission wait behind their writes.
	admissionConfig := rest.CopyConfig(cfg)
	admissionConfig.RateLimiter = nil // its own, from QPS and Burst
	admissionClient, err := kubernetes.NewForConfig(admissionConfig)
	if err != nil {
		return err
	}
	parts := components{client: client, admissionClient: admissionClient, o: o, policy: policy, metrics: m, store: store, recorder: recorder, started: time.Now()}
	if err := parts.add(mgr); err != nil {
		return err
	}
	if selfManaged != nil {
		if err := mgr.Add(selfManaged); err != nil {
			return err
		}
	}
	if err := addChecks(mgr, client, parts.inv, ready); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("starting", "namespace", o.Namespace, "tlsMode", o.TLSMode, "policy", policy.Get().Name(), "features", fmt.Sprintf("%+v", o.Features))
	return mgr.Start(ctx)
}

// serving prepares the serving certificate: self-managed (the CA Secret,
// the certificate and the caBundle are in place before the server starts)
// or files another issuer writes (cert-manager). ready tells readiness.
func serving(ctx context.Context, client kubernetes.Interface, o Options) (healthz.Checker, *certs.SelfManaged, error) {
	if o.TLSMode != TLSSelfManaged {
		return certs.FilesReady(o.CertDir), nil, nil
	}
	selfManaged, err := certs.NewSelfManaged(client, certs.Options{
		Namespace: o.Namespace, SecretName: o.TLSSecretName, ServiceName: o.ServiceName,
		WebhookConfigName: o.WebhookConfigName, CertDir: o.CertDir, CAValidity: o.CAValidity, CertValidity: o.CertValidity,
	})
	if err != nil {
		return nil, nil, err
	}
	// The server starts only once its certificate and the caBundle are in place.
	if err := selfManaged.Bootstrap(ctx); err != nil {
		return nil, nil, fmt.Errorf("serving certificate: %w", err)
	}
	return selfManaged.Ready, selfManaged, nil
}

// newManager is the controller-runtime manager: the webhook server, the
// metrics server with /report and /rehearsal (behind kube-apiserver's authentication and
// authorization unless MetricsInsecure), probes, pprof and leader election.
func newManager(cfg *rest.Config, o Options, handlers map[string]http.Handler) (ctrl.Manager, error) {
	metricsOpts := metricsserver.Options{
		BindAddress:   o.MetricsAddr,
		ExtraHandlers: handlers,
	}
	switch {
	case o.MetricsAddr == "0":
	case o.MetricsInsecure:
		ctrl.Log.WithName("setup").Info("WARNING: /metrics and /report are served over plain HTTP without authentication: whoever reaches the address reads the decisions of every namespace",
			"address", o.MetricsAddr)
	default:
		// The filter wraps /metrics and every extra handler (/report, /rehearsal).
		metricsOpts.SecureServing = true
		metricsOpts.FilterProvider = metricsAuthFilter
		metricsOpts.CertDir, metricsOpts.CertName, metricsOpts.KeyName = o.CertDir, certs.CertFile, certs.KeyFile
		metricsOpts.TLSOpts = []func(*tls.Config){certs.TLSConfig(o.TLSMinVersion)}
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
			TLSOpts: []func(*tls.Config){certs.TLSConfig(o.TLSMinVersion)},
		}),
	})
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	return mgr, nil
}

// components are what the manager runs.
type components struct {
	client kubernetes.Interface
	// admissionClient serves the admission handler's calls alone.
	admissionClient kubernetes.Interface
	o               Options
	policy          *PolicyFile
	metrics         *metrics.Metrics
	store           *livereport.ReportStore
	recorder        record.EventRecorder
	// started is when the webhook began watching.
	started time.Time

	inv *inventory.Inventory // set by add
}

// add wires the inventory, the report, the admission handler and the
// leader's controllers into the manager.
func (c *components) add(mgr ctrl.Manager) error {
	o, features := c.o, c.o.Features
	checker := feasibility.NewChecker(feasibility.Options{Timeout: o.FeasibilityTimeout, MaxSearches: o.FeasibilitySearches})
	inv := inventory.New(c.client, inventory.Options{Features: &features, MinRebuildInterval: o.SnapshotMinInterval, ReservationTTL: o.ReservationTTL,
		SnapshotUpdates: c.metrics.SnapshotUpdates,
		// A fleet snapshot built in the background gets its node classes
		// and allocators there too, not in the first admission after it.
		Prepare: checker.Prepare})
	c.inv = inv
	// The report's rows are the workloads of the pods the informer has, so
	// they survive a restart; Start samples the migration's progress.
	c.store.Fleet, c.store.Pending, c.store.Live = inv, inv, inv
	c.store.Policy, c.store.Started, c.store.OwnNamespace = c.policy.Get, c.started, o.Namespace
	c.store.MigrationDevices = c.metrics.MigrationDevices
	inv.OnChange(func() { c.metrics.InventoryNodes.Set(float64(inv.NodeCount())) })
	recent := &inventory.RecentTemplates{}
	plat, err := newPlatformWatch(c.client, inv, o.PlatformDetect, o.PlatformFile, cmp.Or(o.PlatformRefresh, 5*time.Minute), ctrl.Log.WithName("platform"))
	if err != nil {
		return err
	}
	handler := &webhook.PodHandler{
		Decoder:   admission.NewDecoder(clientgoscheme.Scheme),
		Policy:    c.policy.Get,
		Inventory: inv,
		Checker:   checker,
		Platform:  plat.Get,
		Templates: webhook.APITemplates{Client: c.admissionClient},
		Namespace: o.Namespace,
		LookupNamespace: func(ctx context.Context, name string) (*corev1.Namespace, error) {
			return c.admissionClient.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		},
		Recorder: c.recorder,
		Report:   c.store,
		Metrics:  c.metrics,
		Recent:   recent,
		// The devices of the pods this replica translates are held until
		// their claims are allocated; those of pods another replica (or this
		// one before a restart) translated are taken over from the informer.
		Holder:        inv,
		SlowAdmission: o.SlowAdmission,
	}
	// Every stage's series exists from the start, at zero: a dashboard or
	// an alert on slow admissions reads 0, not no data.
	for _, s := range webhook.Stages() {
		c.metrics.AdmissionStages.WithLabelValues(s.String())
		c.metrics.SlowAdmissions.WithLabelValues(s.String())
	}
	if o.LeaderElect && o.AdvertiseAddress != "" {
		if err := c.forwardHolds(mgr, handler); err != nil {
			return err
		}
	}
	mgr.GetWebhookServer().Register(webhook.Path, &admission.Webhook{Handler: handler, RecoverPanic: new(true)})
	for _, r := range []starter{inv, c.policy, warmer{inv: inv, checker: handler.Checker}, c.store, plat} {
		if err := mgr.Add(runnable(r)); err != nil {
			return err
		}
	}
	dyn, err := dynamic.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	leader := []manager.Runnable{
		&controllers.TemplateController{Client: c.client, Inventory: inv, Recent: recent,
			Grace: o.TemplateGCGrace, Recorder: c.recorder, Metrics: c.metrics},
		&controllers.StrandController{Client: c.client, Inventory: inv, Policy: c.policy.Get, Recorder: c.recorder,
			Stranded: c.metrics.StrandedPods, Recreated: c.metrics.StrandedRecreated, After: o.StrandedAfter,
			Unservable: c.metrics.UnservablePending, Namespace: o.Namespace},
		// Every pod explains itself: an Event on each decided pod and on
		// its owner, and on each pod the webhook never decided.
		&controllers.ExplainController{Inventory: inv, Policy: c.policy.Get, Recorder: c.recorder, Namespace: o.Namespace, Started: c.started,
			UndecidedPods: c.metrics.UndecidedPods, UndecidedDevices: c.metrics.UndecidedDevices},
		&policyreport.Writer{API: o.PolicyReports, Client: c.client, Dynamic: dyn, Source: c.store, Policy: func() string { return c.policy.Get().Name() },
			Namespace: o.Namespace, Interval: o.PolicyReportsInterval, StrandedAfter: o.StrandedAfter, Ready: inv.Synced, Log: ctrl.Log.WithName("policyreports")},
	}
	for _, r := range leader {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	return nil
}

// forwardHolds makes the replica that leads decide every hold: it
// publishes its address, the others forward to it (leader.go).
func (c *components) forwardHolds(mgr ctrl.Manager, handler *webhook.PodHandler) error {
	o := c.o
	name := leaderLease(o.LeaderElectionID)
	fw := &leaderForwarder{client: c.client, namespace: o.Namespace, name: name, self: o.AdvertiseAddress, certDir: o.CertDir}
	handler.Leader = fw
	mgr.GetWebhookServer().Register(webhook.ForwardedPath, &admission.Webhook{Handler: handler.Forwarded(), RecoverPanic: new(true)})
	if err := mgr.Add(runnable(fw)); err != nil {
		return err
	}
	return mgr.Add(&addressPublisher{client: c.client, namespace: o.Namespace, name: name, address: o.AdvertiseAddress, log: ctrl.Log.WithName("leader"), local: fw})
}

// addChecks adds the health and readiness checks: the caches synced, the
// certificate in place, the webhook server started and kube-apiserver
// reachable.
func addChecks(mgr ctrl.Manager, client kubernetes.Interface, inv *inventory.Inventory, certificates healthz.Checker) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	checks := map[string]healthz.Checker{
		"caches": func(*http.Request) error {
			if !inv.Synced() {
				return inventory.ErrNotSynced
			}
			return nil
		},
		"certificates": certificates,
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
	return nil
}

// starter is a runnable's Start.
type starter interface{ Start(context.Context) error }

// warmer prepares the checker once the inventory is synced: the node classes
// of the placement check and the allocators, so that the first admission
// does not pay for a large fleet. Later snapshots reuse the classes of the
// nodes that did not change.
type warmer struct {
	inv     *inventory.Inventory
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
