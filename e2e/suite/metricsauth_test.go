package suite

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/e2e/binary"
	"github.com/claimbridge/claimbridge/e2e/chart"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/report"
)

// TestMetricsAndReportAnswerOnlyReadersKubeAPIServerAuthorizes runs `claimbridge
// serve` from the image with its default metrics settings, as the chart's
// ServiceAccount with the chart's RBAC, as a standby replica of the suite's
// server (same namespace and leader Lease). Tokens come from the TokenRequest
// API; kube-apiserver authenticates them (TokenReview) and decides (RBAC,
// through a SubjectAccessReview) who may get /metrics and /report.
func TestMetricsAndReportAnswerOnlyReadersKubeAPIServerAuthorizes(t *testing.T) {
	tc.DumpLogsOnFailure(t)
	ctx := t.Context()
	admin := tc.Client()
	readers := tc.Namespace(t, "metrics-readers-", nil)
	for _, name := range []string{"reader", "stranger"} {
		if _, err := admin.CoreV1().ServiceAccounts(readers).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const release = "claimbridge-metricsauth"
	installChartRBAC(t, release, map[string]any{
		"fullnameOverride": release,
		"tls":              map[string]any{"mode": "cert-manager"},
		"leaderElection":   map[string]any{"id": "claimbridge"},
		"metrics": map[string]any{"readers": []any{
			map[string]any{"kind": "ServiceAccount", "name": "reader", "namespace": readers},
		}},
	})
	srv, webhookPort, metricsAddr := startReplicaAs(t, release)
	started := logSize(t, srv)

	secure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: tc.CertPool(), MinVersion: tls.VersionTLS12},
	}}
	get := func(t *testing.T, path, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+metricsAddr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := secure.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	readerToken, strangerToken := saToken(t, readers, "reader"), saToken(t, readers, "stranger")
	// Authenticated, but a token of another audience: kube-apiserver's TokenReview refuses it.
	otherAudience := saTokenFor(t, readers, "reader", "https://example.com")

	for _, path := range []string{"/metrics", "/report?format=json"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			if code, _ := get(t, path, ""); code != http.StatusUnauthorized {
				t.Errorf("without a token: %d, want 401", code)
			}
			// A token the TokenReview rejects comes back with the reason in
			// status.error: 401, as kube-apiserver answers it, and nothing
			// worse than an info line in the log (controller-runtime's
			// filter said 500 "Authentication failed" and logged an ERROR
			// with a stack trace per request).
			logged := logSize(t, srv)
			for what, token := range map[string]string{"a token kube-apiserver did not issue": "not-a-token", "a token for another audience": otherAudience} {
				for range 3 {
					if code, body := get(t, path, token); code != http.StatusUnauthorized || strings.Contains(body, "claimbridge") {
						t.Errorf("with %s: %d, want 401 (%.200s)", what, code, body)
					}
				}
			}
			for _, line := range strings.Split(logSince(t, srv, logged), "\n") {
				if strings.Contains(line, "ERROR") || strings.Contains(line, "Authentication failed") || strings.Contains(line, "goroutine ") {
					t.Errorf("the log says of refused tokens: %s", line)
				}
			}
			if code, body := get(t, path, strangerToken); code != http.StatusForbidden {
				t.Errorf("a ServiceAccount without the reader role: %d, want 403 (%s)", code, strings.TrimSpace(body))
			}
			code, body := get(t, path, readerToken)
			if code != http.StatusOK {
				t.Fatalf("a ServiceAccount bound to %s-metrics-reader: %d, want 200 (%s)", release, code, strings.TrimSpace(body))
			}
			if strings.HasPrefix(path, "/metrics") {
				if !strings.Contains(body, "claimbridge_inventory_nodes") {
					t.Errorf("/metrics lacks claimbridge's metrics:\n%.500s", body)
				}
			} else if _, err := report.Read(strings.NewReader(body)); err != nil {
				t.Errorf("/report is not a report: %v", err)
			}
		})
	}

	// The refusals are told at info, one line a minute at most.
	refusals := 0
	for _, line := range strings.Split(logSince(t, srv, started), "\n") {
		if strings.Contains(line, "refused requests without a token kube-apiserver authenticates") {
			refusals++
			if !strings.Contains(line, "INFO") {
				t.Errorf("a refusal is not logged at info: %s", line)
			}
		}
	}
	if refusals != 1 {
		t.Errorf("%d log lines about refused tokens within a minute, want 1", refusals)
	}

	t.Run("the webhook listens on --bind-address only", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", webhookPort), 2*time.Second)
		if err != nil {
			t.Fatalf("the webhook does not listen on 127.0.0.1: %v", err)
		}
		_ = conn.Close()
		other := nonLoopbackIPv4()
		if other == nil {
			t.Skip("this machine has no other IPv4 address")
		}
		if conn, err := net.DialTimeout("tcp", net.JoinHostPort(other.String(), webhookPort), 2*time.Second); err == nil {
			_ = conn.Close()
			t.Errorf("the webhook answers on %s too", other)
		}
	})

	t.Run("plain HTTP is not served", func(t *testing.T) {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + metricsAddr + "/report")
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP: %d, want the TLS server's 400", resp.StatusCode)
		}
	})
}

