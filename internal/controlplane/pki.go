//go:build unix

package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pkiValidity is how long the generated certificates are valid. A control plane lives for
// one run: a rehearsal, a test binary, a dev cluster.
const pkiValidity = 7 * 24 * time.Hour

// authority is the per-cluster certificate authority. It signs the apiserver's serving
// certificate, the client certificates of the components and the admin, and serving
// certificates handed to webhooks.
type authority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "claimbridge-controlplane-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(pkiValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &authority{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  keyPEM,
	}, nil
}

// certRequest describes a leaf certificate. A request with DNS names or IPs is a serving
// certificate, one with Organizations or only a CommonName a client certificate.
type certRequest struct {
	commonName    string
	organizations []string
	dnsNames      []string
	ips           []net.IP
	server        bool
	client        bool
}

// issue signs a new leaf certificate and returns it and its key, PEM encoded.
func (a *authority) issue(req certRequest) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key for %q: %w", req.commonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: req.commonName, Organization: req.organizations},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(pkiValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		DNSNames:     req.dnsNames,
		IPAddresses:  req.ips,
	}
	if req.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if req.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate for %q: %w", req.commonName, err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// ServingCert is a TLS serving certificate signed by the cluster's CA, for a webhook server
// that the apiserver calls. CABundle is what goes into the webhook configuration.
type ServingCert struct {
	CertPEM  []byte
	KeyPEM   []byte
	CABundle []byte
}

// WriteTo writes tls.crt and tls.key into dir, the layout controller-runtime's webhook
// server reads from its CertDir.
func (s ServingCert) WriteTo(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create certificate dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), s.CertPEM, 0o600); err != nil {
		return fmt.Errorf("write serving certificate: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), s.KeyPEM, 0o600); err != nil {
		return fmt.Errorf("write serving key: %w", err)
	}
	return nil
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return serial, nil
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// newServiceAccountKey returns the key pair that the apiserver signs and verifies service
// account tokens with and the controller-manager signs them with, PEM encoded.
func newServiceAccountKey() (privatePEM, publicPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate service account key: %w", err)
	}
	privatePEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("encode service account public key: %w", err)
	}
	return privatePEM, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), nil
}
