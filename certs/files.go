package certs

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/cert-manager/cert-manager/pkg/util/pki"
)

// File names in the certificate directory: the layout of a kubernetes.io/tls Secret with a CA,
// as cert-manager writes it, so both modes mount or write the same files.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	CAFile   = "ca.crt"
)

// writeFileAtomic replaces dir/name with data: a temporary file in the same directory, synced,
// then renamed over the target, so that a reader sees the old or the new content, never a part.
func writeFileAtomic(dir, name string, data []byte, perm os.FileMode) (err error) {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, tmp.Close(), os.Remove(tmp.Name()))
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// writeServingFiles writes the CA bundle, then the key, then the certificate. The certificate
// goes last: a watcher that reads the pair between the two renames sees a key that does not
// match and keeps serving the previous pair until the certificate arrives.
func writeServingFiles(dir string, bundlePEM []byte, l *leaf) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create certificate directory: %w", err)
	}
	if err := writeFileAtomic(dir, CAFile, bundlePEM, 0o644); err != nil {
		return err
	}
	if l == nil {
		return nil
	}
	if err := writeFileAtomic(dir, KeyFile, l.keyPEM, 0o600); err != nil {
		return err
	}
	return writeFileAtomic(dir, CertFile, l.certPEM, 0o644)
}

// readFile returns the file's content, or nil when it does not exist.
func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// FilesReady is the readiness check of cert-manager mode (healthz.Checker): it passes once
// tls.crt and tls.key in certDir exist, form a valid key pair and the certificate has not
// expired. The files are written by the kubelet from the Secret cert-manager maintains.
func FilesReady(certDir string) func(*http.Request) error {
	return func(*http.Request) error { return checkFiles(certDir, time.Now()) }
}

func checkFiles(certDir string, now time.Time) error {
	certPEM, err := os.ReadFile(filepath.Join(certDir, CertFile))
	if err != nil {
		return fmt.Errorf("read serving certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(certDir, KeyFile))
	if err != nil {
		return fmt.Errorf("read serving key: %w", err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return fmt.Errorf("load serving key pair: %w", err)
	}
	cert, err := pki.DecodeX509CertificateBytes(certPEM)
	if err != nil {
		return fmt.Errorf("parse serving certificate: %w", err)
	}
	if now.After(cert.NotAfter) {
		return fmt.Errorf("serving certificate expired at %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}
