package translate

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEPolicyLoads: the policy the README shows is one LoadPolicy
// accepts, so that the documented fields and values are the real ones.
func TestREADMEPolicyLoads(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(data), -1)
	found := 0
	for _, b := range blocks {
		doc := b[1]
		switch {
		case strings.Contains(doc, "kind: TranslationPolicy"):
		case strings.HasPrefix(doc, "  - name:"):
			// A fragment of spec.resources, with the profiles it refers to.
			doc = policyHeader + "  profiles: [nvidia]\n  resources:\n" + doc
		case strings.HasPrefix(doc, "  ") && !strings.HasPrefix(doc, "  -"):
			// A fragment of spec.
			doc = policyHeader + "  profiles: [nvidia]\n" + doc
		default:
			continue
		}
		found++
		if _, err := LoadPolicy([]byte(doc)); err != nil {
			t.Errorf("the README's policy does not load: %v\n%s", err, b[1])
		}
	}
	if found < 4 {
		t.Fatalf("the README shows %d policies and fragments, want the policy, schedulers, kueue and capacities", found)
	}
}

const policyHeader = "apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nmetadata:\n  name: readme\nspec:\n"
