package main

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/claimbridge/claimbridge/internal/testing/doclinks"
)

// module is the import path of the repository's module.
const module = "github.com/claimbridge/claimbridge"

// goPackage is one package of the module as go/doc sees it, with what the
// pages need to know of it besides: the value of each string constant and
// the json name of each struct field.
type goPackage struct {
	path  string // import path
	dir   string // slash-separated, relative to the module root
	files []*ast.File
	doc   *doc.Package
	// consts are the exported string constants by name, with their values.
	consts map[string]string
	// structs are the exported struct types by name.
	structs map[string]*ast.StructType
	// enums are the exported named string types that have constants of
	// their own, by name.
	enums map[string][]*doc.Value
}

// loadPackage parses the non-test Go files of dir (relative to root).
func loadPackage(root, dir string) (*goPackage, error) {
	fset := token.NewFileSet()
	matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.go"))
	if err != nil {
		return nil, err
	}
	p := &goPackage{path: path.Join(module, dir), dir: dir, consts: map[string]string{}, structs: map[string]*ast.StructType{}, enums: map[string][]*doc.Value{}}
	for _, m := range matches {
		if strings.HasSuffix(m, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, m, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		p.files = append(p.files, f)
	}
	if len(p.files) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	// go/doc may rewrite the declarations it is given; the pages read
	// the ASTs themselves as well, so it gets its own parse.
	docFiles := make([]*ast.File, 0, len(p.files))
	for _, f := range p.files {
		g, err := parser.ParseFile(fset, fset.File(f.Pos()).Name(), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		docFiles = append(docFiles, g)
	}
	if p.doc, err = doc.NewFromFiles(fset, docFiles, p.path); err != nil {
		return nil, err
	}
	for _, f := range p.files {
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					if g.Tok != token.CONST {
						continue
					}
					for i, n := range s.Names {
						if !n.IsExported() || i >= len(s.Values) {
							continue
						}
						// Only literals: a constant made of another
						// package's (PolicyAPIVersion) is not a value here.
						if lit, ok := s.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							p.consts[n.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				case *ast.TypeSpec:
					if st, ok := s.Type.(*ast.StructType); ok && s.Name.IsExported() {
						p.structs[s.Name.Name] = st
					}
				}
			}
		}
	}
	for _, t := range p.doc.Types {
		if id, ok := typeSpec(t).Type.(*ast.Ident); ok && id.Name == "string" && len(t.Consts) > 0 {
			p.enums[t.Name] = t.Consts
		}
	}
	return p, nil
}

// typeSpec is the declaration of a go/doc type.
func typeSpec(t *doc.Type) *ast.TypeSpec {
	for _, s := range t.Decl.Specs {
		if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == t.Name {
			return ts
		}
	}
	return nil
}

// docType is the go/doc type of the given name, or nil.
func (p *goPackage) docType(name string) *doc.Type {
	for _, t := range p.doc.Types {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// jsonName is the name a struct field has in YAML and JSON, from its json
// tag; "" for a field that has none or is left out ("-").
func jsonName(f *ast.Field) string {
	if f.Tag == nil {
		return ""
	}
	tag, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return ""
	}
	name, _, _ := strings.Cut(reflectTag(tag, "json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// reflectTag is the value of key in a struct tag (reflect.StructTag.Get
// without a reflect.StructTag at hand).
func reflectTag(tag, key string) string {
	for tag != "" {
		tag = strings.TrimLeft(tag, " ")
		name, rest, ok := strings.Cut(tag, ":")
		if !ok || len(rest) == 0 || rest[0] != '"' {
			return ""
		}
		value, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return ""
		}
		tag = rest[len(value):]
		if name == key {
			v, _ := strconv.Unquote(value)
			return v
		}
	}
	return ""
}

// fieldJSON is the json name of the field goName of struct typ, or "".
func (p *goPackage) fieldJSON(typ, goName string) string {
	st, ok := p.structs[typ]
	if !ok {
		return ""
	}
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.Name == goName {
				return jsonName(f)
			}
		}
	}
	return ""
}

// site is what the pages can link to: the packages, the sections of the
// policy reference and of the labels reference.
type site struct {
	policy, keys *goPackage
	// policyTypes are the types that have a section in the policy
	// reference.
	policyTypes map[string]bool
	// keyConsts are the label and annotation keys, by constant name,
	// that have a section in the labels reference.
	keyConsts map[string]bool
	// reasons are the reason codes claimbridge reports, which the pages
	// write as code.
	reasons map[string]bool
	// root is the repository's root; headings caches the headings of the
	// pages the comments name, by page and anchor.
	root     string
	headings map[string]map[string]string
}

// atxHeading is a Markdown heading line.
var atxHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// heading is the text of the heading of page that anchor names, or of its
// title when anchor is "": what a link to it says.
func (s *site) heading(page, anchor string) (string, error) {
	hs, ok := s.headings[page]
	if !ok {
		text, err := readPage(s.root, page)
		if err != nil {
			return "", err
		}
		hs = map[string]string{}
		fenced := false
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			m := atxHeading.FindStringSubmatch(line)
			if fenced || m == nil {
				continue
			}
			if _, ok := hs[""]; !ok {
				hs[""] = m[1]
			}
			if slug := doclinks.Slug(m[1]); hs[slug] == "" {
				hs[slug] = m[1]
			}
		}
		s.headings[page] = hs
	}
	h, ok := hs[anchor]
	if !ok {
		return "", fmt.Errorf("%s has no heading #%s", page, anchor)
	}
	return h, nil
}

const (
	policyPage = "docs/reference/policy.md"
	labelsPage = "docs/reference/labels.md"
)

// link is a Markdown link to anchor of page, written from the page from.
func link(from, page, anchor, text string) string {
	target := "#" + anchor
	if page != from {
		rel, err := filepath.Rel(path.Dir(from), page)
		if err != nil {
			rel = page
		}
		target = filepath.ToSlash(rel) + target
	}
	return "[" + text + "](" + target + ")"
}

// text renders doc comments as Markdown for one page.
type text struct {
	site *site
	pkg  *goPackage // the package whose comment it is
	page string     // the page it is written into
	// lead is the Go name the comment starts with, written as leadAs
	// ("Name is …" on a field whose YAML name is name).
	lead, leadAs string
	// section is the type whose section the comment is in, fields the
	// Go names of its fields with their YAML names: a comment names its
	// siblings as Go does, and a link to its own section is no link.
	section string
	fields  map[string]string
}

// typeLink links to the section of a type of the policy, unless the text
// is in that section already.
func (t text) typeLink(typ, text string) string {
	if t.page == policyPage && t.section == typ {
		return text
	}
	return link(t.page, policyPage, doclinks.Slug(typ), text)
}

// errors collected while rendering; a doc link that names nothing a reader
// can see is one.
type problems []string

func (p *problems) add(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

// markdown renders a doc comment: paragraphs, lists and code blocks.
func (t text) markdown(comment string, probs *problems) string {
	d := t.pkg.doc.Parser().Parse(comment)
	var blocks []string
	for i, b := range d.Content {
		blocks = append(blocks, t.block(b, i == 0, probs))
	}
	return strings.Join(blocks, "\n\n")
}

func (t text) block(b comment.Block, first bool, probs *problems) string {
	switch x := b.(type) {
	case *comment.Paragraph:
		return t.inline(x.Text, first, probs)
	case *comment.Heading:
		return "**" + t.inline(x.Text, false, probs) + "**"
	case *comment.Code:
		return "```\n" + x.Text + "```"
	case *comment.List:
		var items []string
		for i, item := range x.Items {
			var parts []string
			for _, c := range item.Content {
				parts = append(parts, t.block(c, false, probs))
			}
			marker := "- "
			if item.Number != "" {
				marker = strconv.Itoa(i+1) + ". "
			}
			items = append(items, marker+strings.Join(parts, " "))
		}
		return strings.Join(items, "\n")
	}
	probs.add("%T in a doc comment", b)
	return ""
}

// Placeholders stand for Markdown made before the text around it is
// transformed (doc links), so that the transformations leave it alone.
const phOpen, phClose = '\ue000', '\ue001'

var placeholder = regexp.MustCompile("\ue000([0-9]+)\ue001")

// inline renders the text of a paragraph on one line.
func (t text) inline(texts []comment.Text, first bool, probs *problems) string {
	var raw strings.Builder
	var made []string
	hold := func(md string) {
		raw.WriteRune(phOpen)
		raw.WriteString(strconv.Itoa(len(made)))
		raw.WriteRune(phClose)
		made = append(made, md)
	}
	walk := func(ts []comment.Text) {
		for _, x := range ts {
			switch x := x.(type) {
			case comment.Plain:
				raw.WriteString(string(x))
			case comment.Italic:
				raw.WriteString(string(x))
			case *comment.Link:
				hold("[" + t.inline(x.Text, false, probs) + "](" + x.URL + ")")
			case *comment.DocLink:
				hold(t.docLink(x, probs))
			}
		}
	}
	walk(texts)
	s := strings.Join(strings.Fields(raw.String()), " ")
	s = t.transform(s, first, probs)
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		i, _ := strconv.Atoi(placeholder.FindStringSubmatch(m)[1])
		return made[i]
	})
}

