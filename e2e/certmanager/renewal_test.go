package certmanager_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/e2e/binary"
	"github.com/claimbridge/claimbridge/e2e/certmanager"
	"github.com/claimbridge/claimbridge/e2e/chart"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

const (
	ownNamespace = "claimbridge-system"
	release      = "claimbridge"
	// fullname is the chart's full name for the release: the Service, the webhook
	// configuration and the Certificates are named after it.
	fullname    = "claimbridge"
	waitTimeout = 90 * time.Second
	// renewals is how many times the serving certificate is renewed during the burst.
	renewals = 3
)

// TestCertManagerIssuesTheServingCertificateAndRenewalUnderABurstFailsNoAdmission installs
// the packaged chart in cert-manager TLS mode, for real: cert-manager's controller issues the
// chart's CA and serving Certificates, its cainjector writes the CA into the chart's
// MutatingWebhookConfiguration, the Secret reaches claimbridge as files (SecretVolume, as the
// kubelet would mount it), and claimbridge — the binary from the image, with the args, the
// environment and the ServiceAccount the chart's Deployment gives it — serves with it.
// kube-apiserver calls the webhook through the chart's Service (registered by service, not
// by URL; the cluster's service network stands in for kube-proxy) and verifies the
// certificate for claimbridge.claimbridge-system.svc against the injected caBundle. Then the
// Certificate is renewed three times, the way `cmctl renew` does it, while pods are created
// without pause: every pod must be translated, none admitted by the fail-open path.
func TestCertManagerIssuesTheServingCertificateAndRenewalUnderABurstFailsNoAdmission(t *testing.T) {
	tc.DumpLogsOnFailure(t)
	ctx := t.Context()
	client := tc.Client()

	// Pods that claimbridge translates: an enforce namespace and a fleet that serves them.
	podNS := tc.Namespace(t, "cm-pods-", map[string]string{cluster.ModeLabel: "enforce"})
	fleet, err := tc.ApplyFleet(ctx, filepath.Join(rootDir, "examples", "fleets", "l4-inference"), cluster.WithNamePrefix("cm"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fleet.Remove(context.Background()) })

	// helm install, cert-manager mode.
	if _, err := tc.CreateNamespace(ctx, ownNamespace, "", nil); err != nil {
		t.Fatal(err)
	}
	values := map[string]any{"tls": map[string]any{"mode": "cert-manager"}, "logFormat": "text"}
	installed := time.Now()
	r, err := chart.Install(ctx, values, chart.Options{Chart: packaged, Release: release, Namespace: ownNamespace, Kubeconfig: tc.Kubeconfig}, chart.InstallForReal)
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Logf("helm install of %s: %s", filepath.Base(packaged), strings.Join(r.Kinds(), ", "))

	// cert-manager issues the serving certificate.
	serving := fullname + "-serving"
	waitCertificateReady(t, serving)
	issued := time.Since(installed)
	cert, err := getCertificate(ctx, serving)
	if err != nil {
		t.Fatal(err)
	}
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")

	// cainjector injects the CA of that Secret into the webhook configuration.
	var caBundle []byte
	eventually(t, "cainjector writes the caBundle", func(ctx context.Context) (bool, error) {
		s, err := client.CoreV1().Secrets(ownNamespace).Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mwc, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, fullname, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		caBundle = mwc.Webhooks[0].ClientConfig.CABundle
		if len(caBundle) == 0 {
			return false, fmt.Errorf("no caBundle yet")
		}
		if string(caBundle) != string(s.Data["ca.crt"]) {
			return false, fmt.Errorf("caBundle is not the Secret's ca.crt")
		}
		return true, nil
	})
	injected := time.Since(installed)

	// The Deployment's pod, run the way the kubelet would run it.
	d, err := client.AppsV1().Deployments(ownNamespace).Get(ctx, fullname, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv, vol := runDeployment(t, d, secretName)
	svcPort := int32(443)
	if err := tc.RouteService(ctx, ownNamespace, fullname, svcPort, srv.WebhookAddr); err != nil {
		t.Fatal(err)
	}
	serving0 := time.Since(installed)

	// kube-apiserver calls it through the Service and trusts the certificate.
	probe := legacyPod(podNS, "probe")
	eventually(t, "kube-apiserver calls claimbridge through its Service", func(ctx context.Context) (bool, error) {
		got, err := client.CoreV1().Pods(podNS).Create(ctx, probe.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		if !translated(got) {
			return false, fmt.Errorf("not translated")
		}
		return true, nil
	})
	firstTranslation := time.Since(installed)
	if st := tc.ServiceNetworkStats(); st.Connections == 0 {
		t.Errorf("no connection went through the Service: %+v", st)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caBundle) {
		t.Fatal("caBundle holds no certificate")
	}
	serial0, err := servedSerial(srv.WebhookAddr, roots)
	if err != nil {
		t.Fatalf("claimbridge does not serve a certificate for %s.%s.svc that the caBundle verifies: %v", fullname, ownNamespace, err)
	}
	t.Logf("issued %.1fs after helm install, caBundle injected at %.1fs, claimbridge serving at %.1fs, first pod translated at %.1fs",
		issued.Seconds(), injected.Seconds(), serving0.Seconds(), firstTranslation.Seconds())

	failOpen0 := apiserverFailOpen(t)
	conns0 := tc.ServiceNetworkStats().Connections

	// Renewals while a burst of pods is admitted.
	var stop atomic.Bool
	type renewal struct {
		issued, served time.Duration
		serial         *big.Int
		conns          int64 // the service network's connection count when it was served
	}
	var renewalsDone []renewal
	var renewErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer stop.Store(true)
		time.Sleep(2 * time.Second) // the burst is under way
		prev := serial0
		for k := 1; k <= renewals; k++ {
			rev, _, err := certificateState(ctx, serving)
			if err != nil {
				renewErr = err
				return
			}
			start := time.Now()
			if err := triggerRenewal(ctx, serving); err != nil {
				renewErr = err
				return
			}
			if err := pollUntil(ctx, func() bool {
				r, ready, err := certificateState(ctx, serving)
				return err == nil && ready && r > rev
			}); err != nil {
				renewErr = fmt.Errorf("renewal %d: certificate not reissued: %w", k, err)
				return
			}
			issuedAt := time.Since(start)
			var serial *big.Int
			if err := pollUntil(ctx, func() bool {
				s, err := servedSerial(srv.WebhookAddr, roots)
				serial = s
				return err == nil && s.Cmp(prev) != 0
			}); err != nil {
				renewErr = fmt.Errorf("renewal %d: claimbridge still serves the old certificate: %w", k, err)
				return
			}
			renewalsDone = append(renewalsDone, renewal{issued: issuedAt, served: time.Since(start), serial: serial, conns: tc.ServiceNetworkStats().Connections})
			prev = serial
			time.Sleep(time.Second)
		}
		time.Sleep(2 * time.Second) // and some pods after the last one
	})
	adm := burst(ctx, client, podNS, 8, 3000, &stop)
	wg.Wait()
	if renewErr != nil {
		t.Fatal(renewErr)
	}
	if len(adm) < 100 {
		t.Fatalf("only %d pods were created during the renewals", len(adm))
	}

	// Every create succeeded and every pod was translated: no admission failed open.
	var createErrs, untranslated int
	for _, a := range adm {
		switch {
		case a.err != nil:
			createErrs++
			if createErrs <= 5 {
				t.Errorf("create failed: %v", a.err)
			}
		case !translated(a.pod):
			untranslated++
			if untranslated <= 5 {
				t.Errorf("pod %s was admitted untranslated", a.pod.Name)
			}
		}
	}
	failOpen := apiserverFailOpen(t) - failOpen0
	if failOpen != 0 {
		t.Errorf("kube-apiserver failed open %v times during the renewals", failOpen)
	}
	elapsed := adm[len(adm)-1].end.Sub(adm[0].start)
	t.Logf("%d pods in %.1fs (%.0f/s) across %d renewals: %d create errors, %d untranslated, %v fail-open admissions; kube-apiserver opened %d connections to the Service meanwhile",
		len(adm), elapsed.Seconds(), float64(len(adm))/elapsed.Seconds(), len(renewalsDone), createErrs, untranslated, failOpen,
		tc.ServiceNetworkStats().Connections-conns0)

	// kube-apiserver keeps its connection (HTTP/2) across the renewals; a new one must
	// handshake with the renewed certificate and verify it against the same caBundle.
	conns1 := tc.ServiceNetworkStats().Connections
	closed := tc.CloseServiceConnections()
	got, err := client.CoreV1().Pods(podNS).Create(ctx, legacyPod(podNS, "after"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !translated(got) {
		t.Error("after the renewals, a pod on a new connection is not translated")
	}
	if n := tc.ServiceNetworkStats().Connections - conns1; n < 1 {
		t.Errorf("kube-apiserver made %d new connections after %d were closed", n, closed)
	}
	for i, r := range renewalsDone {
		t.Logf("renewal %d: reissued %.1fs after the trigger, served by claimbridge %.1fs after it (serial %x…); kube-apiserver had opened %d connections before",
			i+1, r.issued.Seconds(), r.served.Seconds(), r.serial.Bytes()[:4], r.conns-conns0)
	}
	if len(renewalsDone) != renewals {
		t.Errorf("%d renewals, want %d", len(renewalsDone), renewals)
	}

	// The CA stayed: renewing the serving certificate does not change the caBundle.
	mwc, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, fullname, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(mwc.Webhooks[0].ClientConfig.CABundle) != string(caBundle) {
		t.Error("the caBundle changed with the serving certificate")
	}
	syncs, err := vol.Syncs()
	if err != nil {
		t.Errorf("secret volume: %v", err)
	}
	if len(syncs) < renewals+1 {
		t.Errorf("the Secret was projected %d times, want at least %d", len(syncs), renewals+1)
	}
	if !srv.Alive() {
		t.Error("claimbridge exited")
	}
	// /metrics and /report (metrics.secure, the chart's default) are served with the
	// webhook's certificate, renewed with it, and only to authenticated readers.
	if len(renewalsDone) > 0 {
		last := renewalsDone[len(renewalsDone)-1].serial
		eventually(t, "the metrics server serves the renewed certificate", func(context.Context) (bool, error) {
			s, err := servedSerial(srv.MetricsAddr, roots)
			if err != nil {
				return false, err
			}
			return s.Cmp(last) == 0, nil
		})
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, ServerName: fullname + "." + ownNamespace + ".svc", MinVersion: tls.VersionTLS12,
	}}}
	for _, path := range []string{"/metrics", "/report"} {
		resp, err := hc.Get("https://" + srv.MetricsAddr + path)
		if err != nil {
			t.Errorf("GET %s: %v", path, err)
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d, want 401", path, resp.StatusCode)
		}
	}
	// The registration is the chart's: by Service, not by URL.
	if cc := mwc.Webhooks[0].ClientConfig; cc.Service == nil || cc.URL != nil {
		t.Errorf("clientConfig = %+v, want the chart's Service reference", cc)
	}
}

