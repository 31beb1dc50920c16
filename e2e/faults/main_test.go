// Package faults breaks things under claimbridge while pods are admitted: the
// webhook process is killed and restarted, its certificate rotated, the fleet's
// ResourceSlices withdrawn and republished, kube-apiserver restarted. claimbridge
// runs as the built binary (`claimbridge serve`, cert-manager TLS mode with a
// certificate from the cluster's CA) behind the chart's
// MutatingWebhookConfiguration (failurePolicy Ignore), as in a real cluster.
package faults

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/claimbridge/claimbridge/e2e/chart"
	"github.com/claimbridge/claimbridge/e2e/cluster"
)

const (
	ownNamespace = "claimbridge-system"
	// waitTimeout bounds every asynchronous check.
	waitTimeout = 60 * time.Second
)

var (
	tc      *cluster.Cluster
	client  kubernetes.Interface
	cb      *claimbridge
	rootDir string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	if err != nil {
		return fail(err)
	}
	rootDir = root
	c, err := cluster.New(ctx, cluster.Options{Progress: os.Stderr})
	if err != nil {
		return fail(fmt.Errorf("start cluster: %w", err))
	}
	defer c.Stop()
	tc = c
	if client, err = kubernetes.NewForConfig(c.RESTConfig()); err != nil {
		return fail(err)
	}
	if cb, err = startClaimbridge(ctx, c, root); err != nil {
		fmt.Fprintln(os.Stderr, c.LogTail(100))
		return fail(err)
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, c.LogTail(100))
	}
	return code
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// claimbridge is the `claimbridge serve` process and what it takes to
// restart it the same way.
type claimbridge struct {
	bin, certDir string
	args         []string
	webhookAddr  string // host:port
	probesURL    string
	webhookName  string // in the MutatingWebhookConfiguration

	mu   sync.Mutex
	proc *cluster.Process
}

// startClaimbridge builds the binary, runs it with a serving certificate from
// the cluster's CA, waits until it is ready and installs the chart's webhook
// configuration pointed at it.
func startClaimbridge(ctx context.Context, c *cluster.Cluster, root string) (*claimbridge, error) {
	bin, err := cluster.BuildClaimbridge(ctx, c.Dir)
	if err != nil {
		return nil, err
	}
	if _, err := c.CreateNamespace(ctx, ownNamespace, "", nil); err != nil {
		return nil, err
	}
	cb := &claimbridge{bin: bin, certDir: filepath.Join(c.Dir, "claimbridge-tls")}
	cert, err := c.IssueServingCert([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	if err := cert.WriteTo(cb.certDir); err != nil {
		return nil, err
	}
	ports, err := cluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	cb.webhookAddr = "127.0.0.1:" + strconv.Itoa(ports[0])
	cb.probesURL = "http://127.0.0.1:" + strconv.Itoa(ports[2])
	cb.args = []string{"serve",
		"--namespace", ownNamespace, "--tls-mode", "cert-manager", "--cert-dir", cb.certDir,
		"--webhook-port", strconv.Itoa(ports[0]),
		"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(ports[1]),
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(ports[2]),
		"--leader-elect=false", "--log-format", "text",
	}
	if err := cb.start(ctx); err != nil {
		return nil, err
	}
	cfg, err := chart.RenderWebhookConfiguration(map[string]any{}, chart.Options{Namespace: ownNamespace})
	if err != nil {
		return nil, err
	}
	cb.webhookName = cfg.Webhooks[0].Name
	if _, err := c.InstallWebhookConfiguration(ctx, cfg, "https://"+cb.webhookAddr+"/mutate-v1-pod", cert.CABundle); err != nil {
		return nil, err
	}
	return cb, waitWebhookCalled(ctx)
}

// start runs the binary and waits until /readyz answers 200.
func (cb *claimbridge) start(ctx context.Context) error {
	p, err := tc.StartProcess("claimbridge", cb.bin, cb.args, []string{"KUBECONFIG=" + tc.Kubeconfig})
	if err != nil {
		return err
	}
	cb.mu.Lock()
	cb.proc = p
	cb.mu.Unlock()
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		select {
		case <-p.Exited():
			return false, fmt.Errorf("claimbridge exited during startup")
		default:
		}
		code, _ := cb.readyz()
		return code == http.StatusOK, nil
	})
}

func (cb *claimbridge) process() *cluster.Process {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return cb.proc
}

// alive reports whether the current process is running.
func (cb *claimbridge) alive() bool {
	select {
	case <-cb.process().Exited():
		return false
	default:
		return true
	}
}

// readyz returns the status and body of claimbridge's /readyz?verbose (0 when
// it does not answer).
func (cb *claimbridge) readyz() (int, string) {
	hc := &http.Client{Timeout: 3 * time.Second}
	resp, err := hc.Get(cb.probesURL + "/readyz?verbose")
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// servingSerial returns the serial number of the certificate the webhook
// serves, verified against the cluster's CA.
func (cb *claimbridge) servingSerial() (*big.Int, error) {
	d := &net.Dialer{Timeout: 3 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", cb.webhookAddr, &tls.Config{RootCAs: tc.CertPool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber, nil
}

// waitWebhookCalled waits until kube-apiserver calls the new webhook: a
// server-side dry run of a legacy pod comes back with claimbridge's warning.
func waitWebhookCalled(ctx context.Context) error {
	ns, err := tc.CreateNamespace(ctx, "", "faults-probe-", map[string]string{cluster.ModeLabel: "enforce"})
	if err != nil {
		return err
	}
	defer func() { _ = tc.DeleteNamespace(context.WithoutCancel(ctx), ns.Name) }()
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, ws, err := createPod(ctx, legacyPod(ns.Name, "probe"), true)
		return err == nil && len(ws) > 0 && strings.HasPrefix(ws[0], "claimbridge"), nil
	})
}

// warningLog collects the admission warnings the apiserver returns.
type warningLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warningLog) since(mark int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs[mark:]...)
}