// docLink resolves [Name], [Type.Field] and [pkg.Name] for a reader: a
// type with a section is a link to it, a field its YAML name linked to its
// type's section, a string constant its value (linked to its section when
// it is a label or annotation key). Anything else is a problem: the reader
// of the page cannot see a Go function.
func (t text) docLink(l *comment.DocLink, probs *problems) string {
	pkg := t.pkg
	switch l.ImportPath {
	case "", t.pkg.path:
	case t.site.policy.path:
		pkg = t.site.policy
	case t.site.keys.path:
		pkg = t.site.keys
	default:
		probs.add("doc link to %s.%s: a package the references do not render", l.ImportPath, l.Name)
		return l.Name
	}
	if l.Recv != "" {
		if js := pkg.fieldJSON(l.Recv, l.Name); js != "" && pkg == t.site.policy && t.site.policyTypes[l.Recv] {
			return t.typeLink(l.Recv, "`"+js+"`")
		}
		probs.add("doc link [%s.%s] names no field of a type the policy reference shows", l.Recv, l.Name)
		return l.Name
	}
	if v, ok := pkg.consts[l.Name]; ok {
		if pkg == t.site.keys && t.site.keyConsts[l.Name] {
			return link(t.page, labelsPage, doclinks.Slug("`"+v+"`"), "`"+v+"`")
		}
		return "`" + v + "`"
	}
	if pkg == t.site.policy && t.site.policyTypes[l.Name] {
		return t.typeLink(l.Name, l.Name)
	}
	probs.add("doc link [%s] names something a reader of %s cannot see (a function, or a type without a section)", l.Name, t.page)
	return l.Name
}

