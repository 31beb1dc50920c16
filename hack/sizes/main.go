// Command sizes measures the product code of the root module and fails when
// a function or a package is over its limit. It runs in `make verify`
// (make size-check).
//
//	go run ./hack/sizes [-func-lines 120] [-params 6] [-translate-lines 8000] [-package-lines 5000]
//
// The product code is every non-test .go file of the module outside hack/,
// internal/testing/ (test support), e2e/ (a module of its own) and any
// testdata/ directory; directories whose name starts with "." or "_" are
// skipped, as the go tool skips them. It prints the longest functions, the
// functions with the most parameters and the line count of every package
// (a directory), largest first, then each function or package over its
// limit, and exits 1 when there is one.
//
// How it counts:
//   - A function's length is its lines from the func keyword to its
//     closing brace, doc comment aside. A function literal is part of the
//     function that holds it: its lines are that function's lines, its
//     parameters are not counted. A literal outside any function (a
//     package-level variable) is measured as a function of its own.
//   - A function's parameters: every name counts, an unnamed parameter
//     counts 1, a variadic one 1; the receiver, type parameters and
//     results do not count.
//   - A package's lines are every line of its non-test files, comments and
//     blank lines included. translate/ is the directory translate itself.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// limits are what the product code may not exceed.
type limits struct {
	// FuncLines and Params per function.
	FuncLines, Params int
	// TranslateLines for the translate package, PackageLines for every
	// other package.
	TranslateLines, PackageLines int
}

// translatePackage is the package with a limit of its own.
const translatePackage = "translate"

// skipped are the directories (relative to the module root) whose files are
// not product code; testdata/ is skipped wherever it is.
var skipped = []string{"hack", "internal/testing", "e2e"}

// function is one function's size.
type function struct {
	// File (relative to the root) and Line of its func keyword.
	File   string
	Line   int
	Name   string // "Name", "Recv.Name" or "(*Recv).Name"
	Lines  int
	Params int
}

// pos is file:line.
func (f function) pos() string { return fmt.Sprintf("%s:%d", f.File, f.Line) }

// byPos orders functions by file, then line.
func byPos(a, b function) int {
	return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
}

// pkg is one package's (directory's) non-test lines.
type pkg struct {
	Dir   string
	Lines int
}

// measurement is the product code measured.
type measurement struct {
	Funcs    []function
	Packages []pkg
}

func main() {
	root := flag.String("root", ".", "the module's root directory")
	var l limits
	flag.IntVar(&l.FuncLines, "func-lines", 120, "most lines of a function, from func to its closing brace")
	flag.IntVar(&l.Params, "params", 6, "most parameters of a function (the receiver not counted)")
	flag.IntVar(&l.TranslateLines, "translate-lines", 8000, "most non-test lines of the translate package")
	flag.IntVar(&l.PackageLines, "package-lines", 5000, "most non-test lines of every other package")
	flag.Parse()
	m, err := measure(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sizes:", err)
		os.Exit(2)
	}
	write(os.Stdout, m, 10)
	if over := m.over(l); len(over) > 0 {
		fmt.Fprintf(os.Stderr, "sizes: %d over their limits:\n", len(over))
		for _, o := range over {
			fmt.Fprintln(os.Stderr, "  "+o)
		}
		os.Exit(1)
	}
}

