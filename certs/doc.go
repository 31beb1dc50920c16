// Package certs provides the webhook's serving certificate in the two TLS modes of the chart.
//
// Self-managed mode (the default, no cert-manager needed): SelfManaged keeps a CA in a Secret
// of the release namespace (tls.crt and tls.key: the signing CA; ca.crt: the trust bundle),
// signs a serving certificate for <service>.<namespace>.svc into a directory, and injects the
// trust bundle into the webhooks of one MutatingWebhookConfiguration, named in its Options and
// no other. It is built on cert-manager's PKI helpers (pkg/util/pki) and follows the pattern
// of cert-manager's own webhook CA (pkg/server/tls/authority.DynamicAuthority), with three
// differences: the clock is injectable, a rotated CA stays in the trust bundle until it
// expires (clients keep trusting certificates it signed), and the Secret is only read, created
// and updated by name, so the RBAC can name it.
//
// The contract used by `claimbridge serve`:
//
//	sm, err := certs.NewSelfManaged(client, certs.Options{Namespace, SecretName, ServiceName,
//	        WebhookConfigName, CertDir, CAValidity, CertValidity})
//	err = sm.Bootstrap(ctx)          // before the manager starts: CA, caBundle, certificate
//	mgr.Add(sm)                      // Start: keeps them current; NeedLeaderElection false
//	mgr.AddReadyzCheck("certs", sm.Ready)
//	webhook.Options{CertDir: dir, TLSOpts: []func(*tls.Config){certs.TLSConfig(min)}}
//
// Rotation: the serving certificate is renewed when a third of its life remains (cert-manager's
// default renewal point), the CA likewise; a new serving certificate is also issued when the
// CA changed or the names changed. The order within a pass is CA, then caBundle, then serving
// certificate, so the apiserver trusts a new CA before any replica serves a certificate it
// signed. Files are replaced atomically (temporary file and rename), and controller-runtime's
// certwatcher picks them up without a restart and without closing open connections.
//
// Replicas converge on one CA: the Secret is created once (AlreadyExists means another replica
// won; its CA is read back) and replaced only by updates guarded by resourceVersion (a conflict
// means another replica rotated; its CA is read back and found current). Every replica signs
// its own serving certificate, which never leaves its CertDir.
//
// cert-manager mode: the chart creates an Issuer and a Certificate, cert-manager's cainjector
// fills the caBundle (cert-manager.io/inject-ca-from), the kubelet mounts the Secret into
// CertDir and the binary only watches the files; FilesReady is its readiness check.
//
// TLSConfig is the server side of both modes: TLS 1.2 or higher (1.3 negotiated when offered),
// ECDHE with AEAD ciphers only, no renegotiation.
package certs