// runDeployment runs the Deployment's container the way the kubelet would: the chart's args
// and environment, the certificate Secret projected at the tls mount's path (rewritten to a
// directory of the test), the ServiceAccount's token; only the listening ports are moved to
// free loopback ones.
func runDeployment(t *testing.T, d *appsv1.Deployment, secretName string) (*binary.Server, *certmanager.SecretVolume) {
	t.Helper()
	spec := d.Spec.Template.Spec
	c, err := certmanager.ContainerOf(spec, d.Namespace, d.Name+"-0")
	if err != nil {
		t.Fatal(err)
	}
	certDir := ""
	var mode int32 = 0o644
	for path, v := range c.Mounts {
		if v.Secret != nil && v.Secret.SecretName == secretName {
			certDir = path
			if v.Secret.DefaultMode != nil {
				mode = *v.Secret.DefaultMode
			}
		}
	}
	if certDir == "" {
		t.Fatalf("the Deployment mounts no volume of the Certificate's Secret %s: %v", secretName, c.Mounts)
	}
	localCertDir := filepath.Join(tc.Dir, "claimbridge-tls")
	vol, err := certmanager.StartSecretVolume(t.Context(), tc.Client(), d.Namespace, secretName, localCertDir, os.FileMode(mode))
	if err != nil {
		t.Fatal(err)
	}
	ports, err := cluster.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	webhookAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	metricsAddr := "127.0.0.1:" + strconv.Itoa(ports[1])
	probesAddr := "127.0.0.1:" + strconv.Itoa(ports[2])
	overrides := map[string]string{
		"--cert-dir":                  localCertDir,
		"--webhook-port":              strconv.Itoa(ports[0]),
		"--metrics-bind-address":      metricsAddr,
		"--health-probe-bind-address": probesAddr,
	}
	args := slices.Clone(c.Args)
	for i, a := range args {
		flag, value, ok := strings.Cut(a, "=")
		if v, override := overrides[flag]; ok && override {
			if flag == "--cert-dir" && value != certDir {
				t.Fatalf("--cert-dir=%s, but the Secret is mounted at %s", value, certDir)
			}
			args[i] = flag + "=" + v
			delete(overrides, flag)
		}
	}
	if len(overrides) != 0 {
		t.Fatalf("the Deployment's args lack %v: %q", overrides, c.Args)
	}
	kubeconfig := filepath.Join(tc.Dir, "claimbridge-sa.kubeconfig")
	if err := certmanager.ServiceAccountKubeconfig(t.Context(), tc, d.Namespace, spec.ServiceAccountName, kubeconfig); err != nil {
		t.Fatal(err)
	}
	// Ready needs the files: wait for the first projection.
	eventually(t, "the Secret is projected into the certificate directory", func(context.Context) (bool, error) {
		s, err := vol.Syncs()
		return len(s) > 0, err
	})
	srv, err := binary.Run(t.Context(), tc, bin, args, append(c.Env, "KUBECONFIG="+kubeconfig), probesAddr)
	if err != nil {
		t.Fatal(err)
	}
	srv.WebhookAddr, srv.MetricsAddr, srv.CertDir = webhookAddr, metricsAddr, localCertDir
	t.Cleanup(srv.Process().Stop)
	return srv, vol
}

