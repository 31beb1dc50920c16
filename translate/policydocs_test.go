package translate

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPolicyReferenceLoads: the policies and policy fragments the reference
// pages show (docs/reference/*.md) are ones LoadPolicy accepts, so that the
// documented fields and values are the real ones.
func TestPolicyReferenceLoads(t *testing.T) {
	pages, err := filepath.Glob("../docs/reference/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no page in docs/reference")
	}
	yamlBlock := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	found := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range yamlBlock.FindAllStringSubmatch(string(data), -1) {
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
				t.Errorf("%s: the policy does not load: %v\n%s", filepath.Base(page), err, b[1])
			}
		}
	}
	if found < 4 {
		t.Fatalf("the reference shows %d policies and fragments, want the policy, schedulers, kueue and capacities", found)
	}
}

const policyHeader = "apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nmetadata:\n  name: reference\nspec:\n"
