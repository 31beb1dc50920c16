package binary

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Balancer spreads the admission requests of kube-apiserver over the replicas of
// StartReplicas, as the chart's Service spreads them over its pods: there is no Service on
// loopback, so the webhook configuration points at it by URL. It terminates TLS with the
// replicas' serving certificate and sends each request to the next replica in turn — per
// request, not per connection, so that kube-apiserver's one kept-alive connection still
// reaches every replica and a burst is admitted by all of them — and, when one does not
// answer (it was stopped to try HA), to the next.
type Balancer struct {
	// Addr is host:port on 127.0.0.1.
	Addr string

	replicas []*Server
	client   *http.Client
	next     atomic.Uint64

	mu     sync.Mutex
	served map[string]int // requests each replica answered, by webhook address
}

// StartBalancer serves on a free port of 127.0.0.1 with the certificate in certDir
// (tls.crt, tls.key), trusting pool for the replicas' certificates, until ctx ends.
func StartBalancer(ctx context.Context, certDir string, pool *x509.CertPool, replicas []*Server) (*Balancer, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	b := &Balancer{Addr: ln.Addr().String(), replicas: replicas, served: map[string]int{},
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			DialContext:     (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		}}}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return b, nil
}

// ServeHTTP sends the request to the next replica that answers.
func (b *Balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	first := b.next.Add(1)
	var last error
	for i := range len(b.replicas) {
		s := b.replicas[(int(first)+i)%len(b.replicas)]
		req, err := http.NewRequestWithContext(r.Context(), r.Method, "https://"+s.WebhookAddr+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := b.client.Do(req)
		if err != nil {
			last = err
			continue
		}
		b.mu.Lock()
		b.served[s.WebhookAddr]++
		b.mu.Unlock()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		_ = resp.Body.Close()
		return
	}
	http.Error(w, errors.Join(errors.New("no replica answers"), last).Error(), http.StatusBadGateway)
}

// Served is how many requests each replica answered, in the order of the replicas.
func (b *Balancer) Served() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]int, len(b.replicas))
	for i, s := range b.replicas {
		out[i] = b.served[s.WebhookAddr]
	}
	return out
}
