package certs

import (
	"context"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cert-manager/cert-manager/pkg/util/pki"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	testNamespace = "claimbridge-system"
	testSecret    = "claimbridge-ca"
	testService   = "claimbridge"
	testConfig    = "claimbridge"
)

func webhookConfig(name string, hooks ...string) *admissionregistrationv1.MutatingWebhookConfiguration {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, h := range hooks {
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.MutatingWebhook{Name: h})
	}
	return cfg
}

type fixture struct {
	client kubernetes.Interface
	clock  *clocktesting.FakePassiveClock
	sm     *SelfManaged
	dir    string
}

func newFixture(t *testing.T, mutate func(*Options)) *fixture {
	t.Helper()
	client := fake.NewClientset(
		webhookConfig(testConfig, "pods.claimbridge.io", "second.claimbridge.io"),
		webhookConfig("someone-else", "other.example.com"),
	)
	clk := clocktesting.NewFakePassiveClock(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	opts := Options{
		Namespace: testNamespace, SecretName: testSecret, ServiceName: testService,
		WebhookConfigName: testConfig, CertDir: dir, Clock: clk,
		CAValidity: 300 * time.Hour, CertValidity: 30 * time.Hour,
	}
	if mutate != nil {
		mutate(&opts)
	}
	sm, err := NewSelfManaged(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{client: client, clock: clk, sm: sm, dir: dir}
}

func (f *fixture) bootstrap(t *testing.T) {
	t.Helper()
	if err := f.sm.Bootstrap(context.Background()); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
}

func (f *fixture) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	s, err := f.client.CoreV1().Secrets(testNamespace).Get(context.Background(), testSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) file(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func (f *fixture) leaf(t *testing.T) *x509.Certificate {
	t.Helper()
	c, err := pki.DecodeX509CertificateBytes(f.file(t, CertFile))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) caBundles(t *testing.T, name string) [][]byte {
	t.Helper()
	cfg, err := f.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, w := range cfg.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

// verify checks that the serving certificate chains to a CA in bundle for the service name.
func verify(t *testing.T, leaf *x509.Certificate, bundle []byte, at time.Time) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatal("bundle holds no certificate")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{
		DNSName: testService + "." + testNamespace + ".svc", Roots: roots, CurrentTime: at,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		t.Fatalf("serving certificate does not verify against the bundle: %v", err)
	}
}

func bundleCount(t *testing.T, bundle []byte) int {
	t.Helper()
	certs, err := pki.DecodeX509CertificateSetBytes(bundle)
	if err != nil {
		t.Fatal(err)
	}
	return len(certs)
}

func TestBootstrapCreatesCAServingCertificateAndInjectsOnlyOurConfiguration(t *testing.T) {
	f := newFixture(t, nil)
	if err := f.sm.Ready(nil); err == nil {
		t.Fatal("Ready before Bootstrap = nil, want an error")
	}
	f.bootstrap(t)

	s := f.secret(t)
	ca, err := parseAuthority(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey], s.Data[CAFile])
	if err != nil {
		t.Fatalf("CA secret: %v", err)
	}
	if got, want := ca.cert.NotAfter.Sub(f.clock.Now()), 300*time.Hour; got != want {
		t.Errorf("CA validity = %s, want %s", got, want)
	}
	if s.Type != corev1.SecretTypeTLS || s.Labels[LabelManagedBy] != "claimbridge" {
		t.Errorf("CA secret type %q labels %v", s.Type, s.Labels)
	}

	leaf := f.leaf(t)
	wantNames := []string{
		"claimbridge.claimbridge-system.svc", "claimbridge", "claimbridge.claimbridge-system",
		"claimbridge.claimbridge-system.svc.cluster.local",
	}
	if diff := cmp.Diff(wantNames, leaf.DNSNames); diff != "" {
		t.Errorf("DNS names (-want,+got):\n%s", diff)
	}
	if leaf.Subject.CommonName != wantNames[0] || leaf.IsCA {
		t.Errorf("leaf CN %q IsCA %v", leaf.Subject.CommonName, leaf.IsCA)
	}
	if got, want := leaf.NotAfter.Sub(f.clock.Now()), 30*time.Hour; got != want {
		t.Errorf("leaf validity = %s, want %s", got, want)
	}
	verify(t, leaf, s.Data[CAFile], f.clock.Now())

	if diff := cmp.Diff(s.Data[CAFile], f.file(t, CAFile)); diff != "" {
		t.Errorf("ca.crt differs from the Secret's bundle (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([][]byte{s.Data[CAFile], s.Data[CAFile]}, f.caBundles(t, testConfig)); diff != "" {
		t.Errorf("our webhooks' caBundle (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([][]byte{nil}, f.caBundles(t, "someone-else")); diff != "" {
		t.Errorf("another configuration was touched (-want,+got):\n%s", diff)
	}
	if err := f.sm.Ready(nil); err != nil {
		t.Errorf("Ready after Bootstrap: %v", err)
	}
	if info, err := os.Stat(filepath.Join(f.dir, KeyFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("tls.key mode: %v %v", info, err)
	}
}

func TestBootstrapIsIdempotent(t *testing.T) {
	f := newFixture(t, nil)
	f.bootstrap(t)
	rv := f.secret(t).ResourceVersion
	cert := f.file(t, CertFile)
	f.clock.SetTime(f.clock.Now().Add(time.Hour))
	f.bootstrap(t)
	if got := f.secret(t).ResourceVersion; got != rv {
		t.Errorf("Secret was rewritten: resourceVersion %s, want %s", got, rv)
	}
	if diff := cmp.Diff(cert, f.file(t, CertFile)); diff != "" {
		t.Errorf("serving certificate was reissued (-want,+got):\n%s", diff)
	}
}

func TestRotation(t *testing.T) {
	// CA 300h (rotated after 200h), serving certificate 30h (renewed after 20h).
	f := newFixture(t, nil)
	start := f.clock.Now()
	f.bootstrap(t)
	firstCA := f.secret(t).Data[corev1.TLSCertKey]
	firstLeaf := f.leaf(t)

	f.clock.SetTime(start.Add(19 * time.Hour))
	f.bootstrap(t)
	if !f.leaf(t).Equal(firstLeaf) {
		t.Fatal("serving certificate renewed before two thirds of its life")
	}

	f.clock.SetTime(start.Add(20*time.Hour + time.Minute))
	f.bootstrap(t)
	renewed := f.leaf(t)
	if renewed.Equal(firstLeaf) {
		t.Fatal("serving certificate not renewed with a third of its life left")
	}
	if diff := cmp.Diff(firstCA, f.secret(t).Data[corev1.TLSCertKey]); diff != "" {
		t.Fatalf("CA changed on a leaf renewal (-want,+got):\n%s", diff)
	}

	// Past two thirds of the CA's life: a new CA signs, the old one stays trusted.
	f.clock.SetTime(start.Add(201 * time.Hour))
	f.bootstrap(t)
	s := f.secret(t)
	if cmp.Equal(firstCA, s.Data[corev1.TLSCertKey]) {
		t.Fatal("CA not rotated with a third of its life left")
	}
	if got := bundleCount(t, s.Data[CAFile]); got != 2 {
		t.Fatalf("bundle after rotation holds %d CAs, want 2 (new and old)", got)
	}
	if !strings.HasPrefix(string(s.Data[CAFile]), string(s.Data[corev1.TLSCertKey])) {
		t.Error("bundle does not start with the signing CA")
	}
	verify(t, firstLeaf, s.Data[CAFile], start.Add(time.Hour)) // old leaves still verify
	leaf := f.leaf(t)
	verify(t, leaf, s.Data[CAFile], f.clock.Now())
	newCA, _ := pki.DecodeX509CertificateBytes(s.Data[corev1.TLSCertKey])
	if err := leaf.CheckSignatureFrom(newCA); err != nil {
		t.Errorf("serving certificate not signed by the new CA: %v", err)
	}
	if diff := cmp.Diff([][]byte{s.Data[CAFile], s.Data[CAFile]}, f.caBundles(t, testConfig)); diff != "" {
		t.Errorf("caBundle after rotation (-want,+got):\n%s", diff)
	}

	// Once the old CA has expired it leaves the bundle.
	f.clock.SetTime(start.Add(301 * time.Hour))
	f.bootstrap(t)
	if got := bundleCount(t, f.secret(t).Data[CAFile]); got != 1 {
		t.Errorf("bundle after the old CA expired holds %d CAs, want 1", got)
	}
	if diff := cmp.Diff(f.secret(t).Data[CAFile], f.file(t, CAFile)); diff != "" {
		t.Errorf("ca.crt not pruned (-want,+got):\n%s", diff)
	}
}

func TestServingCertificateNeverOutlivesTheCA(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.CAValidity, o.CertValidity = 30*time.Hour, 29*time.Hour })
	f.bootstrap(t)
	s := f.secret(t)
	ca, _ := pki.DecodeX509CertificateBytes(s.Data[corev1.TLSCertKey])
	if leaf := f.leaf(t); leaf.NotAfter.After(ca.NotAfter) {
		t.Errorf("leaf expires %s after the CA %s", leaf.NotAfter, ca.NotAfter)
	}
}

func TestBrokenCASecretIsReplaced(t *testing.T) {
	cases := map[string]map[string][]byte{
		"an empty secret":            {},
		"garbage in the certificate": {corev1.TLSCertKey: []byte("nope"), corev1.TLSPrivateKeyKey: []byte("nope")},
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, nil)
			if _, err := f.client.CoreV1().Secrets(testNamespace).Create(context.Background(), &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: testSecret, Namespace: testNamespace}, Data: data,
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.bootstrap(t)
			s := f.secret(t)
			if _, err := parseAuthority(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey], s.Data[CAFile]); err != nil {
				t.Fatalf("CA not replaced: %v", err)
			}
			verify(t, f.leaf(t), s.Data[CAFile], f.clock.Now())
		})
	}
}

