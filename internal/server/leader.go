package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/certs"
	"github.com/claimbridge/claimbridge/webhook"
)

// One replica decides every hold. Each replica holds the devices of the
// pods it admits until their claims are allocated, and takes over those of
// the pods other replicas admitted once its informer shows them; between
// an admission on one replica and the pod reaching the other's informer,
// both could pick the same devices, and a burst then translated more pods
// than DRA holds (two replicas, the chart's default). So the replica that
// leads publishes the address of its webhook in a Lease of its own
// (<leader election ID>-admission); a replica that does not lead sends it
// every admission that would hold devices (webhook.Forwarder) and answers
// with what it answers. When no leader is known, its Lease has not been
// renewed for leaderStale, or it does not answer within forwardTimeout,
// the replica decides the pod itself, as before, and counts it
// (claimbridge_admissions_forwarded_total{decided="here"}).

const (
	// leaderRenew: how often the leader renews its address.
	leaderRenew = 2 * time.Second
	// leaderStale: an address not renewed for this long is no leader's.
	leaderStale = 10 * time.Second
	// leaderPoll: how often the other replicas read it.
	leaderPoll = time.Second
	// forwardTimeout bounds a forwarded admission, well within the
	// webhook's own timeout (the chart's timeoutSeconds).
	forwardTimeout = 4 * time.Second
	// certRecheck: how often the certificate files are read again for a
	// rotation.
	certRecheck = 10 * time.Second
)

// leaderLease names the Lease that holds the leader's webhook address.
func leaderLease(electionID string) string { return electionID + "-admission" }

// addressPublisher, run on the leader only, keeps its webhook address in
// the Lease.
type addressPublisher struct {
	client          kubernetes.Interface
	namespace, name string
	address         string
	log             logr.Logger
	// local is this replica's forwarder, told at once that it leads (it
	// would read it from the Lease only at its next poll).
	local *leaderForwarder
}

