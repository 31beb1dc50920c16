package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/api"
)

// claimSpec builds the claim spec: requests in pod order, all defaulted
// (ExactCount, explicit count) so the stored template equals what was hashed.
func (t *translation) claimSpec() resourceapi.ResourceClaimSpec {
	var spec resourceapi.ResourceClaimSpec
	// The selectors of all alternatives in one pair of arrays, the
	// requests and constraints in one each: a few allocations per claim
	// rather than a few per alternative.
	n := 0
	for _, r := range t.requests {
		for _, a := range r.alts {
			n += len(a.selectors)
		}
	}
	sels := newSelectorArena(n)
	spec.Devices.Requests = make([]resourceapi.DeviceRequest, 0, len(t.requests))
	for _, r := range t.requests {
		dr := resourceapi.DeviceRequest{Name: r.name}
		if len(r.alts) == 1 {
			a := r.alts[0]
			dr.Exactly = &resourceapi.ExactDeviceRequest{
				DeviceClassName: a.class,
				Selectors:       sels.take(a.selectors),
				AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
				Count:           a.count,
				Capacity:        capacityRequests(r.use, a),
			}
		} else {
			dr.FirstAvailable = make([]resourceapi.DeviceSubRequest, 0, len(r.alts))
			for _, a := range r.alts {
				dr.FirstAvailable = append(dr.FirstAvailable, resourceapi.DeviceSubRequest{
					Name:            a.name,
					DeviceClassName: a.class,
					Selectors:       sels.take(a.selectors),
					AllocationMode:  resourceapi.DeviceAllocationModeExactCount,
					Count:           a.count,
					Capacity:        capacityRequests(r.use, a),
				})
			}
		}
		spec.Devices.Requests = append(spec.Devices.Requests, dr)
		for _, c := range r.use.rule.Config {
			spec.Devices.Config = append(spec.Devices.Config, resourceapi.DeviceClaimConfiguration{
				Requests: []string{r.name},
				DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
					Driver:     c.Driver,
					Parameters: *c.Parameters.DeepCopy(),
				}},
			})
		}
	}
	if len(t.constraints) > 0 {
		spec.Devices.Constraints = make([]resourceapi.DeviceConstraint, 0, len(t.constraints))
	}
	attrs := make([]resourceapi.FullyQualifiedName, len(t.constraints))
	for i, c := range t.constraints {
		names := make([]string, 0, len(c.whole)+len(c.variants))
		for _, r := range c.whole {
			names = append(names, r.name)
		}
		if c.variantOf != nil {
			for _, v := range c.variants {
				ref := v.ref
				if ref == "" {
					ref = c.variantOf.name + "/" + v.name
				}
				names = append(names, ref)
			}
		}
		attrs[i] = resourceapi.FullyQualifiedName(c.rule.Attribute)
		spec.Devices.Constraints = append(spec.Devices.Constraints, resourceapi.DeviceConstraint{Requests: names, MatchAttribute: &attrs[i]})
	}
	return spec
}

// selectorArena hands out the CEL selectors of a claim from two arrays
// sized for all of them.
type selectorArena struct {
	sels []resourceapi.DeviceSelector
	cels []resourceapi.CELDeviceSelector
}

func newSelectorArena(n int) *selectorArena {
	if n == 0 {
		return &selectorArena{}
	}
	return &selectorArena{sels: make([]resourceapi.DeviceSelector, n), cels: make([]resourceapi.CELDeviceSelector, n)}
}

// take returns the selectors of exprs (nil for none), full to capacity so
// that an append elsewhere cannot reach the next alternative's.
func (s *selectorArena) take(exprs []string) []resourceapi.DeviceSelector {
	n := len(exprs)
	if n == 0 {
		return nil
	}
	out := s.sels[:n:n]
	for i, e := range exprs {
		s.cels[i].Expression = e
		out[i].CEL = &s.cels[i]
	}
	s.sels, s.cels = s.sels[n:], s.cels[n:]
	return out
}

// TemplateName is the content-addressed name of a template with this spec:
// a hash of its protobuf encoding, which Kubernetes generates with sorted
// map keys, so equal specs always give equal names.
func TemplateName(spec *resourceapi.ResourceClaimSpec) string {
	data, err := spec.Marshal()
	if err != nil {
		panic(err) // plain API types always marshal
	}
	sum := sha256.Sum256(data)
	return api.TemplatePrefix + hex.EncodeToString(sum[:])[:12]
}

func (t *translation) template() *resourceapi.ResourceClaimTemplate {
	spec := t.claimSpec()
	name := TemplateName(&spec)
	labels := map[string]string{api.LabelManagedBy: api.ManagedByValue}
	return &resourceapi.ResourceClaimTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.pod.Namespace, Labels: labels},
		Spec: resourceapi.ResourceClaimTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
			Spec:       spec,
		},
	}
}

// mutate returns the translated copy of the pod.
func (t *translation) mutate(tmplName string) *corev1.Pod {
	replaceConstraints := !t.p.spec.KeepTranslatedNodeLabels
	out := t.pod
	if replaceConstraints {
		// The node selector and affinity are replaced below by the
		// rewritten copies (rewriteNodeConstraints): not copied first.
		shallow := *t.pod
		shallow.Spec.NodeSelector, shallow.Spec.Affinity = nil, nil
		out = &shallow
	}
	out = out.DeepCopy()
	type slot struct {
		init bool
		idx  int
	}
	byContainer := map[slot][]*use{}
	for _, u := range append(slices.Clone(t.uses), t.companions...) {
		if u.req == nil || u.req.name == "" {
			continue
		}
		k := slot{init: u.init || u.sidecar, idx: u.idx}
		byContainer[k] = append(byContainer[k], u)
	}
	fix := func(list []corev1.Container, init bool) {
		for i := range list {
			c := &list[i]
			for _, u := range byContainer[slot{init: init, idx: i}] {
				if !u.rule.KeepInPod {
					delete(c.Resources.Limits, u.resource)
					delete(c.Resources.Requests, u.resource)
				}
				refs := []*request{u.req}
				for _, o := range u.also {
					refs = append(refs, o.req)
				}
				for _, r := range refs {
					ref := corev1.ResourceClaim{Name: api.ClaimName, Request: r.name}
					if !slices.Contains(c.Resources.Claims, ref) {
						c.Resources.Claims = append(c.Resources.Claims, ref)
					}
				}
			}
			if len(c.Resources.Limits) == 0 {
				c.Resources.Limits = nil
			}
			if len(c.Resources.Requests) == 0 {
				c.Resources.Requests = nil
			}
		}
	}
	fix(out.Spec.InitContainers, true)
	fix(out.Spec.Containers, false)
	out.Spec.ResourceClaims = append(out.Spec.ResourceClaims, corev1.PodResourceClaim{Name: api.ClaimName, ResourceClaimTemplateName: &tmplName})
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[api.AnnotationTemplate] = tmplName
	if replaceConstraints {
		out.Spec.NodeSelector = t.selectorOut
		out.Spec.Affinity = t.affinityOut
		t.explainLabels()
	}
	return out
}