func TestReplicasShareTheCA(t *testing.T) {
	f := newFixture(t, nil)
	f.bootstrap(t)
	other, err := NewSelfManaged(f.client, Options{
		Namespace: testNamespace, SecretName: testSecret, ServiceName: testService,
		WebhookConfigName: testConfig, CertDir: t.TempDir(), Clock: f.clock,
		CAValidity: 300 * time.Hour, CertValidity: 30 * time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	otherLeaf, err := pki.DecodeX509CertificateBytes(mustRead(t, filepath.Join(other.opts.CertDir, CertFile)))
	if err != nil {
		t.Fatal(err)
	}
	verify(t, otherLeaf, f.secret(t).Data[CAFile], f.clock.Now())
	if otherLeaf.Equal(f.leaf(t)) {
		t.Error("replicas share a serving certificate; each should sign its own")
	}
}

func TestMissingWebhookConfigurationFailsBootstrap(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.WebhookConfigName = "absent" })
	err := f.sm.Bootstrap(context.Background())
	if err == nil || !strings.Contains(err.Error(), `"absent"`) {
		t.Fatalf("Bootstrap = %v, want an error naming the configuration", err)
	}
	if f.sm.Ready(nil) == nil {
		t.Error("Ready = nil without an injected caBundle")
	}
}