// installChartRBAC installs the ServiceAccounts, the RBAC and the ConfigMaps the chart
// renders with values for a release in claimbridge's namespace, removed at the end.
func installChartRBAC(t *testing.T, release string, values map[string]any) {
	t.Helper()
	ctx := t.Context()
	admin := tc.Client()
	r, err := chart.Render(ctx, values, chart.Options{Release: release, Namespace: ownNamespace})
	if err != nil {
		t.Fatal(err)
	}
	var cleanups []func(context.Context) error
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cluster.PollTimeout)
		defer cancel()
		for _, c := range cleanups {
			_ = c(ctx)
		}
	})
	for _, o := range r.Objects {
		name := o.GetName()
		var create, remove func(context.Context) error
		switch o.GetKind() {
		case "ServiceAccount":
			obj := &corev1.ServiceAccount{}
			api := admin.CoreV1().ServiceAccounts(ownNamespace)
			create = func(ctx context.Context) error { _, err := api.Create(ctx, obj, metav1.CreateOptions{}); return err }
			remove = func(ctx context.Context) error { return api.Delete(ctx, name, metav1.DeleteOptions{}) }
			err = chart.Decode(o, obj)
		case "ConfigMap":
			obj := &corev1.ConfigMap{}
			api := admin.CoreV1().ConfigMaps(ownNamespace)
			create = func(ctx context.Context) error { _, err := api.Create(ctx, obj, metav1.CreateOptions{}); return err }
			remove = func(ctx context.Context) error { return api.Delete(ctx, name, metav1.DeleteOptions{}) }
			err = chart.Decode(o, obj)
		case "ClusterRole":
			obj := &rbacv1.ClusterRole{}
			api := admin.RbacV1().ClusterRoles()
			create = func(ctx context.Context) error { _, err := api.Create(ctx, obj, metav1.CreateOptions{}); return err }
			remove = func(ctx context.Context) error { return api.Delete(ctx, name, metav1.DeleteOptions{}) }
			err = chart.Decode(o, obj)
		case "ClusterRoleBinding":
			obj := &rbacv1.ClusterRoleBinding{}
			api := admin.RbacV1().ClusterRoleBindings()
			create = func(ctx context.Context) error { _, err := api.Create(ctx, obj, metav1.CreateOptions{}); return err }
			remove = func(ctx context.Context) error { return api.Delete(ctx, name, metav1.DeleteOptions{}) }
			err = chart.Decode(o, obj)
		case "Role":
			obj := &rbacv1.Role{}
			api := admin.RbacV1().Roles(ownNamespace)
			create = func(ctx context.Context) error { _, err := api.Create(ctx, obj, metav1.CreateOptions{}); return err }
			remove = func(ctx context.Context) error { return api.Delete(ctx, name, metav1.DeleteOptions{}) }
			err = chart.Decode(o, obj)
		case "RoleBinding":
			obj := &rbacv1.RoleBinding{}
			api := admin.RbacV1().RoleBindings(ownNamespace)
			create = func(ctx context.Context) error { _, err := api.Create(ctx, obj, metav1.CreateOptions{}); return err }
			remove = func(ctx context.Context) error { return api.Delete(ctx, name, metav1.DeleteOptions{}) }
			err = chart.Decode(o, obj)
		default:
			continue
		}
		if err == nil {
			err = create(ctx)
		}
		if err != nil {
			t.Fatalf("install %s %s: %v", o.GetKind(), name, err)
		}
		cleanups = append(cleanups, remove)
	}
}

