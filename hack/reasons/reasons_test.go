// Package reasons checks the reason catalog against the code: every reason
// code a package declares has an entry in that package's catalog, with a
// remedy and a section of the docs; every entry is a declared code; no code
// is made up where it is emitted; and the table of reason codes in
// docs/reference/reasons.md is the catalog. It runs in `make test` and
// `make verify`. Refresh the table with: go test ./hack/reasons -update
package reasons

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/offline"
	"github.com/claimbridge/claimbridge/internal/testing/doclinks"
	"github.com/claimbridge/claimbridge/internal/testing/golden"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

const root = "../.."

// reasonsPage holds the table of reason codes, relative to the root.
const reasonsPage = "docs/reference/reasons.md"

// catalogs: the catalog of each package that declares reason codes. A
// package's codes must be in its own catalog (the lowest that emits them).
var catalogs = map[string]reason.Catalog{
	"translate":        translate.Reasons(),
	"feasibility":      feasibility.Reasons(),
	"decide":           decide.Reasons(),
	"explain":          explain.Reasons(),
	"internal/offline": offline.Reasons(),
}

// code is a reason code constant as declared.
type code struct {
	pkg, name string
	value     reason.Code
	pos       string
}

// sources parses the module's non-test Go files (hack/ and test support
// aside), by package folder.
func sources(t *testing.T) (map[string][]*ast.File, *token.FileSet) {
	t.Helper()
	fset := token.NewFileSet()
	files := map[string][]*ast.File{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if slices.Contains([]string{".git", "e2e", "hack", "testdata", "_output", "bin"}, d.Name()) || rel == filepath.Join("internal", "testing") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		files[dir] = append(files[dir], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, fset
}

// isReasonCodeType: reason.Code, or a package's own ReasonCode
// (feasibility.ReasonCode, a verdict's).
func isReasonCodeType(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name == "ReasonCode"
	case *ast.SelectorExpr:
		pkg, ok := x.X.(*ast.Ident)
		return x.Sel.Name == "ReasonCode" || ok && pkg.Name == "reason" && x.Sel.Name == "Code"
	}
	return false
}

// declared lists the reason code constants of the module.
func declared(t *testing.T) ([]code, map[string][]*ast.File, *token.FileSet) {
	files, fset := sources(t)
	var out []code
	for dir, fs := range files {
		for _, f := range fs {
			for _, decl := range f.Decls {
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					if vs.Type == nil || !isReasonCodeType(vs.Type) {
						continue
					}
					for i, n := range vs.Names {
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							t.Errorf("%s: reason code %s is not a string literal", fset.Position(n.Pos()), n.Name)
							continue
						}
						v, _ := strconv.Unquote(lit.Value)
						out = append(out, code{pkg: dir, name: n.Name, value: reason.Code(v), pos: fset.Position(n.Pos()).String()})
					}
				}
			}
		}
	}
	return out, files, fset
}

// TestEveryCodeHasAnEntry: a code a package declares is in that package's
// catalog, and a package that declares codes has a catalog.
func TestEveryCodeHasAnEntry(t *testing.T) {
	codes, _, _ := declared(t)
	if len(codes) < 50 {
		t.Fatalf("found %d reason codes; the parser lost them", len(codes))
	}
	for _, c := range codes {
		cat, ok := catalogs[c.pkg]
		if !ok {
			t.Errorf("%s: package %s declares reason code %s but has no catalog in this test's list", c.pos, c.pkg, c.value)
			continue
		}
		if _, ok := cat.Lookup(c.value); !ok {
			t.Errorf("%s: reason code %s (%s.%s) has no entry in %s's catalog", c.pos, c.value, c.pkg, c.name, c.pkg)
		}
	}
}

// TestEveryEntryIsComplete: each entry has a severity, a known outcome, a
// remedy and a section of the docs that exists (a repo-relative page and
// the anchor of one of its headings), and names a declared code.
func TestEveryEntryIsComplete(t *testing.T) {
	codes, _, _ := declared(t)
	values := map[reason.Code]bool{}
	for _, c := range codes {
		values[c.value] = true
	}
	anchors := docAnchors(t)
	for pkg, cat := range catalogs {
		for _, c := range cat.Codes() {
			e := cat[c]
			if !values[c] {
				t.Errorf("%s's catalog has an entry for %s, which no package declares", pkg, c)
			}
			if strings.TrimSpace(e.Remedy) == "" {
				t.Errorf("%s's catalog: %s has no remedy", pkg, c)
			}
			if e.Severity != reason.SeverityInfo && e.Severity != reason.SeverityWarning {
				t.Errorf("%s's catalog: %s has severity %q", pkg, c, e.Severity)
			}
			if !slices.Contains([]reason.Outcome{"", reason.OutcomeSkip, reason.OutcomeKeepLegacy, reason.OutcomeTranslate}, e.Outcome) {
				t.Errorf("%s's catalog: %s has outcome %q", pkg, c, e.Outcome)
			}
			if why := anchors(e.Doc); why != "" {
				t.Errorf("%s's catalog: %s points at %q: %s", pkg, c, e.Doc, why)
			}
		}
	}
}

