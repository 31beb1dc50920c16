package certs

import (
	"crypto/tls"
	"fmt"
)

// secureCipherSuites are the TLS 1.2 suites allowed: ECDHE key exchange (forward secrecy) with
// an AEAD cipher. TLS 1.3 suites are not configurable in Go and are all AEAD.
var secureCipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// TLSConfig returns an option for controller-runtime's webhook.Options.TLSOpts: the minimum
// version is minVersion, raised to TLS 1.2 when lower (0 means TLS 1.2); TLS 1.3 is negotiated
// whenever the client supports it; TLS 1.2 uses only ECDHE suites with AEAD ciphers; and
// renegotiation is refused.
func TLSConfig(minVersion uint16) func(*tls.Config) {
	if minVersion < tls.VersionTLS12 {
		minVersion = tls.VersionTLS12
	}
	return func(c *tls.Config) {
		c.MinVersion = minVersion
		c.MaxVersion = 0 // the highest Go supports: TLS 1.3
		c.CipherSuites = append([]uint16(nil), secureCipherSuites...)
		c.Renegotiation = tls.RenegotiateNever
	}
}

// ParseTLSVersion maps the --tls-min-version names (VersionTLS12, VersionTLS13, the spelling
// of Kubernetes components) to crypto/tls constants. Older versions are rejected.
func ParseTLSVersion(name string) (uint16, error) {
	switch name {
	case "", "VersionTLS12":
		return tls.VersionTLS12, nil
	case "VersionTLS13":
		return tls.VersionTLS13, nil
	default:
		return 0, fmt.Errorf("unsupported TLS version %q: use VersionTLS12 or VersionTLS13", name)
	}
}
