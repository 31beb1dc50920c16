package cluster

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/internal/controlplane"
)

// Options configure a cluster. The zero value is usable. The binaries are those of
// ResolveBinDir; the PKI, kubeconfigs, etcd data and component logs go to a new temporary
// directory (Cluster.Dir), which Stop removes unless KeepDir is set.
type Options struct {
	// KeepDir keeps Cluster.Dir after Stop, for inspection. Default: false, or true when the
	// environment variable CLAIMBRIDGE_E2E_KEEP is non-empty.
	KeepDir bool
	// Progress receives one line per startup step and the binary build's progress.
	// Default: discarded.
	Progress io.Writer
	// ServiceNetwork lets kube-apiserver reach Services whose backends RouteService names,
	// the way kube-proxy would (see serviceNetwork): webhooks registered by Service, as the
	// chart registers claimbridge, become callable. Default: false (no Service is reachable).
	ServiceNetwork bool
	// AdmissionPlugins are admission plugins kube-apiserver enables on top of its default ones
	// (--enable-admission-plugins), such as ExtendedResourceToleration, which GKE runs and
	// kube-apiserver leaves off. kube-apiserver orders them itself: built-in mutating plugins
	// run before MutatingAdmissionWebhook whatever the order given. Default: none.
	AdmissionPlugins []string
	// Profiling serves kube-apiserver's /debug/pprof (its --profiling, which
	// the control plane turns off), for benchmarks that profile it.
	// Default: false.
	Profiling bool
}

// Component names, in start order.
const (
	Etcd                  = controlplane.Etcd
	KubeAPIServer         = controlplane.KubeAPIServer
	KubeControllerManager = controlplane.KubeControllerManager
	KubeScheduler         = controlplane.KubeScheduler
)

// ServiceCIDR is the cluster's service IP range.
const ServiceCIDR = controlplane.ServiceCIDR

// PollTimeout bounds the harness's own waits (a node made Ready, a namespace's service
// account, pods gone). Tests bound theirs with Eventually.
const PollTimeout = controlplane.PollTimeout

// KubeletVersion is what fake nodes report as their kubelet version.
const KubeletVersion = controlplane.KubeletVersion

// ServingCert is a serving certificate signed by the cluster's CA.
type ServingCert = controlplane.ServingCert

// Process is a process of the cluster (see StartProcess).
type Process = controlplane.Process

// FreePorts returns n distinct free loopback ports.
func FreePorts(n int) ([]int, error) { return controlplane.FreePorts(n) }

// Cluster is the product's control plane on loopback (package controlplane) with what the
// tests add to it: the service network, kubectl, log marks, fleets with name prefixes.
type Cluster struct {
	*controlplane.Cluster

	opts     Options
	services *serviceNetwork // nil without Options.ServiceNetwork
}

// New starts a cluster and returns once every component is ready (controlplane.New). ctx
// bounds the startup only; the processes run until Stop. On error nothing is left running.
func New(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if os.Getenv("CLAIMBRIDGE_E2E_KEEP") != "" {
		opts.KeepDir = true
	}
	binDir, err := ResolveBinDir(ctx, opts.Progress)
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts}
	cp := controlplane.Options{BinDir: binDir, KeepDir: opts.KeepDir, Progress: opts.Progress}
	if len(opts.AdmissionPlugins) > 0 {
		cp.APIServerArgs = append(cp.APIServerArgs, "--enable-admission-plugins="+strings.Join(opts.AdmissionPlugins, ","))
	}
	if opts.Profiling {
		cp.APIServerArgs = append(cp.APIServerArgs, "--profiling=true")
	}
	if opts.ServiceNetwork {
		dir, err := os.MkdirTemp("", "claimbridge-e2e-services-")
		if err != nil {
			return nil, fmt.Errorf("create service network dir: %w", err)
		}
		if c.services, err = startServiceNetwork(dir); err != nil {
			return nil, err
		}
		cp.APIServerArgs = append(cp.APIServerArgs, "--egress-selector-config-file="+c.services.config)
	}
	if c.Cluster, err = controlplane.New(ctx, cp); err != nil {
		c.closeServices()
		return nil, err
	}
	return c, nil
}

// Stop stops every process (controlplane's Stop) and the service network. It is safe to call
// more than once.
func (c *Cluster) Stop() {
	c.Cluster.Stop()
	c.closeServices()
}

func (c *Cluster) closeServices() {
	if c.services != nil {
		c.services.close()
		_ = os.RemoveAll(c.services.dir)
	}
}

// Kubectl returns the path of the kubectl binary of the cluster's version.
func (c *Cluster) Kubectl() string { return filepath.Join(c.BinDir, "kubectl") }

// CertPool returns a pool holding the cluster's CA.
func (c *Cluster) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.CABundle())
	return pool
}

// LogFiles returns the paths of the component logs, in start order.
func (c *Cluster) LogFiles() []string {
	var paths []string
	for _, p := range c.Processes() {
		if !slices.Contains(paths, p.LogPath) {
			paths = append(paths, p.LogPath)
		}
	}
	return paths
}

// LogMark records how far each component's log has been written, for LogsSince.
type LogMark map[string]int64

// Mark returns the current end of every component log.
func (c *Cluster) Mark() LogMark {
	m := LogMark{}
	for _, p := range c.Processes() {
		if fi, err := os.Stat(p.LogPath); err == nil {
			m[p.LogPath] = fi.Size()
		}
	}
	return m
}

// LogsSince returns what every component logged after mark, at most about maxBytes per
// component (0: no limit).
func (c *Cluster) LogsSince(mark LogMark, maxBytes int64) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, p := range c.Processes() {
		if seen[p.LogPath] {
			continue // a restarted component appends to its log
		}
		seen[p.LogPath] = true
		fmt.Fprintf(&b, "===== %s (%s) =====\n", p.Name, p.LogPath)
		b.WriteString(p.LogSince(mark[p.LogPath], maxBytes))
	}
	return b.String()
}

// DumpLogsOnFailure registers a cleanup that prints what the components logged during the
// test if it failed. Use it in tests that share a cluster started in TestMain.
func (c *Cluster) DumpLogsOnFailure(t testing.TB) {
	t.Helper()
	mark := c.Mark()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("component logs during %s:\n%s", t.Name(), c.LogsSince(mark, 64<<10))
		}
	})
}
