package translate

import "github.com/claimbridge/claimbridge/api/v1alpha1"

// LoadPolicy decodes and validates one TranslationPolicy document. Unknown
// fields are rejected; every error carries a field path.
func LoadPolicy(data []byte) (*Policy, error) {
	tp, err := v1alpha1.Decode(data)
	if err != nil {
		return nil, err
	}
	return NewPolicy(tp)
}

// NewPolicy validates a TranslationPolicy and compiles it, with the rules of
// its profiles included.
func NewPolicy(tp *v1alpha1.TranslationPolicy) (*Policy, error) {
	return newPolicy(tp, v1alpha1.Resolve)
}

// newPolicy is NewPolicy with the rules resolve gives (Resolve, or
// ResolveRules for the default policy, which names every profile
// for its rules alone).
func newPolicy(tp *v1alpha1.TranslationPolicy, resolve func(*v1alpha1.TranslationPolicy) (v1alpha1.PolicySpec, error)) (*Policy, error) {
	merged, err := resolve(tp)
	if err != nil {
		return nil, err
	}
	name := tp.Metadata.Name
	if name == "" {
		name = "unnamed"
	}
	return compilePolicy(name, merged), nil
}
