package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Defaults of Options.
const (
	DefaultCAValidity   = 5 * 365 * 24 * time.Hour // 43800h
	DefaultCertValidity = 90 * 24 * time.Hour      // 2160h
	DefaultCertDir      = "/var/run/claimbridge/tls"
	// DefaultResyncPeriod is how often Start re-checks the CA, the caBundle and the serving
	// certificate when nothing changed.
	DefaultResyncPeriod = 5 * time.Minute
)

// Secret labels and annotations.
const (
	// LabelManagedBy marks the CA Secret.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "claimbridge"
)

// Options configure SelfManaged.
type Options struct {
	// Namespace of the CA Secret and of the webhook Service. Required.
	Namespace string
	// SecretName is the Secret holding the CA (tls.crt, tls.key: the signing CA; ca.crt: the
	// trust bundle). Required.
	SecretName string
	// ServiceName is the webhook's Service; the serving certificate is issued for
	// <ServiceName>, <ServiceName>.<Namespace>, <ServiceName>.<Namespace>.svc and
	// <ServiceName>.<Namespace>.svc.cluster.local. Required.
	ServiceName string
	// WebhookConfigName is the MutatingWebhookConfiguration whose webhooks get the caBundle;
	// no other configuration is touched. Required.
	WebhookConfigName string
	// CertDir receives tls.crt, tls.key and ca.crt, each written atomically (temporary file and
	// rename). Default: DefaultCertDir.
	CertDir string
	// CAValidity is the CA's lifetime; the CA is replaced when a third of it remains, and the
	// replaced CA stays in the trust bundle until it expires. Default: DefaultCAValidity (5y).
	CAValidity time.Duration
	// CertValidity is the serving certificate's lifetime (capped at the CA's expiry); it is
	// renewed when a third of it remains. Must be less than CAValidity.
	// Default: DefaultCertValidity (90d).
	CertValidity time.Duration
	// ExtraDNSNames and ExtraIPs are added to the serving certificate, for a webhook reached
	// by URL rather than through its Service (development, tests). Default: none.
	ExtraDNSNames []string
	ExtraIPs      []net.IP
	// ResyncPeriod is how often Start re-checks without a change event.
	// Default: DefaultResyncPeriod.
	ResyncPeriod time.Duration
	// Clock tells the time for issuing and rotation decisions. Default: the real clock.
	Clock clock.PassiveClock
}

// SelfManaged issues and rotates the serving certificate from a CA kept in a Secret, and keeps
// the CA bundle of one MutatingWebhookConfiguration in step with it.
//
// Several replicas share the CA: the Secret is created once (a replica that loses the race
// reads the winner's CA), rotated with optimistic concurrency (a replica that loses reads the
// new CA back), and each replica signs its own serving certificate, kept only in CertDir.
type SelfManaged struct {
	client kubernetes.Interface
	opts   Options
	dns    []string

	mu       sync.Mutex // serializes sync
	ready    atomic.Bool
	injected atomic.Pointer[[]byte] // the bundle last seen in the webhook configuration
}

