// Command apidocs writes the references generated from the doc comments of
// the API: the field reference of the TranslationPolicy in
// docs/reference/policy.md, from the types of api/v1alpha1, and the labels
// and annotations in docs/reference/labels.md, from the keys of api and
// the values api and api/v1alpha1 declare for them. Each is the part of its
// page between a begin and an end marker; the prose around it is written
// by hand. Run it from the repository root (go run ./hack/apidocs, or
// make apidocs) after changing a comment, a field or a key; its test fails
// when a page and the comments differ, and when a field, a type or a key
// has no comment to render.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/internal/offline"
)

// A generated part of a page.
type part struct {
	page       string // relative to the root
	begin, end string // the markers around it
	render     func(*site) (string, []string)
}

// command is what refreshes the pages.
const command = "go run ./hack/apidocs"

var parts = []part{
	{
		page:   policyPage,
		begin:  "<!-- field reference: begin (" + command + ") -->\n",
		end:    "<!-- field reference: end -->\n",
		render: policyReference,
	},
	{
		page:   labelsPage,
		begin:  "<!-- keys: begin (" + command + ") -->\n",
		end:    "<!-- keys: end -->\n",
		render: labelsReference,
	},
}

func main() {
	if err := run("."); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	s, err := loadSite(root)
	if err != nil {
		return err
	}
	for _, p := range parts {
		block, probs := p.render(s)
		if len(probs) > 0 {
			return fmt.Errorf("%s: %s", p.page, strings.Join(probs, "; "))
		}
		page, err := readPage(root, p.page)
		if err != nil {
			return err
		}
		next, err := splice(page, p, block)
		if err != nil {
			return err
		}
		if next == page {
			fmt.Fprintf(os.Stdout, "apidocs: %s is up to date\n", p.page)
			continue
		}
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(p.page)), []byte(next), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(os.Stdout, "apidocs: wrote %s\n", p.page)
	}
	return nil
}

// loadSite reads api and api/v1alpha1 and what has a section where.
func loadSite(root string) (*site, error) {
	keys, err := loadPackage(root, "api")
	if err != nil {
		return nil, err
	}
	policy, err := loadPackage(root, "api/v1alpha1")
	if err != nil {
		return nil, err
	}
	s := &site{keys: keys, policy: policy, policyTypes: map[string]bool{}, keyConsts: map[string]bool{}, reasons: map[string]bool{}, root: root, headings: map[string]map[string]string{}}
	// The webhook's catalog and the offline commands' hold every code.
	for _, c := range append(explain.Reasons().Codes(), offline.Reasons().Codes()...) {
		s.reasons[string(c)] = true
	}
	for _, sec := range policySections(policy) {
		s.policyTypes[sec.name] = true
	}
	for name, v := range keys.consts {
		if isKey(name, v) {
			s.keyConsts[name] = true
		}
	}
	return s, nil
}

// splice puts block between the part's markers of page.
func splice(page string, p part, block string) (string, error) {
	before, rest, ok1 := strings.Cut(page, p.begin)
	_, after, ok2 := strings.Cut(rest, p.end)
	if !ok1 || !ok2 {
		return "", fmt.Errorf("%s has no %q … %q block", p.page, strings.TrimSpace(p.begin), strings.TrimSpace(p.end))
	}
	return before + p.begin + "\n" + block + "\n" + p.end + after, nil
}
