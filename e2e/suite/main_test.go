// Package suite runs claimbridge against a real control plane: kube-apiserver
// calls the webhook over TLS through the chart's MutatingWebhookConfiguration,
// kube-controller-manager creates claims from claimbridge's templates and
// kube-scheduler allocates them on fake nodes whose devices a fake DRA
// driver publishes from examples/fleets.
package suite

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/claimbridge/claimbridge/e2e/chart"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/policyreport"
	"github.com/claimbridge/claimbridge/internal/server"
)

const (
	ownNamespace = "claimbridge-system"
	// gcGrace is short so that the collection test runs in seconds.
	gcGrace = 4 * time.Second
	// strandedAfter: a translated pod that waits this long while the device
	// plugin has room for it is stranded (the default is minutes).
	strandedAfter = 2 * time.Second
	// platformRefresh: how often the server detects the platform again.
	platformRefresh = time.Second
	// wait bounds every asynchronous check of the suite.
	waitTimeout = 60 * time.Second
)

var (
	tc          *cluster.Cluster
	client      kubernetes.Interface
	warnings    = &warningLog{}
	metricsURL  string
	serverLog   = &lockedBuffer{}
	fleetsDir   string
	examplesDir string
	// policyPath is the policy file the server reloads (see usePolicy); it
	// holds the default policy unless a test says otherwise.
	policyPath string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	if err != nil {
		return fail(err)
	}
	fleetsDir, examplesDir = filepath.Join(root, "examples", "fleets"), filepath.Join(root, "examples")
	start := time.Now()
	c, err := cluster.New(ctx, cluster.Options{Progress: os.Stderr})
	if err != nil {
		return fail(fmt.Errorf("start cluster: %w", err))
	}
	defer c.Stop()
	tc = c
	fmt.Fprintf(os.Stderr, "cluster ready in %v\n", time.Since(start).Round(time.Millisecond))

	cfg := c.RESTConfig()
	cfg.WarningHandler = warnings
	if client, err = kubernetes.NewForConfig(cfg); err != nil {
		return fail(err)
	}
	stop, err := startClaimbridge(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, serverLog.String())
		return fail(err)
	}
	defer stop()
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- claimbridge log (last 200 lines)\n%s\n", tail(serverLog.String(), 200))
	}
	return code
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// startClaimbridge runs the real server (internal/server, as `claimbridge
// serve` does) in process with a certificate from the cluster's CA in
// cert-manager mode (files only), and installs the MutatingWebhookConfiguration
// the chart renders, pointed at it.
func startClaimbridge(ctx context.Context, c *cluster.Cluster) (func(), error) {
	if _, err := c.CreateNamespace(ctx, ownNamespace, "", nil); err != nil {
		return nil, err
	}
	cert, err := c.IssueServingCert([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	certDir, err := os.MkdirTemp(c.Dir, "claimbridge-tls-")
	if err != nil {
		return nil, err
	}
	if err := cert.WriteTo(certDir); err != nil {
		return nil, err
	}
	ports, err := cluster.FreePorts(2)
	if err != nil {
		return nil, err
	}
	metricsURL = "http://127.0.0.1:" + strconv.Itoa(ports[1])
	policyPath = filepath.Join(c.Dir, "policy.yaml")
	if err := writePolicy(defaultPolicyDocument()); err != nil {
		return nil, err
	}
	ctrl.SetLogger(funcr.NewJSON(func(obj string) { serverLog.WriteLine(obj) }, funcr.Options{Verbosity: 1}))

	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(sctx, c.RESTConfig(), server.Options{
			Namespace: ownNamespace, WebhookHost: "127.0.0.1", WebhookPort: ports[0], CertDir: certDir,
			TLSMode: server.TLSCertManager, ProbeAddr: "0",
			// The tests read /metrics and /report directly, the browser too;
			// metricsauth_test.go checks the authenticated default on a
			// replica of its own.
			MetricsAddr: "127.0.0.1:" + strconv.Itoa(ports[1]), MetricsInsecure: true,
			LeaderElect: true, TemplateGCGrace: gcGrace, SnapshotMinInterval: -1, StrandedAfter: strandedAfter, Policy: policyPath,
			// policyreports_test.go runs the writer of its own, from the image.
			PolicyReports: policyreport.APIOff,
			// The platform as the control plane shows it, detected often:
			// autoscaled_test.go runs a Karpenter that provisions for claims.
			PlatformDetect: true, PlatformRefresh: platformRefresh,
		})
	}()
	stop := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
		}
	}
	url := "https://127.0.0.1:" + strconv.Itoa(ports[0]) + "/mutate-v1-pod"
	if err := waitServing(ctx, url, c.CertPool(), done); err != nil {
		stop()
		return nil, err
	}
	mwc, err := chart.RenderWebhookConfiguration(ctx, map[string]any{}, chart.Options{Namespace: ownNamespace})
	if err != nil {
		stop()
		return nil, fmt.Errorf("render the chart's webhook configuration: %w", err)
	}
	if _, err := c.InstallWebhookConfiguration(ctx, mwc, url, cert.CABundle); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

