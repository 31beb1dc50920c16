package certs

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/cert-manager/cert-manager/pkg/util/pki"
)

// Key sizes follow cert-manager's DynamicAuthority: ECDSA P-384 for the CA, P-256 for leaves.
const (
	caKeySize   = pki.ECCurve384
	leafKeySize = pki.ECCurve256
	// backdate absorbs clock skew between the replica that signs and the apiserver that verifies.
	backdate = 5 * time.Minute
)

// authority is a parsed CA: the signing certificate and key plus the trust bundle that
// clients must accept (the signing certificate first, then earlier CAs that are still valid).
type authority struct {
	cert      *x509.Certificate
	key       crypto.Signer
	certPEM   []byte
	keyPEM    []byte
	bundlePEM []byte
}

// newAuthority creates a self-signed CA valid from now for validity.
func newAuthority(commonName string, now time.Time, validity time.Duration) (*authority, error) {
	key, err := pki.GenerateECPrivateKey(caKeySize)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	certPEM, cert, err := pki.SignCertificate(tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA: %w", err)
	}
	keyPEM, err := pki.EncodePrivateKey(key, cmapi.PKCS8)
	if err != nil {
		return nil, fmt.Errorf("encode CA key: %w", err)
	}
	return &authority{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM, bundlePEM: certPEM}, nil
}

// parseAuthority reads a CA from PEM: the signing certificate, its key and the trust bundle.
// An error means the data cannot be used to sign (missing, unparsable, not a CA, key mismatch).
func parseAuthority(certPEM, keyPEM, bundlePEM []byte) (*authority, error) {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, errors.New("missing CA certificate or key")
	}
	cert, err := pki.DecodeX509CertificateBytes(certPEM)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("certificate is not a CA")
	}
	key, err := pki.DecodePrivateKeyBytes(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parse CA key: %w", err)
	}
	if ok, err := pki.PublicKeyMatchesCertificate(key.Public(), cert); err != nil || !ok {
		return nil, errors.New("CA key does not match the CA certificate")
	}
	a := &authority{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM, bundlePEM: bundlePEM}
	if len(bundlePEM) == 0 {
		a.bundlePEM = certPEM
	}
	return a, nil
}

// renewalTime is when a certificate is replaced: 2/3 through its life, cert-manager's default
// (1/3 of its life remains).
func renewalTime(cert *x509.Certificate) time.Time {
	rt, err := pki.RenewalTime(cert.NotBefore, cert.NotAfter, nil, nil, nil)
	if err != nil || rt == nil { // only with a renewal spec, which is never passed
		return cert.NotAfter
	}
	return rt.Time
}

// needsRenewal reports whether cert must be replaced at now.
func needsRenewal(cert *x509.Certificate, now time.Time) bool {
	return !now.Before(renewalTime(cert))
}

// rotate returns a new CA that replaces a and a trust bundle with the new CA first and every
// earlier CA of a's bundle that is still valid at now, so that leaves signed by the old CA keep
// being trusted until they are replaced.
func (a *authority) rotate(commonName string, now time.Time, validity time.Duration) (*authority, error) {
	next, err := newAuthority(commonName, now, validity)
	if err != nil {
		return nil, err
	}
	bundle, err := joinBundle(now, next.certPEM, a.bundlePEM)
	if err != nil {
		return nil, err
	}
	next.bundlePEM = bundle
	return next, nil
}

// prunedBundle returns a's bundle without the certificates that expired before now; the
// signing certificate always stays first.
func (a *authority) prunedBundle(now time.Time) ([]byte, error) {
	return joinBundle(now, a.certPEM, a.bundlePEM)
}

// joinBundle encodes first, then every certificate of rest that is unexpired at now and not
// already present, in order.
func joinBundle(now time.Time, first []byte, rest []byte) ([]byte, error) {
	head, err := pki.DecodeX509CertificateBytes(first)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	out := []*x509.Certificate{head}
	if len(rest) > 0 {
		certs, err := pki.DecodeX509CertificateSetBytes(rest)
		if err != nil {
			return nil, fmt.Errorf("parse CA bundle: %w", err)
		}
		for _, c := range certs {
			if !c.IsCA || now.After(c.NotAfter) {
				continue
			}
			if slices.ContainsFunc(out, func(o *x509.Certificate) bool { return o.Equal(c) }) {
				continue
			}
			out = append(out, c)
		}
	}
	var buf bytes.Buffer
	for _, c := range out {
		p, err := pki.EncodeX509(c)
		if err != nil {
			return nil, fmt.Errorf("encode CA bundle: %w", err)
		}
		buf.Write(p)
	}
	return buf.Bytes(), nil
}

// leaf is a serving certificate and its key, PEM encoded.
type leaf struct {
	cert    *x509.Certificate
	certPEM []byte
	keyPEM  []byte
}

// sign issues a serving certificate for dnsNames and ips, valid from now for validity but
// never beyond the CA's own expiry.
func (a *authority) sign(dnsNames []string, ips []net.IP, now time.Time, validity time.Duration) (*leaf, error) {
	if len(dnsNames) == 0 {
		return nil, errors.New("no DNS names to sign")
	}
	key, err := pki.GenerateECPrivateKey(leafKeySize)
	if err != nil {
		return nil, fmt.Errorf("generate serving key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(validity)
	if a.cert.NotAfter.Before(notAfter) {
		notAfter = a.cert.NotAfter
	}
	if !notAfter.After(now) {
		return nil, errors.New("CA certificate has expired")
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: dnsNames[0]},
		DNSNames:              dnsNames,
		IPAddresses:           ips,
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	certPEM, cert, err := pki.SignCertificate(tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, fmt.Errorf("sign serving certificate: %w", err)
	}
	keyPEM, err := pki.EncodePrivateKey(key, cmapi.PKCS8)
	if err != nil {
		return nil, fmt.Errorf("encode serving key: %w", err)
	}
	return &leaf{cert: cert, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// leafIsCurrent reports why the serving certificate in certPEM/keyPEM must be replaced, or ""
// when it can stay: it must parse, match its key, be signed by the current CA, carry exactly
// the wanted names and not be due for renewal.
func (a *authority) leafIsCurrent(certPEM, keyPEM []byte, dnsNames []string, ips []net.IP, now time.Time) string {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return "no serving certificate"
	}
	cert, err := pki.DecodeX509CertificateBytes(certPEM)
	if err != nil {
		return "serving certificate does not parse"
	}
	key, err := pki.DecodePrivateKeyBytes(keyPEM)
	if err != nil {
		return "serving key does not parse"
	}
	if ok, err := pki.PublicKeyMatchesCertificate(key.Public(), cert); err != nil || !ok {
		return "serving key does not match the certificate"
	}
	if err := cert.CheckSignatureFrom(a.cert); err != nil {
		return "serving certificate is not signed by the current CA"
	}
	if !slices.Equal(cert.DNSNames, dnsNames) || !slices.EqualFunc(cert.IPAddresses, ips, net.IP.Equal) {
		return "serving certificate names changed"
	}
	if needsRenewal(cert, now) {
		return "serving certificate is due for renewal"
	}
	return ""
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return serial, nil
}
