package webhook

import (
	"context"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// APITemplates is the TemplateClient on the API.
type APITemplates struct{ Client kubernetes.Interface }

// Create creates a template.
func (a APITemplates) Create(ctx context.Context, t *resourceapi.ResourceClaimTemplate) error {
	_, err := a.Client.ResourceV1().ResourceClaimTemplates(t.Namespace).Create(ctx, t, metav1.CreateOptions{})
	return err
}

// Get reads a template.
func (a APITemplates) Get(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaimTemplate, error) {
	return a.Client.ResourceV1().ResourceClaimTemplates(namespace).Get(ctx, name, metav1.GetOptions{})
}