// TestNoCodeIsMadeUp: a code is emitted through its constant, never made
// on the spot from a string (it would have no entry), and every declared
// code is used somewhere besides its declaration and its entry.
func TestNoCodeIsMadeUp(t *testing.T) {
	codes, files, fset := declared(t)
	uses := map[string]int{}
	for _, fs := range files {
		for _, f := range fs {
			ast.Inspect(f, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.CallExpr:
					if isReasonCodeType(x.Fun) && len(x.Args) == 1 {
						if _, lit := x.Args[0].(*ast.BasicLit); lit {
							t.Errorf("%s: a reason code made from a string literal has no catalog entry; declare a constant", fset.Position(x.Pos()))
						}
					}
				case *ast.Ident:
					uses[x.Name]++
				case *ast.SelectorExpr:
					uses[x.Sel.Name]++
					return false
				}
				return true
			})
		}
	}
	for _, c := range codes {
		// The declaration is one use and the catalog's key another; an
		// emitter is one more.
		seen := 1
		if _, ok := catalogs[c.pkg].Lookup(c.value); ok {
			seen++
		}
		if uses[c.name] <= seen {
			t.Errorf("%s: reason code %s is declared but nothing emits it; delete it", c.pos, c.name)
		}
	}
}

// TestReasonTableIsTheCatalog: the table of reason codes in
// docs/reference/reasons.md lists every code of every catalog with its
// outcome, severity and remedy, linked to the section that explains it.
func TestReasonTableIsTheCatalog(t *testing.T) {
	path := filepath.Join(root, filepath.FromSlash(reasonsPage))
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- reason codes: begin (go test ./hack/reasons -update) -->\n", "<!-- reason codes: end -->\n"
	before, rest, ok1 := strings.Cut(string(page), begin)
	table, after, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("%s has no %q … %q block", reasonsPage, begin, end)
	}
	want := reasonTable()
	if table == want {
		return
	}
	if golden.Updating() {
		if err := os.WriteFile(path, []byte(before+begin+want+end+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table of reason codes is not the catalog; run go test ./hack/reasons -update", reasonsPage)
}

// reasonTable is the table of every catalog's codes; each code links to
// its entry's Doc, relative to the page of the table.
func reasonTable() string {
	all := reason.Catalog{}
	for _, cat := range catalogs {
		maps.Copy(all, cat)
	}
	var b strings.Builder
	b.WriteString("| code | severity | outcome when it decides | what to do |\n|---|---|---|---|\n")
	for _, c := range all.Codes() {
		e := all[c]
		outcome := string(e.Outcome)
		if outcome == "" {
			outcome = "–"
		}
		remedy := strings.ReplaceAll(e.Remedy, "%[1]s", "the devices")
		remedy = strings.ReplaceAll(remedy, "|", "\\|")
		b.WriteString("| [`" + string(c) + "`](" + fromReasonsPage(e.Doc) + ") | " + string(e.Severity) + " | " + outcome + " | " + remedy + " |\n")
	}
	return b.String()
}

// fromReasonsPage is a Doc ("docs/concepts/translation.md#anchor"), relative
// to the folder of the table's page; a Doc without a page stays as it is.
func fromReasonsPage(doc string) string {
	page, anchor, _ := strings.Cut(doc, "#")
	if page == "" {
		return doc
	}
	rel, err := filepath.Rel(path.Dir(reasonsPage), page)
	if err != nil {
		return doc
	}
	return filepath.ToSlash(rel) + "#" + anchor
}

// docAnchors checks a Doc: a page of the repository, relative to its root,
// with the anchor of one of its headings as GitHub makes them. It returns
// what is wrong, "" when nothing is.
func docAnchors(t *testing.T) func(doc string) string {
	t.Helper()
	pages := map[string]map[string]bool{}
	return func(doc string) string {
		page, anchor, ok := strings.Cut(doc, "#")
		if page == "" || !ok || anchor == "" {
			return "want a page of the docs and an anchor, e.g. docs/concepts/translation.md#how-a-pod-is-translated"
		}
		anchors, ok := pages[page]
		if !ok {
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
			if err != nil {
				return err.Error()
			}
			anchors = doclinks.Anchors(string(data))
			pages[page] = anchors
		}
		if !anchors[anchor] {
			return page + " has no heading #" + anchor
		}
		return ""
	}
}