// NewSelfManaged checks opts and fills in defaults. It makes no API call.
func NewSelfManaged(c kubernetes.Interface, opts Options) (*SelfManaged, error) {
	switch {
	case c == nil:
		return nil, errors.New("a Kubernetes client is required")
	case opts.Namespace == "":
		return nil, errors.New("namespace is required")
	case opts.SecretName == "":
		return nil, errors.New("CA secret name is required")
	case opts.ServiceName == "":
		return nil, errors.New("service name is required")
	case opts.WebhookConfigName == "":
		return nil, errors.New("webhook configuration name is required")
	}
	if opts.CertDir == "" {
		opts.CertDir = DefaultCertDir
	}
	if opts.CAValidity == 0 {
		opts.CAValidity = DefaultCAValidity
	}
	if opts.CertValidity == 0 {
		opts.CertValidity = DefaultCertValidity
	}
	if opts.ResyncPeriod == 0 {
		opts.ResyncPeriod = DefaultResyncPeriod
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	switch {
	case opts.CAValidity < 0 || opts.CertValidity < 0 || opts.ResyncPeriod < 0:
		return nil, errors.New("validities and the resync period must be positive")
	case opts.CertValidity >= opts.CAValidity:
		return nil, fmt.Errorf("certificate validity %s must be less than the CA validity %s", opts.CertValidity, opts.CAValidity)
	}
	svc := opts.ServiceName
	dns := []string{
		svc + "." + opts.Namespace + ".svc",
		svc,
		svc + "." + opts.Namespace,
		svc + "." + opts.Namespace + ".svc.cluster.local",
	}
	dns = append(dns, opts.ExtraDNSNames...)
	return &SelfManaged{client: c, opts: opts, dns: dns}, nil
}

// DNSNames are the names the serving certificate is issued for; the first is its common name.
func (s *SelfManaged) DNSNames() []string { return append([]string(nil), s.dns...) }

// Bootstrap brings everything in place, synchronously: the CA Secret exists and is not due for
// rotation, the trust bundle is in every webhook of the MutatingWebhookConfiguration and in
// CertDir/ca.crt, and CertDir holds a current serving certificate signed by the CA. Call it
// before the webhook server starts; calling it again performs any rotation that is due.
func (s *SelfManaged) Bootstrap(ctx context.Context) error {
	return s.sync(ctx)
}

// Start keeps the certificates current until ctx ends (manager.Runnable): it re-runs Bootstrap
// when the CA Secret or the webhook configuration changes, and every ResyncPeriod. Errors are
// logged and retried; Start returns nil when ctx ends.
func (s *SelfManaged) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("certs")
	ctx = log.IntoContext(ctx, logger)
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	byName := func(name string) informers.SharedInformerOption {
		return informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		})
	}
	// Watching by name needs only list/watch on that name (RBAC resourceNames).
	secrets := informers.NewSharedInformerFactoryWithOptions(s.client, 0,
		informers.WithNamespace(s.opts.Namespace), byName(s.opts.SecretName))
	webhooks := informers.NewSharedInformerFactoryWithOptions(s.client, 0, byName(s.opts.WebhookConfigName))
	if _, err := secrets.Core().V1().Secrets().Informer().AddEventHandler(handler); err != nil {
		return fmt.Errorf("watch CA secret: %w", err)
	}
	if _, err := webhooks.Admissionregistration().V1().MutatingWebhookConfigurations().Informer().AddEventHandler(handler); err != nil {
		return fmt.Errorf("watch webhook configuration: %w", err)
	}
	secrets.Start(ctx.Done())
	webhooks.Start(ctx.Done())
	defer secrets.Shutdown()
	defer webhooks.Shutdown()

	ticker := time.NewTicker(s.opts.ResyncPeriod)
	defer ticker.Stop()
	backoff := time.Second
	for {
		err := s.sync(ctx)
		if err != nil && ctx.Err() == nil {
			logger.Error(err, "keeping the serving certificate current", "retryIn", backoff)
		}
		var retry <-chan time.Time
		if err != nil {
			retry = time.After(backoff)
			backoff = min(2*backoff, s.opts.ResyncPeriod)
		} else {
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-trigger:
		case <-ticker.C:
		case <-retry:
		}
	}
}

// NeedLeaderElection is false: every replica serves, so every replica keeps its certificate.
func (s *SelfManaged) NeedLeaderElection() bool { return false }

// Ready is a healthz.Checker: nil once a serving certificate was written and the trust bundle
// was injected into the webhook configuration.
func (s *SelfManaged) Ready(_ *http.Request) error {
	if !s.ready.Load() {
		return errors.New("serving certificate or caBundle not in place yet")
	}
	return checkFiles(s.opts.CertDir, s.opts.Clock.Now())
}

// sync is one pass: CA, then caBundle, then the serving certificate. The order matters on CA
// rotation: clients must trust the new CA before any replica serves a certificate it signed.
func (s *SelfManaged) sync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ca, err := s.ensureCA(ctx)
	if err != nil {
		return err
	}
	if err := s.injectCABundle(ctx, ca.bundlePEM); err != nil {
		return err
	}
	if err := s.ensureServingCert(ctx, ca); err != nil {
		return err
	}
	s.ready.Store(true)
	return nil
}

