package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/certs"
	"github.com/claimbridge/claimbridge/webhook"
)

// selfSigned is a certificate for localhost and 127.0.0.1, in PEM.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "claimbridge"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// leaderServer serves ForwardedPath over TLS with the certificate, and
// answers each review with a patch, for the UID answerUID gives.
func leaderServer(t *testing.T, certPEM, keyPEM []byte, answerUID func(types.UID) types.UID) string {
	t.Helper()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(webhook.ForwardedPath, func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		pt := admissionv1.PatchTypeJSONPatch
		review.Response = &admissionv1.AdmissionResponse{UID: answerUID(review.Request.UID), Allowed: true, PatchType: &pt, Patch: []byte(`[{"op":"add","path":"/metadata/labels","value":{"decided":"leader"}}]`)}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "https://")
}

func writeCertDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestForwardToTheLeader: a replica that does not lead sends the review to
// the address the leader published and answers with the leader's answer,
// checked over TLS against its own certificate (the one every replica
// serves) or the CA bundle beside it; a leader it cannot trust, an answer
// for another admission, a stale or missing address are errors, and the
// pod is then decided on the replica.
func TestForwardToTheLeader(t *testing.T) {
	certPEM, keyPEM := selfSigned(t)
	same := func(u types.UID) types.UID { return u }
	addr := leaderServer(t, certPEM, keyPEM, same)
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "admission-1", Operation: admissionv1.Create}}
	fw := func(dir, leader string, renewed time.Time) *leaderForwarder {
		return &leaderForwarder{self: "10.0.0.2:9443", certDir: dir, leader: leader, renewed: renewed}
	}
	own := writeCertDir(t, map[string][]byte{certs.CertFile: certPEM, certs.KeyFile: keyPEM})

	f := fw(own, addr, time.Now())
	if f.Leads() {
		t.Fatal("a replica whose address is not the leader's says it leads")
	}
	resp, err := f.Forward(t.Context(), req)
	if err != nil {
		t.Fatalf("forward to the leader: %v", err)
	}
	if resp.UID != req.UID || !resp.Allowed || !strings.Contains(string(resp.Patch), "leader") {
		t.Errorf("the leader's answer came back as %+v", resp.AdmissionResponse)
	}

	otherCert, _ := selfSigned(t)
	withCA := writeCertDir(t, map[string][]byte{certs.CertFile: certPEM, certs.KeyFile: keyPEM, certs.CAFile: otherCert})
	if _, err := fw(withCA, addr, time.Now()).Forward(t.Context(), req); err == nil {
		t.Error("a leader whose certificate the CA bundle does not sign was trusted")
	}
	if _, err := fw(own, addr, time.Now().Add(-time.Minute)).Forward(t.Context(), req); err == nil {
		t.Error("an address not renewed for a minute was taken as the leader's")
	}
	if _, err := fw(own, "", time.Time{}).Forward(t.Context(), req); err == nil {
		t.Error("forwarded with no leader known")
	}
	wrong := leaderServer(t, certPEM, keyPEM, func(types.UID) types.UID { return "another" })
	if _, err := fw(own, wrong, time.Now()).Forward(t.Context(), req); err == nil {
		t.Error("an answer for another admission was taken")
	}
	self := fw(own, "10.0.0.2:9443", time.Now())
	if !self.Leads() {
		t.Error("the replica whose address the leader published does not say it leads")
	}
}