// legacyPod asks for one L4 GPU the device-plugin way; the l4-inference fleet serves it.
func legacyPod(ns, generateName string) *corev1.Pod {
	p := builders.MakePod("", ns).Container("server").Limit("nvidia.com/gpu", "1").
		NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj()
	p.GenerateName = generateName + "-"
	return p
}

func translated(p *corev1.Pod) bool {
	return p != nil && slices.ContainsFunc(p.Spec.ResourceClaims, func(c corev1.PodResourceClaim) bool { return c.Name == api.ClaimName })
}

type admission struct {
	start, end time.Time
	pod        *corev1.Pod
	err        error
}

// burst creates legacy pods from workers goroutines until stop is set or max pods exist.
func burst(ctx context.Context, client kubernetes.Interface, ns string, workers, limit int, stop *atomic.Bool) []admission {
	var mu sync.Mutex
	var out []admission
	var n atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for !stop.Load() && n.Add(1) <= int64(limit) && ctx.Err() == nil {
				start := time.Now()
				got, err := client.CoreV1().Pods(ns).Create(ctx, legacyPod(ns, "burst"), metav1.CreateOptions{})
				a := admission{start: start, end: time.Now(), pod: got, err: err}
				mu.Lock()
				out = append(out, a)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b admission) int { return a.start.Compare(b.start) })
	return out
}

