package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/claimbridge/claimbridge/cmd/claimbridge/cli"
)

// TestReferenceIsTheCommands: docs/reference/cli holds exactly the pages
// the commands generate; a command, flag or description changed without
// go run ./hack/clidocs fails here.
func TestReferenceIsTheCommands(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "reference", "cli")
	want := Pages(cli.NewRootCommand())
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got[filepath.Base(f)] = string(b)
	}
	for name, text := range want {
		if diff := cmp.Diff(text, got[name]); diff != "" {
			t.Errorf("%s is not what the commands generate (-want,+got); run go run ./hack/clidocs:\n%s", name, diff)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is the page of no command; run go run ./hack/clidocs", name)
		}
	}
}

// TestEveryCommandAndFlagHasItsPage: the generator leaves nothing out
// (every visible command and each of its flags is on a page) and links
// each page to its parent and children.
func TestEveryCommandAndFlagHasItsPage(t *testing.T) {
	root := cli.NewRootCommand()
	pages := Pages(root)
	if len(pages) < 10 {
		t.Fatalf("%d pages, want one per command (serve, translate, explain, audit, report …)", len(pages))
	}
	for _, c := range root.Commands() {
		if !shown(c) {
			continue
		}
		p, ok := pages[fileName(c)]
		if !ok {
			t.Errorf("no page for %s", c.CommandPath())
			continue
		}
		c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !f.Hidden && !strings.Contains(p, "`--"+f.Name+"`") {
				t.Errorf("%s's page does not list --%s", c.CommandPath(), f.Name)
			}
		})
		if !strings.Contains(pages["claimbridge.md"], "("+fileName(c)+")") {
			t.Errorf("claimbridge.md does not link %s", fileName(c))
		}
	}
	names := make([]string, 0, len(pages))
	for n := range pages {
		names = append(names, n)
	}
	if !slices.Contains(names, "claimbridge_audit.md") || !slices.Contains(names, "claimbridge_policy_check.md") {
		t.Errorf("pages %v lack audit or a subcommand of policy", names)
	}
}
