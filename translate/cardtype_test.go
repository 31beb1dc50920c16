package translate

import (
	"slices"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// hamiCheckType is HAMi's card-type test (Project-HAMi/HAMi
// pkg/device/devices.go, CheckType, commit 4707fb02) over a card's type,
// copied in its logic to hold the generated selector to it.
func hamiCheckType(annos map[string]string, cardType, useKey, noUseKey string) bool {
	cardType = strings.ToUpper(cardType)
	match := func(list string) bool {
		return slices.ContainsFunc(strings.Split(list, ","), func(t string) bool {
			t = strings.TrimSpace(t)
			return t != "" && strings.Contains(cardType, strings.ToUpper(t))
		})
	}
	if inuse, ok := annos[useKey]; ok && strings.TrimSpace(inuse) != "" && !match(inuse) {
		return false
	}
	if noUse, ok := annos[noUseKey]; ok && strings.TrimSpace(noUse) != "" && match(noUse) {
		return false
	}
	return true
}

// hamiNVIDIAType is the type HAMi registers for an NVIDIA card of this NVML
// name (pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go).
func hamiNVIDIAType(name string) string {
	if !strings.HasPrefix(name, "NVIDIA") {
		return "NVIDIA-" + name
	}
	return name
}

// TestCardTypeSelectorIsHAMisCheckType: on every pair of annotations and
// NVML names below, the selector translation generates admits a device
// exactly when HAMi's scheduler admits the card (issue 27, item 6).
func TestCardTypeSelectorIsHAMisCheckType(t *testing.T) {
	rule := &v1alpha1.CardTypeRule{Use: "nvidia.com/use-gputype", NoUse: "nvidia.com/nouse-gputype", Attribute: "gpu.nvidia.com/productName", Prefix: "NVIDIA"}
	names := []string{"NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3", "Tesla T4", "NVIDIA L4", "NVIDIA L40S",
		"NVIDIA GeForce RTX 4090", "NVIDIA GeForce GTX 1080 Ti", "Tesla V100-SXM2-16GB", "NVIDIA RTX A6000"}
	annotations := []map[string]string{
		{"nvidia.com/use-gputype": "A100,V100"},
		{"nvidia.com/use-gputype": "a100"},
		{"nvidia.com/use-gputype": " t4 , "},
		{"nvidia.com/nouse-gputype": "1080,2080"},
		{"nvidia.com/nouse-gputype": "l4"},
		{"nvidia.com/use-gputype": "A100", "nvidia.com/nouse-gputype": "40GB"},
		{"nvidia.com/use-gputype": "NVIDIA-Tesla"},
		{"nvidia.com/use-gputype": "nvidia-a100"},
		{"nvidia.com/use-gputype": "RTX", "nvidia.com/nouse-gputype": "GeForce"},
		{"nvidia.com/use-gputype": "NVIDIA"},
	}
	for _, ann := range annotations {
		use, noUse := cardTypeEntries(ann[rule.Use]), cardTypeEntries(ann[rule.NoUse])
		expr, err := celgen.CardType(rule, use, noUse)
		if err != nil {
			t.Fatalf("%v: %v", ann, err)
		}
		for _, name := range names {
			want := hamiCheckType(ann, hamiNVIDIAType(name), rule.Use, rule.NoUse)
			got := matches(t, expr, device{driver: "gpu.nvidia.com", attrs: map[string]any{"productName": name}})
			if got != want {
				t.Errorf("%v on %q: selector says %v, HAMi %v\n%s", ann, name, got, want, expr)
			}
		}
	}
	// A device without the attribute is not admitted (HAMi knows every
	// card's type).
	expr, err := celgen.CardType(rule, []string{"A100"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if matches(t, expr, device{driver: "gpu.nvidia.com", attrs: map[string]any{"type": "gpu"}}) {
		t.Errorf("a device without productName is admitted")
	}
}
