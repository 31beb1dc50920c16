package suite

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/claimbridge/claimbridge/e2e/binary"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/rehearsal/published"
)

// TestTheRehearsalJobPublishesAPageTheWebhookServes does what the chart's rehearsal Job does,
// with the chart's RBAC on the suite's kube-apiserver: `claimbridge rehearse` of the image,
// as the Job's ServiceAccount (a token of it, as the pod mounts), reads the cluster, rehearses
// one namespace's Deployment on a control plane of its own and publishes the page in the
// chart's ConfigMap (the nodes from the example fleet: the suite's fleets are each test's own);
// a replica of `claimbridge serve`, as the webhook's ServiceAccount with
// --rehearsal-configmap, serves it at /rehearsal to a reader of /report.
func TestTheRehearsalJobPublishesAPageTheWebhookServes(t *testing.T) {
	tc.DumpLogsOnFailure(t)
	ctx := t.Context()
	admin := tc.Client()
	const release = "claimbridge-rehearsaljob"
	const page = release + "-rehearsal"
	readers := tc.Namespace(t, "rehearsal-readers-", nil)
	if _, err := admin.CoreV1().ServiceAccounts(readers).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	installChartRBAC(t, release, map[string]any{
		"fullnameOverride": release,
		"tls":              map[string]any{"mode": "cert-manager"},
		"leaderElection":   map[string]any{"id": "claimbridge"},
		"rehearsal":        map[string]any{"enabled": true},
		"metrics":          map[string]any{"readers": []any{map[string]any{"kind": "ServiceAccount", "name": "reader", "namespace": readers}}},
	})
	srv, _, metricsAddr := serveAs(t, release, "rehearsaljob-", "--leader-election-id", "claimbridge", "--rehearsal-configmap", page)
	t.Cleanup(srv.Process().Stop)
	get := func(t *testing.T) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+metricsAddr+"/rehearsal", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+saToken(t, readers, "reader"))
		resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: tc.CertPool(), MinVersion: tls.VersionTLS12}}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(t); code != http.StatusNotFound || !strings.Contains(body, "no rehearsal has been published yet") {
		t.Errorf("/rehearsal before the Job ran: %d %q, want 404 saying none is published yet", code, body)
	}

	ns := tc.Namespace(t, "rehearsal-job-", nil)
	d := plainDeployment(ns, "")
	d.Spec.Template.Spec.NodeSelector = nil
	if _, err := admin.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	bin, err := binary.FromImage(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	bins, err := cluster.ResolveBinDir(ctx, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := kubeconfigAs(t, dir, page)
	// The workloads of the cluster, the nodes of the example fleet before the switch.
	cmd := exec.CommandContext(ctx, bin, "rehearse", "--kubeconfig", kubeconfig, "-n", ns, "--publish", ownNamespace+"/"+page,
		"--fleet", filepath.Join(fleetsDir, "before-cutover"),
		"--k8s-bin", bins, "--settle", "5s", "--settle-timeout", "2m")
	cmd.Env = append(os.Environ(), "CLAIMBRIDGE_CACHE="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() == 2) {
		t.Fatalf("claimbridge rehearse as %s: %v\n%s\n%s", page, err, stdout.String(), stderr.String())
	}
	t.Logf("claimbridge rehearse as %s (%v):\n%s\n%s", page, err, stdout.String(), stderr.String())
	if !strings.Contains(stdout.String(), ns+"/Deployment/plain") || !strings.Contains(stdout.String(), "rehearsed on Kubernetes") {
		t.Errorf("the table names no rehearsed ns/Deployment/plain:\n%s", stdout.String())
	}

	p, err := published.Read(ctx, admin, ownNamespace, page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(p.HTML), "<html") || !strings.Contains(string(p.HTML), "plain") || !strings.Contains(p.Summary, "1 workload rehearsed") {
		t.Errorf("the published page (%d bytes, %q) is not the rehearsal's", len(p.HTML), p.Summary)
	}
	code, body := get(t)
	if code != http.StatusOK || body != string(p.HTML) {
		t.Errorf("/rehearsal: %d, %d bytes; want 200 and the published page (%d bytes)", code, len(body), len(p.HTML))
	}

	// The Job's ServiceAccount writes its ConfigMap and nothing else.
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	job, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "not-the-rehearsal", Namespace: ownNamespace}}
	if _, err := job.CoreV1().ConfigMaps(ownNamespace).Create(ctx, other, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the rehearsal's ServiceAccount creates another ConfigMap: %v, want forbidden", err)
	}
	if _, err := job.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the rehearsal's ServiceAccount creates a pod: %v, want forbidden", err)
	}
	if _, err := job.CoreV1().Secrets(ownNamespace).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the rehearsal's ServiceAccount lists Secrets: %v, want forbidden", err)
	}
}