func waitServing(ctx context.Context, url string, roots *x509.CertPool, done <-chan error) error {
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("claimbridge stopped: %w", err)
		default:
		}
		resp, err := hc.Get(url)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return true, nil
	})
}

// warningLog collects the admission warnings the apiserver returns.
type warningLog struct {
	mu   sync.Mutex
	msgs []string
}

var _ rest.WarningHandler = &warningLog{}

func (w *warningLog) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// since returns the warnings after mark (a previous len).
func (w *warningLog) since(mark int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs[mark:]...)
}

func (w *warningLog) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.msgs)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) WriteLine(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
	l.b.WriteByte('\n')
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// metricSum adds every series of a metric.
func metricSum(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			f := strings.Fields(line)
			if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// metric reads one sample of claimbridge's /metrics, 0 when absent.
func metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get(metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(line, l) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			return v
		}
	}
	return 0
}

// eventually polls cond until it holds, failing the test after waitTimeout.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	cluster.Eventually(t, waitTimeout, what, cond)
}

// setup gives a test a namespace in a mode, the fleets it names (prefixed),
// component logs on failure, and waits until claimbridge's inventory holds
// every node of the cluster.
func setup(t *testing.T, mode string, fleets ...string) (ns string, fl []*cluster.Fleet) {
	t.Helper()
	tc.DumpLogsOnFailure(t)
	mark := len(serverLog.String())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("claimbridge log during the test:\n%s", tail(serverLog.String()[mark:], 80))
		}
	})
	labels := map[string]string{}
	if mode != "" {
		labels[cluster.ModeLabel] = mode
	}
	ns = tc.Namespace(t, strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))[:min(30, len(t.Name()))]+"-", labels)
	prefix := fmt.Sprintf("t%d", time.Now().UnixNano()%1_000_000)
	for _, f := range fleets {
		fleet, err := tc.ApplyFleet(t.Context(), filepath.Join(fleetsDir, f), cluster.WithNamePrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), cluster.PollTimeout)
			defer cancel()
			if err := fleet.Remove(ctx); err != nil {
				t.Errorf("remove fleet: %v", err)
			}
		})
		fl = append(fl, fleet)
	}
	waitInventory(t)
	return ns, fl
}

// waitInventory waits until claimbridge's informers show every node.
func waitInventory(t *testing.T) {
	t.Helper()
	eventually(t, "claimbridge sees every node", func(ctx context.Context) (bool, error) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return metric(t, "claimbridge_inventory_nodes") == float64(len(nodes.Items)), nil
	})
}

func nodeNames(fl []*cluster.Fleet) map[string]bool {
	out := map[string]bool{}
	for _, f := range fl {
		for _, n := range f.NodeNames() {
			out[n] = true
		}
	}
	return out
}

func podGone(ctx context.Context, ns, name string) {
	_ = client.CoreV1().Pods(ns).Delete(ctx, name, *metav1.NewDeleteOptions(0))
}

// afterwards is eventually for cleanups, which run once t.Context() is done.
func afterwards(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok && err == nil, nil
	})
	if err != nil {
		t.Errorf("%s: not within %v (last error: %v)", what, waitTimeout, last)
	}
}
