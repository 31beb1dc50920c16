// Package binary runs `claimbridge serve` next to an e2e control plane the way an
// operator deploys it: the binary taken out of the container image (`make image`, see
// package image), cert-manager TLS mode with a serving certificate from the cluster's CA,
// behind the MutatingWebhookConfiguration the chart renders, pointed at 127.0.0.1.
package binary

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/claimbridge/claimbridge/e2e/chart"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/e2e/image"
)

// ImageEnv names the environment variable that points the harness at the OCI image layout
// `make image` wrote (_output/image/oci). When it is unset the harness builds the image for
// this machine's platform itself.
const ImageEnv = "CLAIMBRIDGE_IMAGE"

// FromImage writes the claimbridge binary of the container image for this machine's
// platform into dir and returns its path: from $CLAIMBRIDGE_IMAGE if set, else from an image
// built now (this platform only) into dir/image.
func FromImage(ctx context.Context, dir string) (string, error) {
	p := v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	layoutDir := os.Getenv(ImageEnv)
	if layoutDir == "" {
		b, err := image.Build(ctx, image.Options{Platforms: []v1.Platform{p}})
		if err != nil {
			return "", err
		}
		out, err := image.Write(filepath.Join(dir, "image"), b)
		if err != nil {
			return "", err
		}
		layoutDir = out.Layout
	}
	bin := filepath.Join(dir, "claimbridge")
	if err := image.ExtractBinary(layoutDir, p, bin); err != nil {
		return "", fmt.Errorf("take the binary out of the image (%s=%s): %w", ImageEnv, layoutDir, err)
	}
	return bin, nil
}

// Options of Start.
type Options struct {
	// Namespace is claimbridge's own namespace; it is created. Required.
	Namespace string
	// ExtraArgs are appended to the serve flags (e.g. "--log-level", "debug").
	ExtraArgs []string
	// ChartValues are the chart values the webhook configuration is
	// rendered with (e.g. webhook.matchConditions for a custom policy).
	// Default: none, the chart's defaults.
	ChartValues map[string]any
}

// Server is a running claimbridge binary.
type Server struct {
	// Bin is the built binary.
	Bin string
	// CertDir holds tls.crt and tls.key; replacing them rotates the certificate.
	CertDir string
	// WebhookAddr, MetricsAddr and ProbesAddr are host:port on 127.0.0.1.
	WebhookAddr, MetricsAddr, ProbesAddr string
	// WebhookName is the name of the webhook in the installed configuration.
	WebhookName string

	c         *cluster.Cluster
	args, env []string
	mu        sync.Mutex
	proc      *cluster.Process
}

// Start takes the binary out of the image (FromImage), runs `claimbridge serve`, waits
// until it is ready and installs the chart's webhook configuration pointed at it.
func Start(ctx context.Context, c *cluster.Cluster, o Options) (*Server, error) {
	bin, err := FromImage(ctx, c.Dir)
	if err != nil {
		return nil, err
	}
	return StartBinary(ctx, c, bin, o)
}

// StartBinary is Start with a claimbridge binary of the caller's.
func StartBinary(ctx context.Context, c *cluster.Cluster, bin string, o Options) (*Server, error) {
	if _, err := c.CreateNamespace(ctx, o.Namespace, "", nil); err != nil {
		return nil, err
	}
	s := &Server{Bin: bin, CertDir: filepath.Join(c.Dir, "claimbridge-tls"), c: c}
	cert, err := c.IssueServingCert([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	if err := cert.WriteTo(s.CertDir); err != nil {
		return nil, err
	}
	ports, err := cluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	s.WebhookAddr = "127.0.0.1:" + strconv.Itoa(ports[0])
	s.MetricsAddr = "127.0.0.1:" + strconv.Itoa(ports[1])
	s.ProbesAddr = "127.0.0.1:" + strconv.Itoa(ports[2])
	// The harness reads /metrics and /report directly (plain HTTP, no
	// authentication); e2e/suite's metrics tests run the binary's secure default.
	s.args = append([]string{"serve",
		"--namespace", o.Namespace, "--tls-mode", "cert-manager", "--cert-dir", s.CertDir,
		"--webhook-port", strconv.Itoa(ports[0]),
		"--metrics-bind-address", s.MetricsAddr, "--metrics-secure=false", "--health-probe-bind-address", s.ProbesAddr,
		"--leader-elect=false", "--log-format", "text",
	}, o.ExtraArgs...)
	if err := s.Restart(ctx); err != nil {
		return nil, err
	}
	values := o.ChartValues
	if values == nil {
		values = map[string]any{}
	}
	cfg, err := chart.RenderWebhookConfiguration(ctx, values, chart.Options{Namespace: o.Namespace})
	if err != nil {
		return nil, err
	}
	s.WebhookName = cfg.Webhooks[0].Name
	if _, err := c.InstallWebhookConfiguration(ctx, cfg, "https://"+s.WebhookAddr+"/mutate-v1-pod", cert.CABundle); err != nil {
		return nil, err
	}
	return s, nil
}

// Run runs bin with args and env (added to the test binary's environment; KUBECONFIG
// defaults to the cluster's admin kubeconfig) and waits until /readyz on probesAddr answers
// 200. The caller provides the certificate and the webhook configuration; Start does both.
func Run(ctx context.Context, c *cluster.Cluster, bin string, args, env []string, probesAddr string) (*Server, error) {
	s := &Server{Bin: bin, ProbesAddr: probesAddr, c: c, args: args, env: env}
	if err := s.Restart(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Restart starts the binary again with the same flags (after it was killed)
// and waits until /readyz answers 200.
func (s *Server) Restart(ctx context.Context) error {
	env := append([]string{"KUBECONFIG=" + s.c.Kubeconfig}, s.env...)
	p, err := s.c.StartProcess("claimbridge", s.Bin, s.args, env)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, cluster.PollTimeout, true, func(context.Context) (bool, error) {
		select {
		case <-p.Exited():
			return false, fmt.Errorf("claimbridge exited during startup")
		default:
		}
		code, _ := s.Readyz()
		return code == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("claimbridge not ready: %w (its log is in %s)", err, filepath.Join(s.c.Dir, "logs"))
	}
	return nil
}

// Process is the current process.
func (s *Server) Process() *cluster.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Alive reports whether the current process is running.
func (s *Server) Alive() bool {
	select {
	case <-s.Process().Exited():
		return false
	default:
		return true
	}
}

// Readyz returns the status and body of /readyz?verbose (0 when the server
// does not answer).
func (s *Server) Readyz() (int, string) {
	hc := &http.Client{Timeout: 3 * time.Second}
	resp, err := hc.Get("http://" + s.ProbesAddr + "/readyz?verbose")
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
