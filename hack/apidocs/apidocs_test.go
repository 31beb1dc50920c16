package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/claimbridge/claimbridge/internal/testing/golden"
)

const root = "../.."

// TestPagesAreTheComments: the field reference of docs/reference/policy.md
// is what the comments of api/v1alpha1 say, and docs/reference/labels.md
// lists the keys of api with the values and comments the code gives them.
// A comment, a field or a key changed without go run ./hack/apidocs fails
// here; go test ./hack/apidocs -update rewrites the pages as well.
func TestPagesAreTheComments(t *testing.T) {
	s, err := loadSite(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		block, _ := p.render(s)
		page, err := readPage(root, p.page)
		if err != nil {
			t.Fatal(err)
		}
		want, err := splice(page, p, block)
		if err != nil {
			t.Fatal(err)
		}
		if want == page {
			continue
		}
		if golden.Updating() {
			if err := run(root); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s is not what the comments say (-want,+got); run %s:\n%s", p.page, command, cmp.Diff(want, page))
	}
}

// TestNothingIsLeftOut: every field of every type of the policy has a
// comment, and every doc link of those comments names something a reader
// can see; every exported struct type of api/v1alpha1 is part of the
// document (reached from TranslationPolicy), so that it has a section;
// every key of api is in a block titled by what it is on, with a comment
// of its own.
func TestNothingIsLeftOut(t *testing.T) {
	s, err := loadSite(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		_, probs := p.render(s)
		for _, problem := range probs {
			t.Errorf("%s: %s", p.page, problem)
		}
	}
	for name := range s.policy.structs {
		if !s.policyTypes[name] {
			t.Errorf("api/v1alpha1 type %s is not reached from %s: it has no section in %s", name, policyRoot, policyPage)
		}
	}
	if len(s.policyTypes) < 20 {
		t.Errorf("%d sections in %s; the walk from %s lost types", len(s.policyTypes), policyPage, policyRoot)
	}
}

// notValues are the constants of api that are neither a key nor the value
// of one, each with where it is used instead.
var notValues = map[string]string{
	"GroupVersion":   "the apiVersion of the TranslationPolicy and the AuditReport",
	"ClaimName":      "the claim entry of a translated pod",
	"TemplatePrefix": "the start of a template's name",
	"Prefix":         "the start of every key",
}

// TestEveryKeyAndValueIsListed: every constant of api is a key with a
// section in docs/reference/labels.md, the value of one listed under it,
// or one of notValues; every claimbridge.io/ key is named as a key is
// (Label…, Annotation…); and the keys whose values are declared have them.
func TestEveryKeyAndValueIsListed(t *testing.T) {
	s, err := loadSite(root)
	if err != nil {
		t.Fatal(err)
	}
	groups, _ := keyGroups(s)
	listed := map[string]bool{}
	for _, g := range groups {
		for _, k := range g.keys {
			listed[k.name] = true
			for _, v := range k.values {
				if v.pkg == s.keys {
					listed[v.name] = true
				}
			}
		}
	}
	for name, value := range s.keys.consts {
		if _, ok := notValues[name]; ok {
			continue
		}
		if strings.HasPrefix(value, "claimbridge.io/") && !isKey(name, value) {
			t.Errorf("api.%s = %q looks like a key but is not named Label… or Annotation…", name, value)
		}
		if !listed[name] {
			t.Errorf("api.%s (%q) is neither a key nor the value of one on %s: name the key in the comment of its block, its type or itself", name, value, labelsPage)
		}
	}
	values := map[string][]string{}
	for _, g := range groups {
		for _, k := range g.keys {
			for _, v := range k.values {
				values[k.value] = append(values[k.value], v.pkg.consts[v.name])
			}
		}
	}
	want := map[string][]string{
		"claimbridge.io/mode":          {"enforce", "audit", "off"},
		"claimbridge.io/when-dra-busy": {"KeepLegacy", "Wait"},
		"claimbridge.io/on-unservable": {"Admit", "Deny"},
		"claimbridge.io/repair":        {"Recreate"},
		"claimbridge.io/decision":      {"Translated", "WouldTranslate", "KeptLegacy", "Skipped"},
		"app.kubernetes.io/managed-by": {"claimbridge"},
	}
	for k, w := range want {
		if got := values[k]; !slices.Equal(got, w) {
			t.Errorf("values of %s (-want,+got):\n%s", k, cmp.Diff(w, got))
		}
	}
}
