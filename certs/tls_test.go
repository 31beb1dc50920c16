package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// servingFixture is a real controller-runtime webhook server on 127.0.0.1 that serves the
// certificate in dir with TLSConfig applied.
type servingFixture struct {
	addr  string
	roots *x509.CertPool
}

func serve(t *testing.T, dir string, ca *authority) *servingFixture {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := webhook.NewServer(webhook.Options{
		Host: "127.0.0.1", Port: port, CertDir: dir,
		TLSOpts: []func(*tls.Config){TLSConfig(tls.VersionTLS12)},
	})
	srv.Register("/ping", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "pong") }))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("webhook server: %v", err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for srv.StartedChecker()(nil) != nil {
		if time.Now().After(deadline) {
			t.Fatal("webhook server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	return &servingFixture{addr: fmt.Sprintf("127.0.0.1:%d", port), roots: roots}
}

func issueInto(t *testing.T, dir string, ca *authority) *leaf {
	t.Helper()
	l, err := ca.sign([]string{"claimbridge.claimbridge-system.svc"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeServingFiles(dir, ca.bundlePEM, l); err != nil {
		t.Fatal(err)
	}
	return l
}

func testCA(t *testing.T) *authority {
	t.Helper()
	ca, err := newAuthority("test CA", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestTLSVersionsAndCiphers(t *testing.T) {
	ca := testCA(t)
	dir := t.TempDir()
	issueInto(t, dir, ca)
	s := serve(t, dir, ca)

	cases := map[string]struct {
		client      *tls.Config
		wantVersion uint16 // 0: the handshake must fail
	}{
		"TLS 1.0 is refused": {client: &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS10}},
		"TLS 1.1 is refused": {client: &tls.Config{MinVersion: tls.VersionTLS11, MaxVersion: tls.VersionTLS11}},
		"TLS 1.2 with an AEAD ECDHE suite is accepted": {
			client:      &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}},
			wantVersion: tls.VersionTLS12,
		},
		"TLS 1.2 with a CBC suite is refused": {
			client: &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}},
		},
		"TLS 1.3 is preferred when the client offers it": {client: &tls.Config{}, wantVersion: tls.VersionTLS13},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := tc.client.Clone()
			cfg.RootCAs = s.roots
			cfg.ServerName = "claimbridge.claimbridge-system.svc"
			conn, err := tls.Dial("tcp", s.addr, cfg)
			if tc.wantVersion == 0 {
				if err == nil {
					conn.Close()
					t.Fatalf("handshake succeeded with version %x, want it refused", conn.ConnectionState().Version)
				}
				return
			}
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			defer conn.Close()
			if got := conn.ConnectionState().Version; got != tc.wantVersion {
				t.Errorf("negotiated version %x, want %x", got, tc.wantVersion)
			}
		})
	}
}

func TestCertificateSwapIsServedWithoutRestartOrDroppedConnections(t *testing.T) {
	ca := testCA(t)
	dir := t.TempDir()
	first := issueInto(t, dir, ca)
	s := serve(t, dir, ca)

	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.roots, ServerName: "claimbridge.claimbridge-system.svc"}}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	var conns int
	get := func() *x509.Certificate {
		t.Helper()
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			if !info.Reused {
				conns++
			}
		}}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, "https://"+s.addr+"/ping", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request: %v", err)
		}
		defer resp.Body.Close()
		if body, _ := io.ReadAll(resp.Body); string(body) != "pong" {
			t.Fatalf("body %q", body)
		}
		return resp.TLS.PeerCertificates[0]
	}
	if got := get(); !got.Equal(first.cert) {
		t.Fatal("not serving the first certificate")
	}

	second := issueInto(t, dir, ca)
	// The kept-alive connection survives the swap: its requests still succeed.
	if got := get(); !got.Equal(first.cert) {
		t.Fatal("the open connection changed certificate; it should have been reused")
	}
	// New connections get the new certificate once the watcher has read it.
	fresh := func() *x509.Certificate {
		conn, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: s.roots, ServerName: "claimbridge.claimbridge-system.svc"})
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0]
	}
	deadline := time.Now().Add(15 * time.Second)
	for !fresh().Equal(second.cert) {
		if time.Now().After(deadline) {
			t.Fatal("the swapped certificate was not picked up")
		}
		time.Sleep(50 * time.Millisecond)
	}
	get()
	if conns != 1 {
		t.Errorf("%d TLS connections used by the kept-alive client, want 1", conns)
	}
}

func TestFilesReady(t *testing.T) {
	ca := testCA(t)
	cases := map[string]struct {
		setup   func(t *testing.T, dir string)
		wantErr string
	}{
		"a valid pair is ready": {setup: func(t *testing.T, dir string) { issueInto(t, dir, ca) }},
		"missing files are not ready": {
			setup: func(*testing.T, string) {}, wantErr: "read serving certificate",
		},
		"a key that does not match is not ready": {
			setup: func(t *testing.T, dir string) {
				issueInto(t, dir, ca)
				other := issueInto(t, t.TempDir(), ca)
				if err := os.WriteFile(filepath.Join(dir, KeyFile), other.keyPEM, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "load serving key pair",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			err := FilesReady(dir)(nil)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("FilesReady = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseTLSVersion(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    uint16
		wantErr bool
	}{
		"empty means TLS 1.2":      {in: "", want: tls.VersionTLS12},
		"TLS 1.2 by its flag name": {in: "VersionTLS12", want: tls.VersionTLS12},
		"TLS 1.3 by its flag name": {in: "VersionTLS13", want: tls.VersionTLS13},
		"TLS 1.1 is refused":       {in: "VersionTLS11", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseTLSVersion(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("ParseTLSVersion(%q) = %x, %v", tc.in, got, err)
			}
		})
	}
}

func TestTLSConfigNeverAllowsLessThanTLS12(t *testing.T) {
	var c tls.Config
	TLSConfig(tls.VersionTLS10)(&c)
	if c.MinVersion != tls.VersionTLS12 {
		t.Errorf("MinVersion = %x, want TLS 1.2", c.MinVersion)
	}
}
