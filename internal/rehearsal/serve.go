//go:build unix

package rehearsal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/internal/controlplane"
	"github.com/claimbridge/claimbridge/translate"
)

// serve runs `claimbridge serve` next to the control plane as the chart deploys it (its own
// namespace, a serving certificate from the cluster's CA, the policy of the forecast), waits
// until it is ready and installs the chart's webhook configuration pointed at it.
func serve(ctx context.Context, c *controlplane.Cluster, o Options) error {
	if _, err := c.CreateNamespace(ctx, ownNamespace, "", nil); err != nil {
		return err
	}
	cert, err := c.IssueServingCert([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	certDir := filepath.Join(c.Dir, "claimbridge-tls")
	if err := cert.WriteTo(certDir); err != nil {
		return err
	}
	ports, err := controlplane.FreePorts(3)
	if err != nil {
		return err
	}
	webhookAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	probes := "127.0.0.1:" + strconv.Itoa(ports[2])
	args := append([]string{"serve",
		"--namespace", ownNamespace, "--tls-mode", "cert-manager", "--cert-dir", certDir,
		"--bind-address", "127.0.0.1", "--webhook-port", strconv.Itoa(ports[0]),
		"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(ports[1]), "--metrics-secure=false",
		"--health-probe-bind-address", probes, "--leader-elect=false", "--log-format", "text",
	}, o.Serve...)
	p, err := c.StartProcess("claimbridge", o.Claimbridge, args, []string{"KUBECONFIG=" + c.Kubeconfig})
	if err != nil {
		return err
	}
	if err := waitReady(ctx, p, probes); err != nil {
		p.Stop()
		return fmt.Errorf("%w (its log: %s)", err, p.LogPath)
	}
	fmt.Fprintf(o.Progress, "rehearse:   claimbridge serve ready: pid %d, webhook on %s, log %s\n", p.Pid(), webhookAddr, p.LogPath)
	_, err = c.InstallWebhookConfiguration(ctx, webhookConfiguration(o.Policy), "https://"+webhookAddr+"/mutate-v1-pod", cert.CABundle)
	return err
}

// waitReady polls /readyz until it answers 200 (at most two minutes).
func waitReady(ctx context.Context, p *controlplane.Process, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	hc := &http.Client{Timeout: 3 * time.Second}
	for {
		select {
		case <-p.Exited():
			return errors.New("claimbridge exited during startup")
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
	}
}

// webhookConfiguration is the MutatingWebhookConfiguration the chart renders with its
// default values (charts/claimbridge/templates/mutatingwebhookconfiguration.yaml and
// values.yaml: failurePolicy Ignore, timeoutSeconds 5, reinvocationPolicy IfNeeded) and the
// policy's matchConditions; the client config is set when it is installed.
func webhookConfiguration(p *translate.Policy) *admissionregistrationv1.MutatingWebhookConfiguration {
	failure := admissionregistrationv1.Ignore
	match := admissionregistrationv1.Equivalent
	side := admissionregistrationv1.SideEffectClassNoneOnDryRun
	reinvoke := admissionregistrationv1.IfNeededReinvocationPolicy
	scope := admissionregistrationv1.NamespacedScope
	timeout := int32(5)
	var conditions []admissionregistrationv1.MatchCondition
	for _, m := range p.MatchConditions() {
		conditions = append(conditions, admissionregistrationv1.MatchCondition{Name: m.Name, Expression: m.Expression})
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "claimbridge"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "pods.claimbridge.io",
			AdmissionReviewVersions: []string{"v1"},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope}}},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: api.LabelMode, Operator: metav1.LabelSelectorOpIn, Values: []string{string(api.ModeEnforce), string(api.ModeAudit)}},
				{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{metav1.NamespaceSystem, ownNamespace}},
			}},
			MatchConditions:    conditions,
			FailurePolicy:      &failure,
			MatchPolicy:        &match,
			SideEffects:        &side,
			TimeoutSeconds:     &timeout,
			ReinvocationPolicy: &reinvoke,
		}},
	}
}