var (
	// quoted is a literal in a comment: "nvidia.com/gpu", "Exact".
	quoted = regexp.MustCompile(`"([^"]+)"`)
	// phrase is quoted prose rather than a literal ("autoscaling lost").
	phrase = regexp.MustCompile(`^[a-z][a-z' ]* [a-z' ]*[a-z]$`)
	// word is what a comment may name: a page of the docs, a qualified
	// name (a label key, an extended resource, an attribute), a
	// command-line flag, a Go identifier or Type.Field.
	word = regexp.MustCompile(`docs/[A-Za-z0-9_./-]+\.md(?:#[A-Za-z0-9_-]+)?` +
		`|[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)+/[A-Za-z0-9._*+/-]*[A-Za-z0-9*]` +
		`|--[a-z][a-z0-9-]*(?:=[A-Za-z0-9.,-]*[A-Za-z0-9])?` +
		`|\b[A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)?\b`)
	qualified = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)+/`)
)

// transform makes one line of comment text Markdown: "quoted literals"
// and `spans` are code; the Go names of constants become their values,
// the Go names of fields their YAML names; docs/… paths become links; and
// what Markdown would read as markup is escaped.
func (t text) transform(s string, first bool, probs *problems) string {
	var b strings.Builder
	// Code spans the comment writes itself stay as they are.
	for i, part := range strings.Split(s, "`") {
		if i%2 == 1 {
			b.WriteString("`" + part + "`")
			continue
		}
		last := 0
		for _, m := range quoted.FindAllStringSubmatchIndex(part, -1) {
			b.WriteString(t.prose(part[last:m[0]], first && i == 0 && last == 0, probs))
			lit := part[m[2]:m[3]]
			if phrase.MatchString(lit) || strings.ContainsRune(lit, phOpen) {
				b.WriteString(`"` + t.prose(lit, false, probs) + `"`)
			} else {
				b.WriteString("`" + lit + "`")
			}
			last = m[1]
		}
		b.WriteString(t.prose(part[last:], first && i == 0 && last == 0, probs))
	}
	return b.String()
}

