package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/certs"
	"github.com/claimbridge/claimbridge/translate/feasibility"
	"github.com/claimbridge/claimbridge/webhook"
)

// TLS modes.
const (
	tlsSelfManaged = "self-managed"
	tlsCertManager = "cert-manager"
)

type serveOptions struct {
	namespace          string
	webhookPort        int
	certDir            string
	tlsMode            string
	tlsSecretName      string
	serviceName        string
	webhookConfigName  string
	caValidity         time.Duration
	certValidity       time.Duration
	tlsMinVersion      string
	policy             string
	metricsAddr        string
	probeAddr          string
	leaderElect        bool
	leaderElectionID   string
	templateGCGrace    time.Duration
	feasibilityTimeout time.Duration
	allocatorFeatures  string
	logFormat          string
	logLevel           string
	shutdownTimeout    time.Duration
}

func newServeCommand() *cobra.Command {
	o := serveOptions{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the mutating admission webhook",
		Long: `Serves /mutate-v1-pod over TLS, with /healthz and /readyz on the probe address and
Prometheus metrics (/metrics) and the per-namespace admission report (/report) on
the metrics address. Namespaces opt in with the label claimbridge.io/mode=enforce
(mutate) or audit (warnings, Events and the report only).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return runServe(c.Context(), o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "claimbridge's own namespace (never mutated; holds the CA Secret and the leader Lease); default $POD_NAMESPACE")
	f.IntVar(&o.webhookPort, "webhook-port", 9443, "port of the webhook server")
	f.StringVar(&o.certDir, "cert-dir", "/var/run/claimbridge/tls", "directory of tls.crt and tls.key (reloaded on change)")
	f.StringVar(&o.tlsMode, "tls-mode", tlsSelfManaged, "self-managed (own CA in a Secret, caBundle injected) or cert-manager (files only)")
	f.StringVar(&o.tlsSecretName, "tls-secret-name", "claimbridge-ca", "self-managed: the Secret holding the CA")
	f.StringVar(&o.serviceName, "service-name", "claimbridge", "self-managed: the Service in front of the webhook (certificate names)")
	f.StringVar(&o.webhookConfigName, "webhook-config-name", "claimbridge", "self-managed: the MutatingWebhookConfiguration whose caBundle is injected")
	f.DurationVar(&o.caValidity, "ca-validity", 5*365*24*time.Hour, "self-managed: CA lifetime (rotated with 1/3 left)")
	f.DurationVar(&o.certValidity, "cert-validity", 90*24*time.Hour, "self-managed: serving certificate lifetime (renewed with 1/3 left)")
	f.StringVar(&o.tlsMinVersion, "tls-min-version", "VersionTLS12", "minimum TLS version: VersionTLS12 or VersionTLS13")
	f.StringVar(&o.policy, "policy", "", "TranslationPolicy file, reloaded on change (default: the built-in default policy)")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of /metrics and /report")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader for the template controller (admission runs on every replica)")
	f.StringVar(&o.leaderElectionID, "leader-election-id", "claimbridge", "name of the leader Lease")
	f.DurationVar(&o.templateGCGrace, "template-gc-grace", time.Hour, "delete a claimbridge template no pod has referenced for this long")
	f.DurationVar(&o.feasibilityTimeout, "feasibility-timeout", 2*time.Second, "deadline of the allocator check of one pod (hitting it keeps the pod legacy); keep it under the webhook timeoutSeconds")
	f.StringVar(&o.allocatorFeatures, "allocator-features", "", "allocator features that differ from Kubernetes 1.37 defaults, e.g. ConsumableCapacity=false,DeviceTaints=false")
	f.StringVar(&o.logFormat, "log-format", "json", "log format: json or text")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info or error")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long in-flight admissions may finish on shutdown")
	return c
}

func (o *serveOptions) validate() error {
	switch {
	case o.namespace == "":
		return usagef("--namespace (or $POD_NAMESPACE) is required")
	case o.tlsMode != tlsSelfManaged && o.tlsMode != tlsCertManager:
		return usagef("--tls-mode must be %s or %s", tlsSelfManaged, tlsCertManager)
	case o.logFormat != "json" && o.logFormat != "text":
		return usagef("--log-format must be json or text")
	case o.tlsMinVersion != "VersionTLS12" && o.tlsMinVersion != "VersionTLS13":
		return usagef("--tls-min-version must be VersionTLS12 or VersionTLS13")
	}
	if _, err := zapcore.ParseLevel(o.logLevel); err != nil {
		return usagef("--log-level: %v", err)
	}
	if _, err := parseFeatures(o.allocatorFeatures); err != nil {
		return usageError{err}
	}
	return nil
}

// parseFeatures reads "Name=bool,..." over the 1.37 defaults.
func parseFeatures(s string) (feasibility.Features, error) {
	f := feasibility.DefaultFeatures()
	fields := map[string]*bool{
		"AdminAccess": &f.AdminAccess, "CompatibilityGroups": &f.CompatibilityGroups, "ConsumableCapacity": &f.ConsumableCapacity,
		"DerivedAttributes": &f.DerivedAttributes, "DeviceBindingAndStatus": &f.DeviceBindingAndStatus, "DeviceTaints": &f.DeviceTaints,
		"FractionalCapacityRange": &f.FractionalCapacityRange, "ListTypeAttributes": &f.ListTypeAttributes,
		"OptionalNodeOperations": &f.OptionalNodeOperations, "PartitionableDevices": &f.PartitionableDevices, "PrioritizedList": &f.PrioritizedList,
	}
	if strings.TrimSpace(s) == "" {
		return f, nil
	}
	for _, kv := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		p, known := fields[name]
		if !ok || !known || (val != "true" && val != "false") {
			return f, fmt.Errorf("--allocator-features: %q is not Name=true|false with a known name", kv)
		}
		*p = val == "true"
	}
	return f, nil
}

func runServe(ctx context.Context, o serveOptions) error {
	level, _ := zapcore.ParseLevel(o.logLevel)
	zopts := []zap.Opts{zap.Level(level)}
	if o.logFormat == "json" {
		zopts = append(zopts, zap.JSONEncoder())
	} else {
		zopts = append(zopts, zap.ConsoleEncoder())
	}
	logger := zap.New(zopts...)
	ctrl.SetLogger(logger)
	setup := logger.WithName("setup")

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	features, _ := parseFeatures(o.allocatorFeatures)

	var ready healthz.Checker
	var selfManaged *certs.SelfManaged
	if o.tlsMode == tlsSelfManaged {
		selfManaged, err = certs.NewSelfManaged(client, certs.Options{
			Namespace: o.namespace, SecretName: o.tlsSecretName, ServiceName: o.serviceName,
			WebhookConfigName: o.webhookConfigName, CertDir: o.certDir, CAValidity: o.caValidity, CertValidity: o.certValidity,
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
		ready = certs.FilesReady(o.certDir)
	}

	minTLS := uint16(tls.VersionTLS12)
	if o.tlsMinVersion == "VersionTLS13" {
		minTLS = tls.VersionTLS13
	}
	metrics := webhook.NewMetrics()
	if err := metrics.Register(); err != nil {
		return err
	}
	store := &webhook.ReportStore{}
	policy, err := webhook.NewPolicyFile(o.policy)
	if err != nil {
		return err
	}
	policy.Metrics = metrics

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: clientgoscheme.Scheme,
		Metrics: metricsserver.Options{
			BindAddress:   o.metricsAddr,
			ExtraHandlers: map[string]http.Handler{"/report": store.Handler(func() string { return policy.Get().Name() })},
		},
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        o.leaderElectionID,
		LeaderElectionNamespace: o.namespace,
		GracefulShutdownTimeout: &o.shutdownTimeout,
		WebhookServer: crwebhook.NewServer(crwebhook.Options{
			Port:    o.webhookPort,
			CertDir: o.certDir,
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
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: o.namespace}}
		recorder.Eventf(ns, corev1.EventTypeWarning, "PolicyRejected", "new policy rejected, the previous one stays in force: %v", err)
	}

	inv := webhook.NewInventory(client, webhook.InventoryOptions{Features: &features})
	inv.OnChange(func() { metrics.InventoryNodes.Set(float64(inv.NodeCount())) })
	recent := &webhook.RecentTemplates{}
	handler := &webhook.PodHandler{
		Decoder:   admission.NewDecoder(clientgoscheme.Scheme),
		Policy:    policy.Get,
		Inventory: inv,
		Checker:   feasibility.NewChecker(feasibility.Options{Timeout: o.feasibilityTimeout}),
		Templates: webhook.APITemplates{Client: client},
		Namespace: o.namespace,
		LookupNamespace: func(ctx context.Context, name string) (*corev1.Namespace, error) {
			return client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		},
		Recorder: recorder,
		Report:   store,
		Metrics:  metrics,
		Recent:   recent,
	}
	mgr.GetWebhookServer().Register(webhook.Path, &admission.Webhook{Handler: handler, RecoverPanic: new(true)})

	for _, r := range []starter{inv, policy} {
		if err := mgr.Add(runnable(r)); err != nil {
			return err
		}
	}
	if err := mgr.Add(&webhook.TemplateController{Client: client, Metadata: meta, Inventory: inv, Recent: recent,
		Grace: o.templateGCGrace, Recorder: recorder, Metrics: metrics}); err != nil {
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
	}
	for name, check := range checks {
		if err := mgr.AddReadyzCheck(name, check); err != nil {
			return err
		}
	}
	setup.Info("starting", "namespace", o.namespace, "tlsMode", o.tlsMode, "policy", policy.Get().Name(), "features", fmt.Sprintf("%+v", features))
	return mgr.Start(ctx)
}

// starter is a runnable's Start.
type starter interface{ Start(context.Context) error }

// nonLeader marks a runnable that every replica runs.
type nonLeader struct{ starter }

func (nonLeader) NeedLeaderElection() bool { return false }

func runnable(r starter) nonLeader { return nonLeader{r} }