// servedSerial is the serial of the certificate claimbridge serves, verified as
// kube-apiserver verifies it: for <service>.<namespace>.svc, against the caBundle.
func servedSerial(addr string, roots *x509.CertPool) (*big.Int, error) {
	d := &net.Dialer{Timeout: 3 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{
		RootCAs: roots, ServerName: fullname + "." + ownNamespace + ".svc", MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber, nil
}

// triggerRenewal does what `cmctl renew` does: it sets the Certificate's Issuing condition.
func triggerRenewal(ctx context.Context, name string) error {
	res := dyn.Resource(certmanager.CertificateResource).Namespace(ownNamespace)
	u, err := res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	conds = append(conds, map[string]any{
		"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
		"message":            "Certificate re-issuance manually triggered",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	})
	if err := unstructured.SetNestedSlice(u.Object, conds, "status", "conditions"); err != nil {
		return err
	}
	_, err = res.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}

func getCertificate(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return dyn.Resource(certmanager.CertificateResource).Namespace(ownNamespace).Get(ctx, name, metav1.GetOptions{})
}

// certificateState is the Certificate's revision and whether it is Ready and not Issuing.
func certificateState(ctx context.Context, name string) (revision int64, ready bool, err error) {
	u, err := getCertificate(ctx, name)
	if err != nil {
		return 0, false, err
	}
	revision, _, _ = unstructured.NestedInt64(u.Object, "status", "revision")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	isReady, issuing := false, false
	for _, c := range conds {
		m, _ := c.(map[string]any)
		switch m["type"] {
		case "Ready":
			isReady = m["status"] == "True"
		case "Issuing":
			issuing = m["status"] == "True"
		}
	}
	return revision, isReady && !issuing, nil
}

func waitCertificateReady(t *testing.T, name string) {
	t.Helper()
	eventually(t, "Certificate "+name+" is Ready", func(ctx context.Context) (bool, error) {
		_, ready, err := certificateState(ctx, name)
		return ready, err
	})
}

func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	cluster.Eventually(t, waitTimeout, what, cond)
}

func pollUntil(ctx context.Context, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// apiserverFailOpen sums kube-apiserver's fail-open counter for claimbridge's webhook.
func apiserverFailOpen(t *testing.T) float64 {
	t.Helper()
	body, err := tc.Client().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("read kube-apiserver metrics: %v", err)
	}
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_admission_webhook_fail_open_count{") || !strings.Contains(line, "claimbridge") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}