// ensureCA returns the CA in the Secret, creating the Secret if it is missing and rotating the
// CA when a third of its life remains or it cannot be used. Every write is a create or a
// resourceVersion-checked update; a replica that loses reads the winner's result.
func (s *SelfManaged) ensureCA(ctx context.Context) (*authority, error) {
	secrets := s.client.CoreV1().Secrets(s.opts.Namespace)
	var ca *authority
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		now := s.opts.Clock.Now()
		secret, err := secrets.Get(ctx, s.opts.SecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			next, err := newAuthority(s.commonName(), now, s.opts.CAValidity)
			if err != nil {
				return err
			}
			if _, err := secrets.Create(ctx, s.caSecret(next), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create CA secret %s/%s: %w", s.opts.Namespace, s.opts.SecretName, err)
			}
			log.FromContext(ctx).Info("created CA", "secret", s.opts.SecretName, "notAfter", next.cert.NotAfter)
			ca = next
			return nil
		}
		if err != nil {
			return fmt.Errorf("get CA secret %s/%s: %w", s.opts.Namespace, s.opts.SecretName, err)
		}
		current, parseErr := parseAuthority(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey], secret.Data[CAFile])
		var next *authority
		var reason string
		switch {
		case parseErr != nil:
			reason = parseErr.Error()
			next, err = newAuthority(s.commonName(), now, s.opts.CAValidity)
			if err == nil {
				// Keep whatever still parses of the old bundle: leaves it signed may be in use.
				if b, bErr := joinBundle(now, next.certPEM, secret.Data[CAFile]); bErr == nil {
					next.bundlePEM = b
				}
			}
		case needsRenewal(current.cert, now):
			reason = "CA is due for rotation"
			next, err = current.rotate(s.commonName(), now, s.opts.CAValidity)
		default:
			pruned, err := current.prunedBundle(now)
			if err != nil {
				return err
			}
			if bytes.Equal(pruned, current.bundlePEM) {
				ca = current
				return nil
			}
			reason = "expired CA left the bundle"
			next = &authority{cert: current.cert, key: current.key, certPEM: current.certPEM, keyPEM: current.keyPEM, bundlePEM: pruned}
		}
		if err != nil {
			return err
		}
		updated := secret.DeepCopy()
		updated.Data = s.caSecret(next).Data
		if _, err := secrets.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update CA secret %s/%s: %w", s.opts.Namespace, s.opts.SecretName, err)
		}
		log.FromContext(ctx).Info("updated CA", "secret", s.opts.SecretName, "reason", reason, "notAfter", next.cert.NotAfter)
		ca = next
		return nil
	})
	return ca, err
}

func (s *SelfManaged) commonName() string {
	return s.opts.ServiceName + "." + s.opts.Namespace + " CA"
}

func (s *SelfManaged) caSecret(a *authority) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      s.opts.SecretName,
			Namespace: s.opts.Namespace,
			Labels:    map[string]string{LabelManagedBy: managedBy},
			// Lets cert-manager's cainjector copy ca.crt elsewhere if a user wants that.
			Annotations: map[string]string{cmapi.AllowsInjectionFromSecretAnnotation: "true"},
		},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:       a.certPEM,
			corev1.TLSPrivateKeyKey: a.keyPEM,
			CAFile:                  a.bundlePEM,
		},
	}
}

// injectCABundle sets bundle as the caBundle of every webhook in the configuration named
// WebhookConfigName (get, then update guarded by resourceVersion, retried on conflict).
func (s *SelfManaged) injectCABundle(ctx context.Context, bundle []byte) error {
	configs := s.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := configs.Get(ctx, s.opts.WebhookConfigName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get mutating webhook configuration %q: %w", s.opts.WebhookConfigName, err)
		}
		if len(cfg.Webhooks) == 0 {
			return fmt.Errorf("mutating webhook configuration %q has no webhooks", s.opts.WebhookConfigName)
		}
		changed := false
		for i := range cfg.Webhooks {
			if !bytes.Equal(cfg.Webhooks[i].ClientConfig.CABundle, bundle) {
				cfg.Webhooks[i].ClientConfig.CABundle = bundle
				changed = true
			}
		}
		if !changed {
			return nil
		}
		if _, err := configs.Update(ctx, cfg, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update mutating webhook configuration %q: %w", s.opts.WebhookConfigName, err)
		}
		log.FromContext(ctx).Info("injected caBundle", "mutatingWebhookConfiguration", s.opts.WebhookConfigName)
		return nil
	})
	if err != nil {
		return err
	}
	s.injected.Store(&bundle)
	return nil
}

// ensureServingCert writes the trust bundle to ca.crt and, when the serving certificate in
// CertDir is missing or no longer current, a new one signed by ca.
func (s *SelfManaged) ensureServingCert(ctx context.Context, ca *authority) error {
	dir := s.opts.CertDir
	certPEM, err := readFile(filepath.Join(dir, CertFile))
	if err != nil {
		return fmt.Errorf("read serving certificate: %w", err)
	}
	keyPEM, err := readFile(filepath.Join(dir, KeyFile))
	if err != nil {
		return fmt.Errorf("read serving key: %w", err)
	}
	bundlePEM, err := readFile(filepath.Join(dir, CAFile))
	if err != nil {
		return fmt.Errorf("read CA bundle: %w", err)
	}
	now := s.opts.Clock.Now()
	reason := ca.leafIsCurrent(certPEM, keyPEM, s.dns, s.opts.ExtraIPs, now)
	if reason == "" {
		if bytes.Equal(bundlePEM, ca.bundlePEM) {
			return nil
		}
		return writeServingFiles(dir, ca.bundlePEM, nil)
	}
	l, err := ca.sign(s.dns, s.opts.ExtraIPs, now, s.opts.CertValidity)
	if err != nil {
		return err
	}
	if err := writeServingFiles(dir, ca.bundlePEM, l); err != nil {
		return err
	}
	log.FromContext(ctx).Info("issued serving certificate", "reason", reason, "dnsNames", s.dns, "notAfter", l.cert.NotAfter)
	return nil
}