// measure parses every product file under root.
func measure(root string) (*measurement, error) {
	m := &measurement{}
	lines := map[string]int{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		n, funcs, err := measureFile(p, rel)
		if err != nil {
			return err
		}
		lines[path.Dir(rel)] += n
		m.Funcs = append(m.Funcs, funcs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for dir, n := range lines {
		m.Packages = append(m.Packages, pkg{Dir: dir, Lines: n})
	}
	slices.SortFunc(m.Packages, func(a, b pkg) int { return cmp.Or(cmp.Compare(b.Lines, a.Lines), cmp.Compare(a.Dir, b.Dir)) })
	return m, nil
}

// skipDir: the directory holds no product code.
func skipDir(rel, name string) bool {
	return name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || slices.Contains(skipped, rel)
}

// measureFile is a file's line count and its functions' sizes.
func measureFile(p, rel string) (int, []function, error) {
	src, err := os.ReadFile(p)
	if err != nil {
		return 0, nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
	if err != nil {
		return 0, nil, err
	}
	var funcs []function
	line := func(pos token.Pos) int { return fset.Position(pos).Line }
	span := func(from, to token.Pos) int { return line(to) - line(from) + 1 }
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Body == nil {
				continue // declared here, implemented elsewhere (assembly)
			}
			funcs = append(funcs, function{File: rel, Line: line(d.Pos()), Name: funcName(d), Lines: span(d.Pos(), d.Body.Rbrace), Params: params(d.Type)})
		case *ast.GenDecl:
			// Function literals outside any function: each outermost one
			// is a function of its own.
			ast.Inspect(d, func(n ast.Node) bool {
				lit, ok := n.(*ast.FuncLit)
				if !ok {
					return true
				}
				funcs = append(funcs, function{File: rel, Line: line(lit.Pos()), Name: "func literal", Lines: span(lit.Pos(), lit.Body.Rbrace), Params: params(lit.Type)})
				return false
			})
		}
	}
	return lineCount(src), funcs, nil
}

// funcName is the function's name, with its receiver's type for a method.
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
	star := false
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = true, s.X
	}
	// A generic receiver: T[K] or T[K, V].
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	recv := "?"
	if id, ok := t.(*ast.Ident); ok {
		recv = id.Name
	}
	if star {
		return "(*" + recv + ")." + d.Name.Name
	}
	return recv + "." + d.Name.Name
}

// params counts a function's parameters: each name, or 1 for an unnamed one.
func params(t *ast.FuncType) int {
	n := 0
	for _, f := range t.Params.List {
		n += max(len(f.Names), 1)
	}
	return n
}

// lineCount is the file's number of lines, a last line without a newline
// counted.
func lineCount(src []byte) int {
	n := strings.Count(string(src), "\n")
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// longest are the top n functions by lines, most first.
func (m *measurement) longest(n int) []function {
	return top(m.Funcs, n, func(f function) int { return f.Lines })
}

// mostParams are the top n functions by parameters, most first.
func (m *measurement) mostParams(n int) []function {
	return top(m.Funcs, n, func(f function) int { return f.Params })
}

// top sorts a copy of funcs by size, largest first (then by position), and
// keeps n.
func top(funcs []function, n int, size func(function) int) []function {
	out := slices.Clone(funcs)
	slices.SortFunc(out, func(a, b function) int {
		return cmp.Or(cmp.Compare(size(b), size(a)), byPos(a, b))
	})
	return out[:min(n, len(out))]
}

// over says what is over its limit: functions in position order, then
// packages largest first.
func (m *measurement) over(l limits) []string {
	funcs := slices.Clone(m.Funcs)
	slices.SortFunc(funcs, byPos)
	var out []string
	for _, f := range funcs {
		if f.Lines > l.FuncLines {
			out = append(out, fmt.Sprintf("function %s %s: %d lines (limit %d)", f.pos(), f.Name, f.Lines, l.FuncLines))
		}
		if f.Params > l.Params {
			out = append(out, fmt.Sprintf("function %s %s: %d parameters (limit %d)", f.pos(), f.Name, f.Params, l.Params))
		}
	}
	for _, p := range m.Packages {
		limit := l.PackageLines
		if p.Dir == translatePackage {
			limit = l.TranslateLines
		}
		if p.Lines > limit {
			out = append(out, fmt.Sprintf("package %s/: %d non-test lines (limit %d)", p.Dir, p.Lines, limit))
		}
	}
	return out
}

// write prints the n longest functions, the n with the most parameters and
// every package's lines.
func write(w io.Writer, m *measurement, n int) {
	fmt.Fprintf(w, "longest functions (lines from func to the closing brace), top %d:\n", n)
	for _, f := range m.longest(n) {
		fmt.Fprintf(w, "  %5d  %s  %s\n", f.Lines, f.Name, f.pos())
	}
	fmt.Fprintf(w, "most parameters (the receiver not counted), top %d:\n", n)
	for _, f := range m.mostParams(n) {
		fmt.Fprintf(w, "  %5d  %s  %s\n", f.Params, f.Name, f.pos())
	}
	fmt.Fprintln(w, "packages (non-test lines):")
	for _, p := range m.Packages {
		fmt.Fprintf(w, "  %5d  %s/\n", p.Lines, p.Dir)
	}
}