// prose transforms text outside code spans.
func (t text) prose(s string, atStart bool, probs *problems) string {
	var b strings.Builder
	last := 0
	for _, m := range word.FindAllStringIndex(s, -1) {
		b.WriteString(escape(s[last:m[0]]))
		w := s[m[0]:m[1]]
		b.WriteString(t.name(w, atStart && m[0] == 0, probs))
		last = m[1]
	}
	b.WriteString(escape(s[last:]))
	return b.String()
}

// name is how a word of a comment is written on the page.
func (t text) name(w string, atStart bool, probs *problems) string {
	if strings.HasPrefix(w, "docs/") {
		page, anchor, _ := strings.Cut(w, "#")
		target := page
		if rel, err := filepath.Rel(path.Dir(t.page), page); err == nil {
			target = filepath.ToSlash(rel)
		}
		if page == t.page {
			target = ""
		}
		if anchor != "" {
			target += "#" + anchor
		}
		title, err := t.site.heading(page, anchor)
		switch {
		case err != nil:
			probs.add("a link to %s: %v", w, err)
			title = escape(w)
		case target == "":
			probs.add("a link to %s, the page itself, needs an anchor", w)
		}
		return "[" + title + "](" + target + ")"
	}
	if atStart && w == t.lead {
		return t.leadAs
	}
	if qualified.MatchString(w) {
		for name := range t.site.keyConsts {
			if t.site.keys.consts[name] == w && t.page != labelsPage {
				return link(t.page, labelsPage, doclinks.Slug("`"+w+"`"), "`"+w+"`")
			}
		}
		return "`" + w + "`"
	}
	if strings.HasPrefix(w, "--") {
		return "`" + w + "`"
	}
	if typ, field, ok := strings.Cut(w, "."); ok {
		if js := t.pkg.fieldJSON(typ, field); js != "" {
			if t.pkg == t.site.policy && t.site.policyTypes[typ] {
				return t.typeLink(typ, "`"+js+"`")
			}
			return "`" + js + "`"
		}
		return escape(w)
	}
	if !goName(w) {
		return w
	}
	if v, ok := t.pkg.consts[w]; ok {
		if t.pkg == t.site.keys && t.site.keyConsts[w] {
			return link(t.page, labelsPage, doclinks.Slug("`"+v+"`"), "`"+v+"`")
		}
		return "`" + v + "`"
	}
	if js, ok := t.fields[w]; ok {
		return "`" + js + "`"
	}
	if t.site.reasons[w] {
		return "`" + w + "`"
	}
	return w
}

// goName: a word with an upper-case letter after its first, as Go names
// of more than one word are (ConvPresent, SuffixAttribute, DRAAware); a
// plain capitalised word (Kueue, Prefix) is left as it is written.
func goName(w string) bool {
	for i, r := range w {
		if i > 0 && unicode.IsUpper(r) {
			return true
		}
	}
	return false
}

// escape writes prose so that Markdown shows it as written: no emphasis
// from "*" or "_", no HTML from "<resource>".
func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "<", `\<`).Replace(s)
}

// readPage reads a page of the repository.
func readPage(root, page string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	return string(b), err
}
