package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// ServeWebhook serves an admission webhook in process: a controller-runtime webhook server
// on a free loopback port, with a serving certificate from the cluster's CA, serving handler
// (typically an *admission.Webhook) at path. It returns once the server accepts connections;
// the server stops when ctx ends. The returned Webhook has URL and CABundle set, ready for
// InstallWebhook once Name is filled in.
func (c *Cluster) ServeWebhook(ctx context.Context, path string, handler http.Handler) (Webhook, error) {
	serving, err := c.IssueServingCert([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return Webhook{}, err
	}
	certDir, err := os.MkdirTemp(c.Dir, "webhook-")
	if err != nil {
		return Webhook{}, fmt.Errorf("create webhook certificate dir: %w", err)
	}
	if err := serving.WriteTo(certDir); err != nil {
		return Webhook{}, err
	}
	ports, err := FreePorts(1)
	if err != nil {
		return Webhook{}, err
	}
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: ports[0], CertDir: certDir})
	srv.Register(path, handler)

	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- srv.Start(ctx)
		_ = os.RemoveAll(certDir)
	}()
	started := srv.StartedChecker()
	deadline := time.Now().Add(PollTimeout)
	for {
		select {
		case err := <-done:
			cancel()
			if err == nil {
				err = errors.New("stopped")
			}
			return Webhook{}, fmt.Errorf("webhook server: %w", err)
		default:
		}
		if started(nil) == nil {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			return Webhook{}, fmt.Errorf("webhook server not serving after %v", PollTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return Webhook{
		URL:      "https://127.0.0.1:" + strconv.Itoa(ports[0]) + path,
		CABundle: serving.CABundle,
	}, nil
}
