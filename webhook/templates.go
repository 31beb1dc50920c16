package webhook

import (
	"context"
	"fmt"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/translate"
)

// ensureTemplate makes sure the template exists with this spec: the cache
// answers for templates that exist; otherwise it is created (AlreadyExists
// from a concurrent replica is success once the specs agree). A template of
// that name with another spec, or not made by claimbridge, is a conflict:
// the pod then stays legacy.
func (h *PodHandler) ensureTemplate(ctx context.Context, t *resourceapi.ResourceClaimTemplate) *translate.Reason {
	if h.Recent != nil {
		h.Recent.Remember(t)
	}
	if have, ok := h.Inventory.Template(t.Namespace, t.Name); ok {
		key := have.Namespace + "/" + have.Name + "@" + have.ResourceVersion
		if have.ResourceVersion != "" && h.templates.verified(key) {
			return nil
		}
		r := conflict(have, t)
		if r == nil {
			h.templates.mark(key)
		}
		return r
	}
	err := h.Templates.Create(ctx, t)
	if err == nil {
		if h.Metrics != nil {
			h.Metrics.TemplatesCreated.Inc()
		}
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return &translate.Reason{Code: explain.ReasonTemplateError, Severity: translate.SeverityWarning,
			Message: fmt.Sprintf("cannot create ResourceClaimTemplate %s/%s: %v; the pod stays as submitted", t.Namespace, t.Name, err)}
	}
	have, err := h.Templates.Get(ctx, t.Namespace, t.Name)
	if err != nil {
		return &translate.Reason{Code: explain.ReasonTemplateError, Severity: translate.SeverityWarning,
			Message: fmt.Sprintf("cannot read ResourceClaimTemplate %s/%s: %v; the pod stays as submitted", t.Namespace, t.Name, err)}
	}
	return conflict(have, t)
}

func conflict(have, want *resourceapi.ResourceClaimTemplate) *translate.Reason {
	if have.Labels[api.LabelManagedBy] == api.ManagedByValue && equality.Semantic.DeepEqual(have.Spec.Spec, want.Spec.Spec) {
		return nil
	}
	return &translate.Reason{Code: explain.ReasonTemplateConflict, Severity: translate.SeverityWarning,
		Message: fmt.Sprintf("ResourceClaimTemplate %s/%s exists with another spec or was not created by claimbridge; the pod stays as submitted", want.Namespace, want.Name)}
}

// verifiedTemplates remembers "<namespace>/<name>@<resourceVersion>" of
// cached templates already compared with the spec their name stands for
// (bounded: emptied when it reaches maxVerified).
type verifiedTemplates struct {
	mu   sync.Mutex
	keys map[string]bool
}

const maxVerified = 8192

func (v *verifiedTemplates) verified(key string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.keys[key]
}

func (v *verifiedTemplates) mark(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.keys == nil || len(v.keys) >= maxVerified {
		v.keys = map[string]bool{}
	}
	v.keys[key] = true
}
