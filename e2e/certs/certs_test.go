// Package certs_test checks the certs package against a real kube-apiserver: the CA Secret,
// caBundle injection, rotation with replicas racing, the chart's RBAC being sufficient, and
// the apiserver trusting a certificate the package issued.
package certs_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/certs"
	"github.com/claimbridge/claimbridge/e2e/chart"
	"github.com/claimbridge/claimbridge/e2e/cluster"
)

var testCluster *cluster.Cluster

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 28*time.Minute)
	defer cancel()
	c, err := cluster.New(ctx, cluster.Options{Progress: os.Stderr})
	if err != nil {
		fmt.Fprintf(os.Stderr, "start cluster: %v\n", err)
		return 1
	}
	defer c.Stop()
	testCluster = c
	ctrllog.SetLogger(logr.Discard())
	return m.Run()
}

// release installs the chart's RBAC, ServiceAccount and MutatingWebhookConfiguration for a
// release named name in a fresh namespace, and returns the namespace and a client that acts
// as the chart's ServiceAccount, so that the tests run with exactly the chart's permissions.
type release struct {
	name, namespace string
	client          kubernetes.Interface
}

func installRelease(t *testing.T, name string) *release {
	t.Helper()
	c := testCluster
	ctx := t.Context()
	ns := c.Namespace(t, "certs-", nil)
	r, err := chart.Render(t.Context(), map[string]any{"fullnameOverride": name}, chart.Options{Release: name, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	admin := c.Client()
	for _, o := range r.Objects {
		var err error
		switch o.GetKind() {
		case "ServiceAccount":
			sa := &corev1.ServiceAccount{}
			must(t, chart.Decode(o, sa))
			_, err = admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
		case "ClusterRole":
			cr := &rbacv1.ClusterRole{}
			must(t, chart.Decode(o, cr))
			_, err = admin.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{})
			t.Cleanup(func() {
				_ = admin.RbacV1().ClusterRoles().Delete(context.Background(), cr.Name, metav1.DeleteOptions{})
			})
		case "ClusterRoleBinding":
			crb := &rbacv1.ClusterRoleBinding{}
			must(t, chart.Decode(o, crb))
			_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
			t.Cleanup(func() {
				_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
			})
		case "Role":
			role := &rbacv1.Role{}
			must(t, chart.Decode(o, role))
			_, err = admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
		case "RoleBinding":
			rb := &rbacv1.RoleBinding{}
			must(t, chart.Decode(o, rb))
			_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{})
		case "MutatingWebhookConfiguration":
			cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
			must(t, chart.Decode(o, cfg))
			_, err = admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{})
			t.Cleanup(func() {
				_ = admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), cfg.Name, metav1.DeleteOptions{})
			})
		}
		if err != nil {
			t.Fatalf("install %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	cfg := c.RESTConfig()
	cfg.Impersonate.UserName = "system:serviceaccount:" + ns + ":" + name
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// RBAC is applied asynchronously by the apiserver's authorizer cache; wait until it works.
	eventually(t, "the chart's RBAC takes effect", func(ctx context.Context) (bool, error) {
		_, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
	return &release{name: name, namespace: ns, client: client}
}

func (r *release) options(t *testing.T, clk *clocktesting.FakePassiveClock) certs.Options {
	o := certs.Options{
		Namespace: r.namespace, SecretName: r.name + "-ca", ServiceName: r.name,
		WebhookConfigName: r.name, CertDir: t.TempDir(),
		CAValidity: 300 * time.Hour, CertValidity: 30 * time.Hour,
	}
	if clk != nil {
		o.Clock = clk
	}
	return o
}

func (r *release) secretBundle(t *testing.T) (signing, bundle []byte) {
	t.Helper()
	s, err := testCluster.Client().CoreV1().Secrets(r.namespace).Get(t.Context(), r.name+"-ca", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Data[corev1.TLSCertKey], s.Data[certs.CAFile]
}

func (r *release) caBundles(t *testing.T, name string) [][]byte {
	t.Helper()
	cfg, err := testCluster.Client().AdmissionregistrationV1().MutatingWebhookConfigurations().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, w := range cfg.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

// bootstrapAll runs Bootstrap of every replica at the same moment.
func bootstrapAll(t *testing.T, replicas []*certs.SelfManaged) {
	t.Helper()
	start := make(chan struct{})
	errs := make([]error, len(replicas))
	var wg sync.WaitGroup
	for i, sm := range replicas {
		wg.Go(func() {
			<-start
			errs[i] = sm.Bootstrap(t.Context())
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
}

func leafOf(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	c, err := tls.LoadX509KeyPair(filepath.Join(dir, certs.CertFile), filepath.Join(dir, certs.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

func verifies(t *testing.T, leaf *x509.Certificate, bundle []byte, dnsName string, at time.Time) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatal("empty bundle")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: dnsName, CurrentTime: at}); err != nil {
		t.Errorf("serving certificate does not verify: %v", err)
	}
}

func countCerts(bundle []byte) int {
	n := 0
	for block, rest := pem.Decode(bundle); block != nil; block, rest = pem.Decode(rest) {
		n++
	}
	return n
}

func TestReplicasRacingOnTheSecretConvergeOnOneCAWithTheChartsRBAC(t *testing.T) {
	r := installRelease(t, "claimbridge-race")
	other := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "claimbridge-race-bystander"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "bystander.example.com", AdmissionReviewVersions: []string{"v1"},
			SideEffects:  new(admissionregistrationv1.SideEffectClassNone),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: new("https://127.0.0.1:1/none")},
		}},
	}
	admin := testCluster.Client().AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := admin.Create(t.Context(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), other.Name, metav1.DeleteOptions{}) })

	clk := clocktesting.NewFakePassiveClock(time.Now())
	var replicas []*certs.SelfManaged
	var dirs []string
	for range 4 {
		o := r.options(t, clk)
		sm, err := certs.NewSelfManaged(r.client, o)
		if err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, sm)
		dirs = append(dirs, o.CertDir)
	}
	bootstrapAll(t, replicas)

	signing, bundle := r.secretBundle(t)
	if n := countCerts(bundle); n != 1 {
		t.Fatalf("bundle holds %d CAs after the race, want 1", n)
	}
	for i, dir := range dirs {
		verifies(t, leafOf(t, dir), bundle, "claimbridge-race."+r.namespace+".svc", clk.Now())
		got, err := os.ReadFile(filepath.Join(dir, certs.CAFile))
		must(t, err)
		if diff := cmp.Diff(string(bundle), string(got)); diff != "" {
			t.Errorf("replica %d ca.crt (-want,+got):\n%s", i, diff)
		}
		if err := replicas[i].Ready(nil); err != nil {
			t.Errorf("replica %d not ready: %v", i, err)
		}
	}
	if diff := cmp.Diff([][]byte{bundle}, r.caBundles(t, r.name)); diff != "" {
		t.Errorf("our caBundle (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([][]byte{nil}, r.caBundles(t, other.Name)); diff != "" {
		t.Errorf("another configuration was changed (-want,+got):\n%s", diff)
	}
	// The chart's RBAC lets the webhook touch nothing else of the kind.
	if _, err := r.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(t.Context(), other.Name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading another webhook configuration: %v, want Forbidden", err)
	}
	if _, err := r.client.CoreV1().Secrets(r.namespace).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing the namespace's Secrets: %v, want Forbidden", err)
	}
	if _, err := r.client.CoreV1().Secrets("kube-system").Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: r.name + "-ca"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("creating a Secret outside the release namespace: %v, want Forbidden", err)
	}

	// Rotation with every replica racing again: one new CA, the old one kept in the bundle.
	clk.SetTime(clk.Now().Add(201 * time.Hour))
	bootstrapAll(t, replicas)
	newSigning, newBundle := r.secretBundle(t)
	if cmp.Equal(signing, newSigning) {
		t.Fatal("CA not rotated")
	}
	if n := countCerts(newBundle); n != 2 {
		t.Fatalf("bundle holds %d CAs after rotation, want 2", n)
	}
	newCA, err := x509.ParseCertificate(mustPEM(t, newSigning))
	must(t, err)
	for i, dir := range dirs {
		if err := leafOf(t, dir).CheckSignatureFrom(newCA); err != nil {
			t.Errorf("replica %d still serves a certificate from the old CA: %v", i, err)
		}
	}
	if diff := cmp.Diff([][]byte{newBundle}, r.caBundles(t, r.name)); diff != "" {
		t.Errorf("caBundle after rotation (-want,+got):\n%s", diff)
	}
}

