// Command clidocs writes the reference of claimbridge's command line into
// docs/reference/cli/, one Markdown page per command, generated from the
// cobra commands themselves (cli.NewRootCommand): usage, description,
// flags with their defaults, subcommands. Run it from the repository root
// (go run ./hack/clidocs, or make clidocs) after changing a command; its
// test fails when the pages and the commands drift apart.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/claimbridge/claimbridge/cmd/claimbridge/cli"
)

func main() {
	dir := filepath.Join("docs", "reference", "cli")
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	pages := Pages(cli.NewRootCommand())
	if err := write(dir, pages); err != nil {
		fmt.Fprintln(os.Stderr, "clidocs:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stdout, "clidocs: %d pages in %s\n", len(pages), dir)
}

// write replaces the Markdown pages of dir with pages.
func write(dir string, pages map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if _, ok := pages[filepath.Base(f)]; !ok {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	for name, text := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}
