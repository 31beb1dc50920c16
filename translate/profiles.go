package translate

import (
	"maps"
	"slices"
	"strings"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// DefaultPolicy is the policy used when none is given: every built-in
// profile except the opt-in ones ([DefaultProfileNames]), for their rules.
// It says nothing about the target cluster's admission: implicitTolerations
// is unset, although the gke and tpu profiles turn it on when a policy names
// them (most clusters do not run ExtendedResourceToleration, and a toleration
// they would not add lets a pod onto nodes tainted for its devices); a pod
// that requires a label only GKE nodes carry still tells
// ([Policy.RunsExtendedResourceToleration]).
func DefaultPolicy() *Policy {
	names := v1alpha1.DefaultProfileNames()
	p, err := newPolicy(&v1alpha1.TranslationPolicy{
		APIVersion: v1alpha1.PolicyAPIVersion,
		Kind:       v1alpha1.PolicyKind,
		Metadata:   v1alpha1.PolicyMetadata{Name: "profiles:" + strings.Join(names, ",")},
		Spec:       v1alpha1.PolicySpec{Profiles: names},
	}, v1alpha1.ResolveRules)
	if err != nil {
		panic(err) // the built-in profiles are tested
	}
	return p
}

// ProfilePolicy is a policy made of the named built-in profiles.
func ProfilePolicy(names ...string) (*Policy, error) {
	return NewPolicy(&v1alpha1.TranslationPolicy{
		APIVersion: v1alpha1.PolicyAPIVersion,
		Kind:       v1alpha1.PolicyKind,
		Metadata:   v1alpha1.PolicyMetadata{Name: "profiles:" + strings.Join(names, ",")},
		Spec:       v1alpha1.PolicySpec{Profiles: names},
	})
}

// Policy is a validated, compiled TranslationPolicy, safe for concurrent use.
type Policy struct {
	name     string
	spec     v1alpha1.PolicySpec
	exact    map[string]*v1alpha1.ResourceRule
	patterns []*v1alpha1.ResourceRule // longest prefix first
	labels   []*v1alpha1.NodeLabelRule
	byKey    map[string][]*v1alpha1.NodeLabelRule // exact keys, in rule order
	wild     []*v1alpha1.NodeLabelRule            // keys with "*"
	cel      *celgen.Checker
	convs    *convMemo
	// fingerprint identifies the effective rules (see Fingerprint).
	fingerprint string
}

func compilePolicy(name string, spec v1alpha1.PolicySpec) *Policy {
	p := &Policy{name: name, spec: spec, exact: map[string]*v1alpha1.ResourceRule{}, cel: &celgen.Checker{}, convs: &convMemo{}, fingerprint: specFingerprint(&spec)}
	for i := range p.spec.Resources {
		r := &p.spec.Resources[i]
		if strings.HasSuffix(r.Name, "*") {
			p.patterns = slices.DeleteFunc(p.patterns, func(o *v1alpha1.ResourceRule) bool { return o.Name == r.Name })
			p.patterns = append(p.patterns, r)
			continue
		}
		p.exact[r.Name] = r // a later rule wins
	}
	slices.SortStableFunc(p.patterns, func(a, b *v1alpha1.ResourceRule) int { return len(b.Name) - len(a.Name) })
	p.byKey = map[string][]*v1alpha1.NodeLabelRule{}
	for i := range p.spec.NodeLabels {
		r := &p.spec.NodeLabels[i]
		p.labels = append(p.labels, r)
		if strings.Contains(r.Key, "*") {
			p.wild = append(p.wild, r)
		} else {
			p.byKey[r.Key] = append(p.byKey[r.Key], r)
		}
	}
	return p
}

// WithKueueMappings returns the policy with these deviceClassMappings added
// to its kueue rule (those of a Kueue Configuration, for `--kueue-config`).
// The policy itself is not changed.
func (p *Policy) WithKueueMappings(m []v1alpha1.KueueDeviceClassMapping) *Policy {
	if len(m) == 0 {
		return p
	}
	spec := p.spec
	spec.Kueue.DeviceClassMappings = append(slices.Clone(spec.Kueue.DeviceClassMappings), m...)
	return compilePolicy(p.name, spec)
}

// Name of the policy (metadata.name).
func (p *Policy) Name() string { return p.name }

// Spec returns the effective rules: those of the included profiles followed
// by the policy's own.
func (p *Policy) Spec() v1alpha1.PolicySpec { return p.spec }

// AutoscaledPoolLabels are the node-label keys that put a node in a pool
// an autoscaler grows for Pending pods without provisioning for claims
// (autoscaling.poolLabels, else karpenter.sh/nodepool); none when the
// policy says the autoscalers provision for claims (autoscaling.draAware).
func (p *Policy) AutoscaledPoolLabels() []string {
	a := p.spec.Autoscaling
	switch {
	case a.DRAAware:
		return nil
	case len(a.PoolLabels) > 0:
		return a.PoolLabels
	}
	return []string{v1alpha1.KarpenterNodePoolLabel}
}

// Families returns the device families the policy maps, sorted.
func (p *Policy) Families() []string {
	set := map[string]bool{}
	for _, r := range p.spec.Resources {
		set[r.Family] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// resourceRule finds the rule for an extended resource: an exact rule first,
// then the pattern with the longest prefix. suffix is what "*" matched.
func (p *Policy) resourceRule(name string) (rule *v1alpha1.ResourceRule, suffix string, ok bool) {
	if r, ok := p.exact[name]; ok {
		return r, "", true
	}
	for _, r := range p.patterns {
		base := strings.TrimSuffix(r.Name, "*")
		if s, ok := strings.CutPrefix(name, base); ok && s != "" {
			return r, s, true
		}
	}
	return nil, "", false
}

// labelRule finds the last rule for a label key that serves family. The
// key of a rule may hold one "*"; wildcard is what it matched.
func (p *Policy) labelRule(key, family string) (rule *v1alpha1.NodeLabelRule, wildcard string, ok bool) {
	// The last rule wins; exact keys and patterns compete by rule order.
	best, bestIdx := (*v1alpha1.NodeLabelRule)(nil), -1
	exact := p.byKey[key]
	for i := len(exact) - 1; i >= 0; i-- {
		if slices.Contains(exact[i].Families, family) {
			best, bestIdx = exact[i], slices.Index(p.labels, exact[i])
			break
		}
	}
	for i := len(p.wild) - 1; i >= 0; i-- {
		r := p.wild[i]
		if !slices.Contains(r.Families, family) {
			continue
		}
		if w, ok := matchKey(r.Key, key); ok {
			if idx := slices.Index(p.labels, r); idx > bestIdx {
				return r, w, true
			}
			break
		}
	}
	return best, "", best != nil
}

// knowsLabel reports whether any rule maps the key, for any family.
func (p *Policy) knowsLabel(key string) bool {
	if len(p.byKey[key]) > 0 {
		return true
	}
	for _, r := range p.wild {
		if _, ok := matchKey(r.Key, key); ok {
			return true
		}
	}
	return false
}

func matchKey(pattern, key string) (string, bool) {
	before, after, wild := strings.Cut(pattern, "*")
	if !wild {
		return "", pattern == key
	}
	if len(key) < len(before)+len(after)+1 || !strings.HasPrefix(key, before) || !strings.HasSuffix(key, after) {
		return "", false
	}
	return key[len(before) : len(key)-len(after)], true
}