func TestNewSelfManagedValidatesOptions(t *testing.T) {
	valid := Options{Namespace: "ns", SecretName: "s", ServiceName: "svc", WebhookConfigName: "w"}
	cases := map[string]struct {
		mutate  func(*Options)
		wantErr string
	}{
		"defaults are filled in":          {mutate: func(*Options) {}},
		"the namespace is required":       {mutate: func(o *Options) { o.Namespace = "" }, wantErr: "namespace is required"},
		"the secret name is required":     {mutate: func(o *Options) { o.SecretName = "" }, wantErr: "secret name is required"},
		"the service name is required":    {mutate: func(o *Options) { o.ServiceName = "" }, wantErr: "service name is required"},
		"the configuration is required":   {mutate: func(o *Options) { o.WebhookConfigName = "" }, wantErr: "configuration name is required"},
		"a leaf may not outlive the CA":   {mutate: func(o *Options) { o.CertValidity = DefaultCAValidity }, wantErr: "must be less than the CA validity"},
		"negative validities are refused": {mutate: func(o *Options) { o.CAValidity = -time.Hour }, wantErr: "must be positive"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			opts := valid
			tc.mutate(&opts)
			sm, err := NewSelfManaged(fake.NewClientset(), opts)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if sm.opts.CertDir != DefaultCertDir || sm.opts.CAValidity != DefaultCAValidity || sm.opts.CertValidity != DefaultCertValidity {
					t.Errorf("defaults not applied: %+v", sm.opts)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestStartKeepsCertificatesCurrentUntilCancelled(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Clock = nil; o.ResyncPeriod = 50 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.sm.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for f.sm.Ready(nil) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v", f.sm.Ready(nil))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A lost caBundle (for example a careless re-apply of the configuration) is restored.
	cfg := webhookConfig(testConfig, "pods.claimbridge.io", "second.claimbridge.io")
	got, _ := f.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, testConfig, metav1.GetOptions{})
	cfg.ResourceVersion = got.ResourceVersion
	if _, err := f.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, cfg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for len(f.caBundles(t, testConfig)[0]) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("caBundle not restored")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v after cancel, want nil", err)
	}
	if f.sm.NeedLeaderElection() {
		t.Error("NeedLeaderElection = true; every replica must keep its certificate")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