// startReplicaAs runs the image's binary with a kubeconfig of the
// ServiceAccount sa of claimbridge's namespace, the webhook bound to
// 127.0.0.1 and the metrics flags left at their defaults, and returns the
// server, the webhook's port and the metrics address.
func startReplicaAs(t *testing.T, sa string) (srv *binary.Server, webhookPort, metricsAddr string) {
	t.Helper()
	srv, webhookPort, metricsAddr = serveAs(t, sa, "metricsauth-", "--leader-election-id", "claimbridge")
	t.Cleanup(srv.Process().Stop)
	return srv, webhookPort, metricsAddr
}

// logSize is how much the server's log file holds now.
func logSize(t *testing.T, srv *binary.Server) int64 {
	t.Helper()
	fi, err := os.Stat(srv.Process().LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// logSince is what the server's log file got after offset, once the
// server has had a moment to write it.
func logSince(t *testing.T, srv *binary.Server, offset int64) string {
	t.Helper()
	time.Sleep(500 * time.Millisecond)
	data, err := os.ReadFile(srv.Process().LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(data[offset:])
}

// serveAs runs `claimbridge serve` from the image as the ServiceAccount sa
// of claimbridge's namespace (a kubeconfig with its token), with a serving
// certificate for 127.0.0.1, the webhook bound to 127.0.0.1 and its own
// free ports, plus the extra flags; it returns the server, the webhook's
// port and the metrics address.
func serveAs(t *testing.T, sa, dirPrefix string, extra ...string) (srv *binary.Server, webhookPort, metricsAddr string) {
	t.Helper()
	ctx := t.Context()
	dir, err := os.MkdirTemp(tc.Dir, dirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := binary.FromImage(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tc.IssueServingCert([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	certDir := filepath.Join(dir, "tls")
	if err := cert.WriteTo(certDir); err != nil {
		t.Fatal(err)
	}
	kubeconfig := kubeconfigAs(t, dir, sa)
	ports, err := cluster.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	webhookPort, metricsAddr = strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1])
	probesAddr := "127.0.0.1:" + strconv.Itoa(ports[2])
	args := append([]string{"serve", "--namespace", ownNamespace, "--tls-mode", "cert-manager", "--cert-dir", certDir,
		"--bind-address", "127.0.0.1", "--webhook-port", webhookPort,
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", probesAddr,
		"--log-format", "text", "--log-level", "debug"}, extra...)
	srv, err = binary.Run(ctx, tc, bin, args, []string{"KUBECONFIG=" + kubeconfig}, probesAddr)
	if err != nil {
		t.Fatal(err)
	}
	return srv, webhookPort, metricsAddr
}

// kubeconfigAs writes into dir a kubeconfig with a token of the ServiceAccount sa of
// claimbridge's namespace, and returns its path.
func kubeconfigAs(t *testing.T, dir, sa string) string {
	t.Helper()
	kubeconfig := filepath.Join(dir, "kubeconfig-"+sa)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: tc.Host, CertificateAuthorityData: tc.CABundle()}
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: saToken(t, ownNamespace, sa)}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: sa, Namespace: ownNamespace}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// nonLoopbackIPv4 is an IPv4 address of this machine other than loopback, nil
// when there is none.
func nonLoopbackIPv4() net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP
		}
	}
	return nil
}

// saToken is a token of a ServiceAccount for kube-apiserver, from the
// TokenRequest API.
func saToken(t *testing.T, namespace, name string) string {
	t.Helper()
	return saTokenFor(t, namespace, name)
}

func saTokenFor(t *testing.T, namespace, name string, audiences ...string) string {
	t.Helper()
	tr, err := tc.Client().CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600), Audiences: audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(fmt.Errorf("token for %s/%s: %w", namespace, name, err))
	}
	return tr.Status.Token
}
