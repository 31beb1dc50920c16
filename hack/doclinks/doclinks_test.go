// Package doclinks checks every link of the project's Markdown (internal/testing/doclinks).
package doclinks

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/claimbridge/claimbridge/internal/testing/doclinks"
)

const root = "../.."

// documents lists the Markdown whose links are checked: the top-level
// pages, the charts' READMEs and everything under docs/.
func documents(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md", "SECURITY.md", "BENCHMARKS.md"}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	for _, dir := range []string{"charts", "docs"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if dir == "charts" && path.Base(rel) != "README.md" || dir == "docs" && path.Ext(rel) != ".md" {
				return nil
			}
			files = append(files, rel)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// TestDocLinks: every relative link of the README, CONTRIBUTING.md,
// SECURITY.md, BENCHMARKS.md, the charts' READMEs and docs/ names a file
// that exists and, with an anchor, a heading of it; every external link is
// a well-formed URL. The generated CLI reference (docs/reference/cli,
// hack/clidocs) is checked like any page.
func TestDocLinks(t *testing.T) {
	files := documents(t)
	if len(files) < 15 {
		t.Fatalf("found %d documents %v; the walk lost them", len(files), files)
	}
	problems, err := doclinks.Check(root, files, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s", p)
	}
}
