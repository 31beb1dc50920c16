package v1alpha1

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/podfacts"
)

// DecodePlatform reads and validates one Platform document from YAML or
// JSON. Unknown and duplicate fields are rejected; every error carries its
// field path.
func DecodePlatform(data []byte) (*Platform, error) {
	var p Platform
	if err := decodeStrict(data, &p); err != nil {
		return nil, fmt.Errorf("decode platform: %w", err)
	}
	if errs := ValidatePlatform(&p); len(errs) > 0 {
		return nil, fmt.Errorf("invalid platform: %w", errs.ToAggregate())
	}
	return &p, nil
}

// ValidatePlatform checks a Platform document.
func ValidatePlatform(p *Platform) field.ErrorList {
	var errs field.ErrorList
	if p.APIVersion != PolicyAPIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), p.APIVersion, []string{PolicyAPIVersion}))
	}
	if p.Kind != PlatformKind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), p.Kind, []string{PlatformKind}))
	}
	spec := field.NewPath("spec")
	for i, name := range p.Spec.Presets {
		if !slices.Contains(PlatformPresets(), name) {
			errs = append(errs, field.NotSupported(spec.Child("presets").Index(i), name, PlatformPresets()))
		}
	}
	if v := p.Spec.Kubernetes; v != "" {
		if _, err := KubernetesMinor(v); err != nil {
			errs = append(errs, field.Invalid(spec.Child("kubernetes"), v, err.Error()))
		}
	}
	families := map[string]bool{}
	for i := range p.Spec.Drivers {
		d := &p.Spec.Drivers[i]
		dp := spec.Child("drivers").Index(i)
		if families[d.Family] {
			errs = append(errs, field.Duplicate(dp.Child("family"), d.Family))
		}
		families[d.Family] = true
		errs = append(errs, validateDriverPlatform(dp, d)...)
	}
	for i := range p.Spec.Pools {
		errs = append(errs, validatePoolPlatform(spec.Child("pools").Index(i), &p.Spec.Pools[i])...)
	}
	return errs
}

func validateDriverPlatform(p *field.Path, d *DriverPlatform) field.ErrorList {
	var errs field.ErrorList
	if d.Family == "" {
		errs = append(errs, field.Required(p.Child("family"), "the device family of the policy's rules the driver serves"))
	} else {
		errs = append(errs, validateDNSLabel(p.Child("family"), d.Family)...)
	}
	if d.Install != "" && !slices.Contains(InstallPaths(), d.Install) {
		errs = append(errs, field.NotSupported(p.Child("install"), d.Install, InstallPaths()))
	}
	if _, _, err := ParseConsumableShares(d.ConsumableShares); err != nil {
		errs = append(errs, field.Invalid(p.Child("consumableShares"), d.ConsumableShares, err.Error()))
	}
	for i, c := range d.Classes {
		cp := p.Child("classes").Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(cp.Child("name"), ""))
		}
		for _, msg := range validation.IsDNS1123Subdomain(c.Name) {
			errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
		}
		if r := c.ExtendedResourceName; r != "" && (!podfacts.IsExtendedResource(corev1.ResourceName(r)) || len(validation.IsQualifiedName(r)) > 0) {
			errs = append(errs, field.Invalid(cp.Child("extendedResourceName"), r, "not an extended resource name (a domain-prefixed name outside kubernetes.io, e.g. nvidia.com/gpu)"))
		}
	}
	return errs
}

func validatePoolPlatform(p *field.Path, pool *PoolPlatform) field.ErrorList {
	var errs field.ErrorList
	if pool.Label == "" {
		errs = append(errs, field.Required(p.Child("label"), "the node-label key whose value names the pool"))
	}
	for _, msg := range validation.IsQualifiedName(pool.Label) {
		errs = append(errs, field.Invalid(p.Child("label"), pool.Label, msg))
	}
	if pool.Name != "" {
		for _, msg := range validation.IsValidLabelValue(pool.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), pool.Name, msg))
		}
	}
	kinds := []AutoscalerKind{AutoscalerNone, AutoscalerKarpenter, AutoscalerClusterAutoscaler, AutoscalerGKE}
	if !slices.Contains(kinds, pool.Autoscaler) {
		errs = append(errs, field.NotSupported(p.Child("autoscaler"), pool.Autoscaler, kinds))
	}
	if pool.DRA != nil && (pool.Autoscaler == AutoscalerGKE || pool.Autoscaler == AutoscalerNone) {
		errs = append(errs, field.Forbidden(p.Child("dra"), "only Karpenter and the Cluster Autoscaler have a DRA setting"))
	}
	if pool.Provider != "" && pool.Autoscaler != AutoscalerClusterAutoscaler {
		errs = append(errs, field.Forbidden(p.Child("provider"), "only the Cluster Autoscaler has a cloud provider"))
	}
	if pool.MinNodes != nil && *pool.MinNodes < 0 {
		errs = append(errs, field.Invalid(p.Child("minNodes"), *pool.MinNodes, "must be 0 or more"))
	}
	return errs
}

// Consumable-shares modes (DriverPlatform.ConsumableShares): a whole
// number of shares per GPU is mode SharesCount.
const (
	SharesDisabled  = "disabled"
	SharesMemory    = "memory"
	SharesUnlimited = "unlimited"
	SharesCount     = "shares"
)

// ParseConsumableShares reads --consumable-shares as the NVIDIA DRA driver
// does (kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/main.go,
// validateFlags): "disabled", "memory", "unlimited" or a positive integer
// n (mode SharesCount); "" is disabled, its default.
func ParseConsumableShares(s string) (mode string, n int, err error) {
	switch s {
	case "", SharesDisabled:
		return SharesDisabled, 0, nil
	case SharesMemory, SharesUnlimited:
		return s, 0, nil
	}
	n, err = strconv.Atoi(s)
	if err != nil || n <= 0 {
		return "", 0, fmt.Errorf("must be disabled, memory, unlimited or a positive integer")
	}
	return SharesCount, n, nil
}

// KubernetesMinor reads "1.37" or "1.37.2" (a leading "v" allowed) as its
// minor version, 37.
func KubernetesMinor(v string) (int, error) {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) < 2 || parts[0] != "1" {
		return 0, fmt.Errorf("not a Kubernetes version of the form 1.N or 1.N.P")
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil || minor < 0 {
		return 0, fmt.Errorf("not a Kubernetes version of the form 1.N or 1.N.P")
	}
	return minor, nil
}