func TestStartRestoresABlankedCABundleAndWatchesWithTheChartsRBAC(t *testing.T) {
	r := installRelease(t, "claimbridge-watch")
	o := r.options(t, nil)
	o.ResyncPeriod = time.Hour // only the watch can bring it back in time
	sm, err := certs.NewSelfManaged(r.client, o)
	must(t, err)
	must(t, sm.Bootstrap(t.Context()))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sm.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	_, bundle := r.secretBundle(t)
	configs := testCluster.Client().AdmissionregistrationV1().MutatingWebhookConfigurations()
	eventually(t, "the watch has started", func(ctx context.Context) (bool, error) {
		cfg, err := configs.Get(ctx, r.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cfg.Webhooks[0].ClientConfig.CABundle = nil
		if _, err := configs.Update(ctx, cfg, metav1.UpdateOptions{}); err != nil {
			return false, nil
		}
		// Restored by the watch handler, or blanked again on the next attempt.
		time.Sleep(time.Second)
		return cmp.Equal([][]byte{bundle}, r.caBundles(t, r.name)), nil
	})

	// A deleted CA Secret is recreated and the caBundle follows.
	must(t, testCluster.Client().CoreV1().Secrets(r.namespace).Delete(t.Context(), r.name+"-ca", metav1.DeleteOptions{}))
	eventually(t, "a new CA replaces the deleted one", func(ctx context.Context) (bool, error) {
		s, err := testCluster.Client().CoreV1().Secrets(r.namespace).Get(ctx, r.name+"-ca", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return cmp.Equal([][]byte{s.Data[certs.CAFile]}, r.caBundles(t, r.name)) && !cmp.Equal(s.Data[certs.CAFile], bundle), nil
	})
}

// TestTheAPIServerTrustsTheSelfManagedCertificate serves a webhook with a certificate issued by
// SelfManaged, registers the chart's MutatingWebhookConfiguration pointing at it by URL with no
// caBundle, and checks that after Bootstrap kube-apiserver calls it over TLS for exactly the
// pods the chart's matchConditions select.
func TestTheAPIServerTrustsTheSelfManagedCertificate(t *testing.T) {
	r := installRelease(t, "claimbridge-serve")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	must(t, l.Close())

	// Point the chart's configuration at the in-process server.
	configs := testCluster.Client().AdmissionregistrationV1().MutatingWebhookConfigurations()
	cfg, err := configs.Get(t.Context(), r.name, metav1.GetOptions{})
	must(t, err)
	cfg.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: new(fmt.Sprintf("https://127.0.0.1:%d/mutate-v1-pod", port))}
	_, err = configs.Update(t.Context(), cfg, metav1.UpdateOptions{})
	must(t, err)

	o := r.options(t, nil)
	o.ExtraIPs = []net.IP{net.ParseIP("127.0.0.1")}
	sm, err := certs.NewSelfManaged(r.client, o)
	must(t, err)
	must(t, sm.Bootstrap(t.Context()))

	srv := webhook.NewServer(webhook.Options{
		Host: "127.0.0.1", Port: port, CertDir: o.CertDir,
		TLSOpts: []func(*tls.Config){certs.TLSConfig(tls.VersionTLS12)},
	})
	var mu sync.Mutex
	var called []string
	srv.Register("/mutate-v1-pod", &admission.Webhook{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		mu.Lock()
		called = append(called, req.Name)
		mu.Unlock()
		pod := &corev1.Pod{}
		if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations["claimbridge.io/seen"] = "true"
		mutated, err := json.Marshal(pod)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
	})})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, "the webhook server starts", func(context.Context) (bool, error) { return srv.StartedChecker()(nil) == nil, nil })

	ns := testCluster.Namespace(t, "certs-enforce-", map[string]string{cluster.ModeLabel: "enforce"})
	pods := testCluster.Client().CoreV1().Pods(ns)
	gpuPod := func(name string, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "app", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
			}}}},
		}
	}
	// failurePolicy is Ignore: a TLS failure would admit the pod unchanged, so the annotation
	// is the proof that the call succeeded. The apiserver's webhook client caches may need a
	// moment to see the new caBundle.
	eventually(t, "the apiserver calls the webhook over TLS", func(ctx context.Context) (bool, error) {
		name := fmt.Sprintf("gpu-%d", time.Now().UnixNano())
		p, err := pods.Create(ctx, gpuPod(name, nil), metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		return p.Annotations["claimbridge.io/seen"] == "true", nil
	})
	mu.Lock()
	before := len(called)
	mu.Unlock()
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "app"}}}}
	for _, p := range []*corev1.Pod{plain, gpuPod("opted-out", map[string]string{"claimbridge.io/skip": "true"})} {
		got, err := pods.Create(t.Context(), p, metav1.CreateOptions{})
		must(t, err)
		if got.Annotations["claimbridge.io/seen"] != "" {
			t.Errorf("pod %s was sent to the webhook; the chart's matchConditions should exclude it", p.Name)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(called) != before {
		t.Errorf("webhook called for %v, want no call for pods the matchConditions exclude", called[before:])
	}
}

func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	cluster.Eventually(t, 30*time.Second, what, cond)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustPEM(t *testing.T, data []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("no PEM block")
	}
	return block.Bytes
}

func TestAChartUpgradeKeepsTheInjectedCABundle(t *testing.T) {
	r := installRelease(t, "claimbridge-upgrade")
	sm, err := certs.NewSelfManaged(r.client, r.options(t, nil))
	must(t, err)
	must(t, sm.Bootstrap(t.Context()))
	_, bundle := r.secretBundle(t)

	values := map[string]any{"fullnameOverride": r.name}
	live, err := chart.RenderWebhookConfiguration(t.Context(), values, chart.Options{Release: r.name, Namespace: r.namespace, Kubeconfig: testCluster.Kubeconfig})
	must(t, err)
	if diff := cmp.Diff(string(bundle), string(live.Webhooks[0].ClientConfig.CABundle)); diff != "" {
		t.Errorf("an upgrade would render another caBundle (-want,+got):\n%s", diff)
	}
	offline, err := chart.RenderWebhookConfiguration(t.Context(), values, chart.Options{Release: r.name, Namespace: r.namespace})
	must(t, err)
	if len(offline.Webhooks[0].ClientConfig.CABundle) != 0 {
		t.Error("an offline render has a caBundle; only the webhook may set it")
	}
}
