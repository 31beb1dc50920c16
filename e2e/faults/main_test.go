// Package faults breaks things under claimbridge while pods are admitted: the
// webhook process is killed and restarted, its certificate rotated, the fleet's
// ResourceSlices withdrawn and republished, kube-apiserver restarted. claimbridge
// runs as the built binary (`claimbridge serve`, cert-manager TLS mode with a
// certificate from the cluster's CA) behind the chart's
// MutatingWebhookConfiguration (failurePolicy Ignore), as in a real cluster.
// Its control plane also runs the ExtendedResourceToleration admission plugin,
// as GKE does (TestGKEPodWithoutTolerationsIsTranslatedOntoTheTaintedGPUNode).
package faults

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/claimbridge/claimbridge/e2e/binary"
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
	cb      *binary.Server
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
	// ExtendedResourceToleration, as GKE runs it: the plugin adds the
	// toleration of every extended resource a pod requests before the
	// webhook. It changes nothing for the other tests here (their fleets
	// have no tainted nodes, and they compare no tolerations); the suite's
	// control plane runs without it.
	c, err := cluster.New(ctx, cluster.Options{Progress: os.Stderr, AdmissionPlugins: []string{"ExtendedResourceToleration"}})
	if err != nil {
		return fail(fmt.Errorf("start cluster: %w", err))
	}
	defer c.Stop()
	tc = c
	if client, err = kubernetes.NewForConfig(c.RESTConfig()); err != nil {
		return fail(err)
	}
	if cb, err = binary.Start(ctx, c, binary.Options{Namespace: ownNamespace}); err != nil {
		fmt.Fprintln(os.Stderr, c.LogTail(100))
		return fail(err)
	}
	if err := waitWebhookCalled(ctx); err != nil {
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

// servingSerial returns the serial number of the certificate the webhook
// serves, verified against the cluster's CA.
func servingSerial(cb *binary.Server) (*big.Int, error) {
	d := &net.Dialer{Timeout: 3 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", cb.WebhookAddr, &tls.Config{RootCAs: tc.CertPool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
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
