package webhook

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/reason"
)

// ensureTemplate makes sure the template exists with this spec: the cache
// answers for templates that exist; otherwise it is created (AlreadyExists
// from a concurrent replica is success once the specs agree). A template of
// that name with another spec, or not made by claimbridge, is a conflict:
// the pod then stays legacy. A template this replica created or found
// equal a moment ago answers until the cache has it, so the pods of a
// burst after the first do not each call the API while the informer
// catches up.
func (h *PodHandler) ensureTemplate(ctx context.Context, t *resourceapi.ResourceClaimTemplate) *reason.Reason {
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
	now := h.now()
	ensured := t.Namespace + "/" + t.Name
	if _, ok := h.templates.ensured.get(ensured, now, ensuredTTL); ok {
		return nil
	}
	// The admissions of a burst that ask for the same template at once
	// wait for one of them to ensure it. Its name is the hash of its spec,
	// so theirs are the same.
	v, _, _ := h.templates.group.Do(ensured, func() (any, error) {
		// An admission that missed the memo just before another's call
		// ended and filled it comes here after that call: it reads the memo
		// again rather than create the template a second time.
		if _, ok := h.templates.ensured.get(ensured, now, ensuredTTL); ok {
			return (*reason.Reason)(nil), nil
		}
		r := h.createTemplate(context.WithoutCancel(ctx), t)
		if r == nil {
			h.templates.ensured.put(ensured, struct{}{}, now, maxVerified)
		}
		return r, nil
	})
	return v.(*reason.Reason)
}

// createTemplate creates t through the API; AlreadyExists is success when
// the one that exists is claimbridge's with the same spec.
func (h *PodHandler) createTemplate(ctx context.Context, t *resourceapi.ResourceClaimTemplate) *reason.Reason {
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	err := h.Templates.Create(ctx, t)
	if err == nil {
		if h.Metrics != nil {
			h.Metrics.TemplatesCreated.Inc()
		}
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return &reason.Reason{Code: explain.ReasonTemplateError, Severity: reason.SeverityWarning,
			Message: fmt.Sprintf("cannot create ResourceClaimTemplate %s/%s: %v; the pod stays as submitted", t.Namespace, t.Name, err)}
	}
	have, err := h.Templates.Get(ctx, t.Namespace, t.Name)
	if err != nil {
		return &reason.Reason{Code: explain.ReasonTemplateError, Severity: reason.SeverityWarning,
			Message: fmt.Sprintf("cannot read ResourceClaimTemplate %s/%s: %v; the pod stays as submitted", t.Namespace, t.Name, err)}
	}
	return conflict(have, t)
}

func conflict(have, want *resourceapi.ResourceClaimTemplate) *reason.Reason {
	if have.Labels[api.LabelManagedBy] == api.ManagedByValue && equality.Semantic.DeepEqual(have.Spec.Spec, want.Spec.Spec) {
		return nil
	}
	return &reason.Reason{Code: explain.ReasonTemplateConflict, Severity: reason.SeverityWarning,
		Message: fmt.Sprintf("ResourceClaimTemplate %s/%s exists with another spec or was not created by claimbridge; the pod stays as submitted", want.Namespace, want.Name)}
}

// verifiedTemplates remembers "<namespace>/<name>@<resourceVersion>" of
// cached templates already compared with the spec their name stands for,
// and "<namespace>/<name>" of templates this replica ensured through the
// API, with when (bounded: each emptied when it reaches maxVerified). A
// template's name is the hash of its spec, so the name stands for the
// spec.
type verifiedTemplates struct {
	group   singleflight.Group
	mu      sync.Mutex
	keys    map[string]bool
	ensured recent[struct{}]
}

const maxVerified = 8192

// ensuredTTL is how long a template ensured through the API answers
// without the cache: the informer has it within a moment, and a template
// deleted since is then the cache's to tell (and the template
// controller's to recreate).
const ensuredTTL = 10 * time.Second

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