func (p *addressPublisher) Start(ctx context.Context) error {
	tick := time.NewTicker(leaderRenew)
	defer tick.Stop()
	for {
		if p.local != nil {
			p.local.observe(p.address, time.Now())
		}
		if err := p.renew(ctx); err != nil && ctx.Err() == nil {
			p.log.Error(err, "cannot publish the leader's webhook address", "lease", p.namespace+"/"+p.name)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (p *addressPublisher) renew(ctx context.Context) error {
	leases := p.client.CoordinationV1().Leases(p.namespace)
	now := metav1.NewMicroTime(time.Now())
	spec := coordinationv1.LeaseSpec{HolderIdentity: ptr.To(p.address), RenewTime: &now, LeaseDurationSeconds: ptr.To(int32(leaderStale / time.Second))}
	l, err := leases.Get(ctx, p.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.namespace}, Spec: spec}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l.Spec = spec
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// leaderForwarder, run on every replica, reads the leader's address and
// forwards to it (webhook.Forwarder).
type leaderForwarder struct {
	client          kubernetes.Interface
	namespace, name string
	self            string
	certDir         string

	mu      sync.Mutex
	leader  string
	renewed time.Time
	// hc is the client to the leader and bundle what it trusts, made
	// again when that changes (a rotation).
	bundle []byte
	hc     *http.Client
	// checked is when the files were last read: at most every
	// certRecheck, not on every forwarded admission.
	checked time.Time
}

func (f *leaderForwarder) Start(ctx context.Context) error {
	tick := time.NewTicker(leaderPoll)
	defer tick.Stop()
	for {
		l, err := f.client.CoordinationV1().Leases(f.namespace).Get(ctx, f.name, metav1.GetOptions{})
		switch {
		case err == nil && l.Spec.HolderIdentity != nil && l.Spec.RenewTime != nil:
			f.observe(*l.Spec.HolderIdentity, l.Spec.RenewTime.Time)
		case apierrors.IsNotFound(err):
			f.observe("", time.Time{})
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// observe records the leader's address as renewed at renewed; a renewal
// older than the one known is ignored.
func (f *leaderForwarder) observe(leader string, renewed time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if leader != "" && renewed.Before(f.renewed) {
		return
	}
	f.leader, f.renewed = leader, renewed
}

// leaderAddress is the leader's webhook address, "" when no leader is
// known.
func (f *leaderForwarder) leaderAddress(now time.Time) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leader == "" || now.Sub(f.renewed) > leaderStale {
		return ""
	}
	return f.leader
}

// Leads implements webhook.Forwarder: the leader's address is this
// replica's.
func (f *leaderForwarder) Leads() bool { return f.leaderAddress(time.Now()) == f.self }

// Forward implements webhook.Forwarder: the AdmissionReview goes to the
// leader's ForwardedPath over TLS, checked against the CA bundle this
// replica's own certificate comes with (every replica serves a
// certificate of the same issuer, for the same names).
func (f *leaderForwarder) Forward(ctx context.Context, req admission.Request) (admission.Response, error) {
	addr := f.leaderAddress(time.Now())
	if addr == "" {
		return admission.Response{}, errors.New("no leader has published its address in the last " + leaderStale.String())
	}
	return f.post(ctx, addr, req)
}

func (f *leaderForwarder) post(ctx context.Context, addr string, req admission.Request) (admission.Response, error) {
	hc, err := f.httpClient()
	if err != nil {
		return admission.Response{}, err
	}
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &req.AdmissionRequest}
	body, err := json.Marshal(review)
	if err != nil {
		return admission.Response{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+webhook.ForwardedPath, bytes.NewReader(body))
	if err != nil {
		return admission.Response{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hresp, err := hc.Do(hreq)
	if err != nil {
		return admission.Response{}, err
	}
	defer func() { _ = hresp.Body.Close() }()
	if hresp.StatusCode != http.StatusOK {
		return admission.Response{}, fmt.Errorf("the leader answered %s", hresp.Status)
	}
	var answer admissionv1.AdmissionReview
	if err := json.NewDecoder(hresp.Body).Decode(&answer); err != nil {
		return admission.Response{}, err
	}
	if answer.Response == nil || answer.Response.UID != req.UID {
		return admission.Response{}, fmt.Errorf("the leader's answer is not for admission %s", req.UID)
	}
	return admission.Response{AdmissionResponse: *answer.Response}, nil
}

// httpClient trusts the CA bundle of this replica's certificate directory
// (ca.crt, which cert-manager and the self-managed CA write), or, where
// there is none, this replica's own certificate, which every replica
// serves from the same Secret; and expects the leader's certificate to
// name what this replica's own does (the Service's DNS names). It is made
// again when either file changes (a rotation).
func (f *leaderForwarder) httpClient() (*http.Client, error) {
	now := time.Now()
	f.mu.Lock()
	if f.hc != nil && now.Sub(f.checked) < certRecheck {
		hc := f.hc
		f.mu.Unlock()
		return hc, nil
	}
	f.mu.Unlock()
	certPEM, err := os.ReadFile(filepath.Join(f.certDir, certs.CertFile))
	if err != nil {
		return nil, fmt.Errorf("this replica's certificate: %w", err)
	}
	bundle, err := os.ReadFile(filepath.Join(f.certDir, certs.CAFile))
	if errors.Is(err, os.ErrNotExist) {
		bundle, err = certPEM, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the CA bundle to check the leader against: %w", err)
	}
	trust := append(slices.Clone(bundle), certPEM...)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checked = now
	if f.hc != nil && bytes.Equal(trust, f.bundle) {
		return f.hc, nil
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, fmt.Errorf("no certificate in %s", certs.CertFile)
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		return nil, fmt.Errorf("no certificate in %s", certs.CAFile)
	}
	name := ""
	switch {
	case len(leaf.DNSNames) > 0:
		name = leaf.DNSNames[0]
	case len(leaf.IPAddresses) > 0:
		name = leaf.IPAddresses[0].String()
	}
	f.bundle = trust
	f.hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: name, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 16}}
	return f.hc, nil
}
