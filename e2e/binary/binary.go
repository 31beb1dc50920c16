// Package binary runs `claimbridge serve` next to an e2e control plane the way an
// operator deploys it: the binary taken out of the container image (`make image`, see
// package image), cert-manager TLS mode with a serving certificate from the cluster's CA,
// behind the MutatingWebhookConfiguration the chart renders, pointed at 127.0.0.1.
package binary

import (
	"cmp"
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
	// Replicas of claimbridge serve. Default 1. More than one elect a
	// leader (--leader-elect, the Lease in Namespace) as the chart's
	// replicas do, each with its own ports and log, and the webhook
	// configuration points at a Balancer in front of them.
	Replicas int
	// SecureMetrics serves /metrics and /report as the chart does: HTTPS
	// with the serving certificate, to readers kube-apiserver
	// authenticates and authorizes. Default false: plain HTTP, which the
	// harness reads directly.
	SecureMetrics bool
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
	// Name of the process, and of its log file in the cluster's logs:
	// "claimbridge", or "claimbridge-<n>" for the replicas of StartReplicas.
	Name string

	c         *cluster.Cluster
	args, env []string
	mu        sync.Mutex
	proc      *cluster.Process
}

// Start takes the binary out of the image (FromImage), runs `claimbridge serve`, waits
// until it is ready and installs the chart's webhook configuration pointed at it. With
// Options.Replicas it is the first of StartReplicas.
func Start(ctx context.Context, c *cluster.Cluster, o Options) (*Server, error) {
	all, _, err := StartReplicas(ctx, c, o)
	if err != nil {
		return nil, err
	}
	return all[0], nil
}

// StartBinary is Start with a claimbridge binary of the caller's.
func StartBinary(ctx context.Context, c *cluster.Cluster, bin string, o Options) (*Server, error) {
	all, _, err := startReplicas(ctx, c, bin, o)
	if err != nil {
		return nil, err
	}
	return all[0], nil
}

// StartReplicas is Start for Options.Replicas replicas: each runs with its own ports and log
// (claimbridge-0.log, …) and the same serving certificate, and with more than one they elect
// a leader and the webhook configuration points at a Balancer in front of them, returned
// (nil for one replica). The balancer stops when ctx ends.
func StartReplicas(ctx context.Context, c *cluster.Cluster, o Options) ([]*Server, *Balancer, error) {
	bin, err := FromImage(ctx, c.Dir)
	if err != nil {
		return nil, nil, err
	}
	return startReplicas(ctx, c, bin, o)
}

// startReplicas is StartReplicas with the binary bin.
func startReplicas(ctx context.Context, c *cluster.Cluster, bin string, o Options) ([]*Server, *Balancer, error) {
	replicas := max(o.Replicas, 1)
	if _, err := c.CreateNamespace(ctx, o.Namespace, "", nil); err != nil {
		return nil, nil, err
	}
	certDir := filepath.Join(c.Dir, "claimbridge-tls")
	cert, err := c.IssueServingCert([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, nil, err
	}
	if err := cert.WriteTo(certDir); err != nil {
		return nil, nil, err
	}
	all := make([]*Server, 0, replicas)
	for i := range replicas {
		s := &Server{Bin: bin, CertDir: certDir, Name: "claimbridge", c: c}
		if replicas > 1 {
			s.Name = "claimbridge-" + strconv.Itoa(i)
		}
		ports, err := cluster.FreePorts(3)
		if err != nil {
			return nil, nil, err
		}
		s.WebhookAddr = "127.0.0.1:" + strconv.Itoa(ports[0])
		s.MetricsAddr = "127.0.0.1:" + strconv.Itoa(ports[1])
		s.ProbesAddr = "127.0.0.1:" + strconv.Itoa(ports[2])
		// The harness reads /metrics and /report directly (plain HTTP, no
		// authentication) unless SecureMetrics; e2e/suite's metrics tests run
		// the binary's secure default.
		s.args = []string{"serve",
			"--namespace", o.Namespace, "--tls-mode", "cert-manager", "--cert-dir", s.CertDir,
			"--webhook-port", strconv.Itoa(ports[0]),
			"--metrics-bind-address", s.MetricsAddr, "--metrics-secure=" + strconv.FormatBool(o.SecureMetrics), "--health-probe-bind-address", s.ProbesAddr,
			"--leader-elect=" + strconv.FormatBool(replicas > 1), "--log-format", "text",
		}
		if replicas > 1 {
			// The replica that leads decides every hold; the others reach
			// it here.
			s.args = append(s.args, "--advertise-address", s.WebhookAddr)
		}
		s.args = append(s.args, o.ExtraArgs...)
		if err := s.Restart(ctx); err != nil {
			return nil, nil, err
		}
		all = append(all, s)
	}
	url := "https://" + all[0].WebhookAddr + "/mutate-v1-pod"
	var lb *Balancer
	if replicas > 1 {
		if lb, err = StartBalancer(ctx, certDir, c.CertPool(), all); err != nil {
			return nil, nil, err
		}
		url = "https://" + lb.Addr + "/mutate-v1-pod"
	}
	values := o.ChartValues
	if values == nil {
		values = map[string]any{}
	}
	cfg, err := chart.RenderWebhookConfiguration(ctx, values, chart.Options{Namespace: o.Namespace})
	if err != nil {
		return nil, nil, err
	}
	for _, s := range all {
		s.WebhookName = cfg.Webhooks[0].Name
	}
	if _, err := c.InstallWebhookConfiguration(ctx, cfg, url, cert.CABundle); err != nil {
		return nil, nil, err
	}
	return all, lb, nil
}

// Run runs bin with args and env (added to the test binary's environment; KUBECONFIG
// defaults to the cluster's admin kubeconfig) and waits until /readyz on probesAddr answers
// 200. The caller provides the certificate and the webhook configuration; Start does both.
func Run(ctx context.Context, c *cluster.Cluster, bin string, args, env []string, probesAddr string) (*Server, error) {
	s := &Server{Bin: bin, ProbesAddr: probesAddr, Name: "claimbridge", c: c, args: args, env: env}
	if err := s.Restart(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Restart starts the binary again with the same flags (after it was killed)
// and waits until /readyz answers 200.
func (s *Server) Restart(ctx context.Context) error {
	env := append([]string{"KUBECONFIG=" + s.c.Kubeconfig}, s.env...)
	p, err := s.c.StartProcess(cmp.Or(s.Name, "claimbridge"), s.Bin, s.args, env)
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
		return fmt.Errorf("%s not ready: %w (its log is in %s)", cmp.Or(s.Name, "claimbridge"), err, filepath.Join(s.c.Dir, "logs"))
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
