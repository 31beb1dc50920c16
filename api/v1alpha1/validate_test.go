package v1alpha1

import (
	"strings"
	"testing"
)

// TestCardTypeRuleValidation: cardType needs its annotation and attribute,
// and belongs to device-count rules.
func TestCardTypeRuleValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		rule     ResourceRule
		wantErrs []string
	}{
		"a complete rule is valid": {
			rule: ResourceRule{Name: "nvidia.com/gpu", Family: "nvidia-gpu", DeviceClassName: "gpu.nvidia.com",
				CardType: &CardTypeRule{Use: "nvidia.com/use-gputype", Attribute: "gpu.nvidia.com/productName", Prefix: "NVIDIA"}},
		},
		"use and attribute are required": {
			rule:     ResourceRule{Name: "nvidia.com/gpu", Family: "nvidia-gpu", DeviceClassName: "gpu.nvidia.com", CardType: &CardTypeRule{}},
			wantErrs: []string{"cardType.use: Required value", "cardType.attribute: Required value"},
		},
		"a capacityOf rule takes none": {
			rule:     ResourceRule{Name: "nvidia.com/gpumem", CapacityOf: "nvidia.com/gpu", Capacity: "memory", CardType: &CardTypeRule{Use: "nvidia.com/use-gputype", Attribute: "gpu.nvidia.com/productName"}},
			wantErrs: []string{"cardType: Forbidden"},
		},
		"the annotation is a qualified name": {
			rule: ResourceRule{Name: "nvidia.com/gpu", Family: "nvidia-gpu", DeviceClassName: "gpu.nvidia.com",
				CardType: &CardTypeRule{Use: "use gpu type", Attribute: "gpu.nvidia.com/productName"}},
			wantErrs: []string{"cardType.use: Invalid value"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			errs := validateResourceRule(nil, &tc.rule)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if len(got) != len(tc.wantErrs) {
				t.Fatalf("errors %q, want %d matching %q", got, len(tc.wantErrs), tc.wantErrs)
			}
			for i, w := range tc.wantErrs {
				if !strings.Contains(got[i], w) {
					t.Errorf("error %d is %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}
