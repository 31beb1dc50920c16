package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/claimbridge/claimbridge/certs"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/policyreport"
	"github.com/claimbridge/claimbridge/internal/server"
)

const (
	tlsSelfManaged = server.TLSSelfManaged
	tlsCertManager = server.TLSCertManager
)

type serveOptions struct {
	platformDetect     bool
	platformRefresh    time.Duration
	platformFile       string
	namespace          string
	bindAddress        string
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
	kueueConfig        string
	metricsAddr        string
	metricsSecure      bool
	policyReports      string
	policyReportsEvery time.Duration
	rehearsalConfigMap string
	probeAddr          string
	pprofAddr          string
	leaderElect        bool
	leaderElectionID   string
	templateGCGrace    time.Duration
	feasibilityTimeout time.Duration
	slowAdmission      time.Duration
	reservationTTL     time.Duration
	strandedAfter      time.Duration
	feasibilitySearch  int
	allocatorFeatures  string
	logFormat          string
	logLevel           string
	shutdownTimeout    time.Duration
	advertiseAddress   string
	forwardToLeader    bool

	// Parsed by validate.
	minTLS   uint16
	features feasibility.Features
}

func newServeCommand() *cobra.Command {
	o := serveOptions{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the mutating admission webhook",
		Long: `Serves /mutate-v1-pod over TLS, with /healthz and /readyz on the probe address and
Prometheus metrics (/metrics), the admission report of every namespace (/report) and
the last rehearsal's page (/rehearsal, with --rehearsal-configmap) on the metrics address. Namespaces opt in with the label claimbridge.io/mode=enforce
(mutate) or audit (warnings, Events and the report only).

/metrics and /report are served over HTTPS with the webhook's certificate, to clients
whose bearer token kube-apiserver authenticates (TokenReview) and authorizes for get on
the path (SubjectAccessReview: nonResourceURLs /metrics, /report, /rehearsal), so claimbridge's own
identity needs create on tokenreviews and subjectaccessreviews. --metrics-secure=false
serves them over plain HTTP to anyone, for local use.`,
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
	f.StringVar(&o.bindAddress, "bind-address", "", "address the webhook server listens on (default: every interface)")
	f.IntVar(&o.webhookPort, "webhook-port", 9443, "port of the webhook server")
	f.StringVar(&o.certDir, "cert-dir", "/var/run/claimbridge/tls", "directory of tls.crt and tls.key (reloaded on change, without dropping connections)")
	f.StringVar(&o.tlsMode, "tls-mode", tlsSelfManaged, "self-managed (own CA in a Secret, serving certificate renewed before it expires, caBundle injected into --webhook-config-name) or cert-manager (files only)")
	f.StringVar(&o.tlsSecretName, "tls-secret-name", "claimbridge-ca", "self-managed: the Secret holding the CA")
	f.StringVar(&o.serviceName, "service-name", "claimbridge", "self-managed: the Service in front of the webhook (certificate names)")
	f.StringVar(&o.webhookConfigName, "webhook-config-name", "claimbridge", "self-managed: the MutatingWebhookConfiguration whose caBundle is injected")
	f.DurationVar(&o.caValidity, "ca-validity", 5*365*24*time.Hour, "self-managed: CA lifetime (rotated with 1/3 left)")
	f.DurationVar(&o.certValidity, "cert-validity", 90*24*time.Hour, "self-managed: serving certificate lifetime (renewed with 1/3 left)")
	f.StringVar(&o.tlsMinVersion, "tls-min-version", "VersionTLS12", "minimum TLS version: VersionTLS12 (with only AEAD ECDHE cipher suites) or VersionTLS13")
	f.StringVar(&o.policy, "policy", "", "TranslationPolicy file, reloaded on change: an invalid new version is rejected (a log line, a PolicyRejected Event, a metric) and the last good one stays (default: the built-in default policy)")
	f.StringVar(&o.kueueConfig, "kueue-config", "", "Kueue Configuration file (or the ConfigMap that holds it) whose resources.deviceClassMappings say which DeviceClasses Kueue-managed pods may use; reloaded with the policy")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of /metrics and /report (\"0\": off)")
	f.BoolVar(&o.metricsSecure, "metrics-secure", true, "serve /metrics and /report over HTTPS (the --cert-dir certificate) to clients kube-apiserver authenticates and authorizes only; false: plain HTTP without authentication, for local use (a warning is logged at start)")
	f.StringVar(&o.policyReports, "policy-reports", string(policyreport.APIWGPolicy), "write the live report per opted-in namespace as wgpolicyk8s (wgpolicyk8s.io/v1alpha2 PolicyReports) or openreports (openreports.io/v1alpha1 Reports), once that API's CRD is served (until then, one log line says it is not); off: none")
	f.DurationVar(&o.policyReportsEvery, "policy-reports-interval", policyreport.DefaultInterval, "how often at most the reports are brought up to date")
	f.StringVar(&o.rehearsalConfigMap, "rehearsal-configmap", "", "serve at /rehearsal the page 'claimbridge rehearse --publish' wrote into this ConfigMap of --namespace (the chart's rehearsal Job); default: none")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz (ready once the caches are synced, the certificates in place, the webhook serving and kube-apiserver reachable: a replica cut off from kube-apiserver, whose caches go stale, leaves the Service)")
	f.StringVar(&o.pprofAddr, "pprof-bind-address", "0", "address of Go's /debug/pprof profiles, plain HTTP without authentication: bind it to loopback (127.0.0.1:6060) and reach it with kubectl port-forward (\"0\": off)")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader for the template controller (admission runs on every replica)")
	f.StringVar(&o.leaderElectionID, "leader-election-id", "claimbridge", "name of the leader Lease")
	f.BoolVar(&o.forwardToLeader, "forward-to-leader", true, "with --leader-elect, a replica that does not lead sends every admission that would hold DRA devices to the one that does, which decides every hold, so that two replicas never count on the same devices; with no leader known or answering in time it decides the pod itself")
	f.StringVar(&o.advertiseAddress, "advertise-address", "", "host:port at which the other replicas reach this replica's webhook server when it leads (default $POD_IP:<webhook-port>; none: this replica never takes forwarded admissions)")
	f.DurationVar(&o.templateGCGrace, "template-gc-grace", time.Hour, "delete a claimbridge template no pod has referenced for this long")
	f.DurationVar(&o.feasibilityTimeout, "feasibility-timeout", 2*time.Second, "deadline of the allocator check of one pod (hitting it keeps the pod legacy, verdict Unknown); keep it under the webhook's timeoutSeconds")
	f.DurationVar(&o.reservationTTL, "reservation-ttl", 2*time.Minute, "how long the DRA devices of a translated pod are held for it while its claim is not allocated, so that pods admitted after it do not count on them (the hold ends when it is bound or deleted, or this passes)")
	f.DurationVar(&o.strandedAfter, "stranded-after", 2*time.Minute, "a translated pod waiting this long for its claim while a device-plugin node has room for it as submitted is stranded: Warning Event, metric, and a repair in namespaces labelled claimbridge.io/repair=Recreate; one with no device-plugin node to run it, or in a namespace that waits for DRA, gets a DRABusyWaiting Warning Event; either fails its PolicyReport result")
	f.DurationVar(&o.slowAdmission, "slow-admission", 100*time.Millisecond, "an admission that takes longer inside claimbridge is logged with where its time went (claimbridge_slow_admissions_total counts them by their slowest stage); 0: never")
	f.IntVar(&o.feasibilitySearch, "feasibility-max-searches", 0, "uncached allocator searches that may run at once (cached verdicts are always served); a pod that finds none free within --feasibility-timeout stays legacy (verdict Unknown, reason Busy) (default 2 × CPUs)")
	f.StringVar(&o.allocatorFeatures, "allocator-features", "", "allocator features that differ from Kubernetes 1.37 defaults, e.g. ConsumableCapacity=false,DeviceTaints=false")
	f.BoolVar(&o.platformDetect, "platform-detect", true, "detect the platform from the cluster, read-only: the DRA drivers' DaemonSets and the autoscalers' Deployments (their images, flags and environment), Karpenter's NodePools, the DeviceClasses, the server version; a pool whose autoscaler provisions for claims is then no pool that ignores them (docs/concepts/platform.md)")
	f.DurationVar(&o.platformRefresh, "platform-refresh", 5*time.Minute, "how often the platform is detected again")
	f.StringVar(&o.platformFile, "platform", "", "a Platform document (claimbridge.io/v1alpha1) declared over what is detected: what the cluster cannot show, such as whether a GKE node pool autoscales")
	f.StringVar(&o.logFormat, "log-format", "json", "log format: json or text")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug (every admission decision too), info or error")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long in-flight admissions may take to finish after SIGTERM")
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
	}
	minTLS, err := certs.ParseTLSVersion(o.tlsMinVersion)
	if err != nil {
		return usagef("--tls-min-version: %v", err)
	}
	o.minTLS = minTLS
	if _, err := policyreport.ParseAPI(o.policyReports); err != nil {
		return usageError{err}
	}
	if _, err := zapcore.ParseLevel(o.logLevel); err != nil {
		return usagef("--log-level: %v", err)
	}
	if o.features, err = parseFeatures(o.allocatorFeatures); err != nil {
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
	ctrl.SetLogger(zap.New(zopts...))
	limit, from, err := server.ApplyMemoryLimit(os.Getenv)
	if err != nil {
		return err
	}
	if limit > 0 {
		ctrl.Log.WithName("setup").Info("the Go runtime's memory limit", "bytes", limit, "from", from)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	return server.Run(ctx, cfg, server.Options{
		Namespace: o.namespace, WebhookHost: o.bindAddress, WebhookPort: o.webhookPort, CertDir: o.certDir, TLSMode: o.tlsMode,
		TLSSecretName: o.tlsSecretName, ServiceName: o.serviceName, WebhookConfigName: o.webhookConfigName,
		CAValidity: o.caValidity, CertValidity: o.certValidity, TLSMinVersion: o.minTLS, Policy: o.policy, KueueConfig: o.kueueConfig,
		MetricsAddr: o.metricsAddr, MetricsInsecure: !o.metricsSecure, ProbeAddr: o.probeAddr, PprofAddr: o.pprofAddr, LeaderElect: o.leaderElect, LeaderElectionID: o.leaderElectionID,
		TemplateGCGrace: o.templateGCGrace, FeasibilityTimeout: o.feasibilityTimeout, FeasibilitySearches: o.feasibilitySearch, ReservationTTL: o.reservationTTL, StrandedAfter: o.strandedAfter, Features: o.features, SlowAdmission: o.slowAdmission,
		PolicyReports: policyreport.API(o.policyReports), PolicyReportsInterval: o.policyReportsEvery, ShutdownTimeout: o.shutdownTimeout,
		PlatformDetect: o.platformDetect, PlatformRefresh: o.platformRefresh, PlatformFile: o.platformFile,
		AdvertiseAddress: o.advertised(), RehearsalConfigMap: o.rehearsalConfigMap,
	})
}

// advertised is the address the other replicas forward to, "" when
// admissions are not forwarded.
func (o serveOptions) advertised() string {
	switch {
	case !o.forwardToLeader || !o.leaderElect:
		return ""
	case o.advertiseAddress != "":
		return o.advertiseAddress
	case os.Getenv("POD_IP") != "":
		return net.JoinHostPort(os.Getenv("POD_IP"), strconv.Itoa(o.webhookPort))
	}
	return ""
}
