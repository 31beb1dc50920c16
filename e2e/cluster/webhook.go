package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ModeLabel is the namespace label that opts a namespace into claimbridge.
const ModeLabel = "claimbridge.io/mode"

// Webhook describes the MutatingWebhookConfiguration of a claimbridge webhook. Until the Helm
// chart renders it, this is the reference: the same settings the chart will use.
type Webhook struct {
	// Name of the MutatingWebhookConfiguration and, with ".claimbridge.io" appended unless
	// it already contains a dot, of its single webhook. Required.
	Name string
	// URL the apiserver calls, e.g. https://127.0.0.1:<port>/mutate-pods. Required.
	URL string
	// CABundle verifies the webhook's serving certificate (see IssueServingCert). Required.
	CABundle []byte
	// OwnNamespace is the namespace the webhook runs in; it is excluded like kube-system.
	// Default: claimbridge-system.
	OwnNamespace string
	// FailurePolicy. Default: Ignore (never lose a workload because the webhook is down).
	FailurePolicy admissionregistrationv1.FailurePolicyType
	// NamespaceSelector replaces the default: namespaces labelled claimbridge.io/mode
	// enforce or audit, never kube-system or OwnNamespace.
	NamespaceSelector *metav1.LabelSelector
	// TimeoutSeconds. Default: 5.
	TimeoutSeconds int32
}

// MutatingWebhookConfiguration renders w: pods, CREATE only, sideEffects NoneOnDryRun,
// matchPolicy Equivalent, reinvocationPolicy IfNeeded, admissionReviewVersions v1.
func (w Webhook) MutatingWebhookConfiguration() (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	switch {
	case w.Name == "":
		return nil, errors.New("webhook name is required")
	case w.URL == "":
		return nil, errors.New("webhook URL is required")
	case len(w.CABundle) == 0:
		return nil, errors.New("webhook CA bundle is required")
	}
	ownNamespace := w.OwnNamespace
	if ownNamespace == "" {
		ownNamespace = "claimbridge-system"
	}
	failurePolicy := w.FailurePolicy
	if failurePolicy == "" {
		failurePolicy = admissionregistrationv1.Ignore
	}
	timeout := w.TimeoutSeconds
	if timeout == 0 {
		timeout = 5
	}
	selector := w.NamespaceSelector
	if selector == nil {
		selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: ModeLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"enforce", "audit"}},
			{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{metav1.NamespaceSystem, ownNamespace}},
		}}
	}
	hookName := w.Name
	if !strings.Contains(hookName, ".") {
		hookName += ".claimbridge.io"
	}
	sideEffects := admissionregistrationv1.SideEffectClassNoneOnDryRun
	matchPolicy := admissionregistrationv1.Equivalent
	reinvocation := admissionregistrationv1.IfNeededReinvocationPolicy
	scope := admissionregistrationv1.NamespacedScope
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    hookName,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: new(w.URL), CABundle: w.CABundle},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope}}},
			FailurePolicy:           &failurePolicy,
			MatchPolicy:             &matchPolicy,
			NamespaceSelector:       selector,
			SideEffects:             &sideEffects,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      &reinvocation,
		}},
	}, nil
}

// InstallWebhook creates the webhook's configuration, or replaces one of the same name. The
// apiserver picks it up from its informer a moment later: a test should poll (for example with
// server-side dry-run creates) until the webhook's effect shows before relying on it.
func (c *Cluster) InstallWebhook(ctx context.Context, w Webhook) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	cfg, err := w.MutatingWebhookConfiguration()
	if err != nil {
		return nil, err
	}
	return c.ApplyWebhookConfiguration(ctx, cfg)
}

// RemoveWebhook deletes a webhook configuration; a missing one is not an error.
func (c *Cluster) RemoveWebhook(ctx context.Context, name string) error {
	err := c.Client().AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete webhook configuration %s: %w", name, err)
	}
	return nil
}
