package inventory

import (
	"sync"

	resourceapi "k8s.io/api/resource/v1"
)

// RecentTemplates remembers the specs of templates admission asked for, by
// name. Names are content hashes, so a spec found under a name in any
// namespace is the spec of that name everywhere.
type RecentTemplates struct {
	// Max entries. Default 4096.
	Max int

	mu    sync.Mutex
	specs map[string]resourceapi.ResourceClaimTemplateSpec
	order []string
}

// Remember records a template's spec.
func (r *RecentTemplates) Remember(t *resourceapi.ResourceClaimTemplate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.specs == nil {
		r.specs = map[string]resourceapi.ResourceClaimTemplateSpec{}
	}
	if _, ok := r.specs[t.Name]; ok {
		return
	}
	maxN := r.Max
	if maxN <= 0 {
		maxN = 4096
	}
	if len(r.order) >= maxN {
		delete(r.specs, r.order[0])
		r.order = r.order[1:]
	}
	r.specs[t.Name] = *t.Spec.DeepCopy()
	r.order = append(r.order, t.Name)
}

// Spec returns a remembered spec.
func (r *RecentTemplates) Spec(name string) (resourceapi.ResourceClaimTemplateSpec, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.specs[name]
	return *s.DeepCopy(), ok
}
