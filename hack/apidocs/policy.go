package main

import (
	"fmt"
	"go/ast"
	"go/doc"
	"strings"

	"github.com/claimbridge/claimbridge/internal/testing/doclinks"
)

// policyRoot is the type of the document the policy reference starts from;
// platformRoot the other document of api/v1alpha1, which follows it.
const (
	policyRoot   = "TranslationPolicy"
	platformRoot = "Platform"
)

// quantityURL explains the notation of a Kubernetes quantity.
const quantityURL = "https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/"

// section is a type of the policy with a section of its own: a struct, or
// a string type whose values have comments of their own.
type section struct {
	name  string
	paths []string // where it is in a document: spec.resources[]
}

// policySections walks the types from TranslationPolicy, then from
// Platform, depth first, in the order of the fields: the order a reader
// meets them.
func policySections(p *goPackage) []*section {
	var out []*section
	byName := map[string]*section{}
	var visit func(name, at string)
	visit = func(name, at string) {
		if s, ok := byName[name]; ok {
			s.paths = append(s.paths, at)
			return
		}
		s := &section{name: name, paths: []string{at}}
		byName[name] = s
		out = append(out, s)
		st, ok := p.structs[name]
		if !ok {
			return
		}
		for _, f := range st.Fields.List {
			js := jsonName(f)
			if js == "" {
				continue
			}
			fieldAt := js
			if at != "" {
				fieldAt = at + "." + js
			}
			named, list := namedType(f.Type)
			if list {
				fieldAt += "[]"
			}
			if _, ok := p.structs[named]; ok || documentedEnum(p, named) {
				visit(named, fieldAt)
			}
		}
	}
	visit(policyRoot, "")
	visit(platformRoot, "")
	return out
}

// namedType is the type of this package that a field's type is made of
// (ResourceRule for []ResourceRule, SharingRule for *SharingRule), and
// whether the field is a list of it.
func namedType(e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.StarExpr:
		return namedType(x.X)
	case *ast.ArrayType:
		n, _ := namedType(x.Elt)
		return n, true
	case *ast.Ident:
		return x.Name, false
	}
	return "", false
}

// documentedEnum: a string type whose values have comments of their own,
// which its section lists; other enums are listed where they are used.
func documentedEnum(p *goPackage, name string) bool {
	for _, v := range p.enums[name] {
		for _, spec := range v.Decl.Specs {
			if vs := spec.(*ast.ValueSpec); vs.Doc != nil {
				return true
			}
		}
	}
	return false
}

// policyReference renders the sections; problems are what a reader would
// miss (a field without a comment, a doc link to a function).
func policyReference(s *site) (string, []string) {
	p := s.policy
	var probs problems
	sections := policySections(p)
	var b strings.Builder
	for i, sec := range sections {
		if i > 0 {
			b.WriteString("\n")
		}
		t := p.docType(sec.name)
		fmt.Fprintf(&b, "### %s\n\n", sec.name)
		if sec.paths[0] == "" {
			fmt.Fprintf(&b, "The document (kind: %s).\n\n", sec.name)
		} else {
			var at []string
			for _, path := range sec.paths {
				at = append(at, "`"+path+"`")
			}
			fmt.Fprintf(&b, "In %s.\n\n", joinAnd(at))
		}
		fields := map[string]string{}
		if st, ok := p.structs[sec.name]; ok {
			for _, f := range st.Fields.List {
				for _, n := range f.Names {
					if js := jsonName(f); js != "" {
						fields[n.Name] = js
					}
				}
			}
		}
		tx := text{site: s, pkg: p, page: policyPage, section: sec.name, fields: fields}
		if strings.TrimSpace(t.Doc) == "" {
			probs.add("type %s has no doc comment", sec.name)
		}
		b.WriteString(tx.markdown(t.Doc, &probs) + "\n")
		if st, ok := p.structs[sec.name]; ok {
			b.WriteString(fieldList(s, tx, sec.name, st, &probs))
		} else {
			b.WriteString(valueList(tx, p.enums[sec.name], &probs))
		}
	}
	return b.String(), probs
}

// fieldList is a struct's fields: name, type, comment.
func fieldList(s *site, tx text, typ string, st *ast.StructType, probs *problems) string {
	var b strings.Builder
	for _, f := range st.Fields.List {
		js := jsonName(f)
		if js == "" || len(f.Names) != 1 {
			continue
		}
		goName := f.Names[0].Name
		if f.Doc == nil || strings.TrimSpace(f.Doc.Text()) == "" {
			probs.add("field %s.%s (%s) has no doc comment", typ, goName, js)
			continue
		}
		ft := tx
		ft.lead, ft.leadAs = goName, "`"+js+"`"
		fmt.Fprintf(&b, "\n- **`%s`** (%s)\n\n  %s\n", js, typeName(s.policy, f.Type, false), indent(ft.markdown(f.Doc.Text(), probs), "  "))
	}
	return b.String()
}

// valueList is the values of an enum, each with its comment; values
// declared without one after a comment that names them share it
// (ConvVersionMajor, ConvVersionMinor and ConvVersionPatch …).
func valueList(tx text, groups []*doc.Value, probs *problems) string {
	var b strings.Builder
	for _, g := range groups {
		if d := strings.TrimSpace(g.Doc); len(strings.Fields(d)) > 3 {
			b.WriteString("\n" + tx.markdown(d, probs) + "\n")
		}
		b.WriteString("\n")
		lastDoc := ""
		for _, spec := range g.Decl.Specs {
			vs := spec.(*ast.ValueSpec)
			for _, n := range vs.Names {
				v, ok := tx.pkg.consts[n.Name]
				if !ok {
					continue
				}
				switch {
				case vs.Doc != nil:
					lastDoc = vs.Doc.Text()
					b.WriteString("- " + indent(tx.markdown(lastDoc, probs), "  ") + "\n")
				case strings.Contains(lastDoc, n.Name):
				default:
					b.WriteString("- `" + v + "`\n")
				}
			}
		}
	}
	return b.String()
}

// typeName is a field's type as a reader of YAML knows it.
func typeName(p *goPackage, e ast.Expr, plural bool) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return typeName(p, x.X, plural)
	case *ast.ArrayType:
		return "list of " + typeName(p, x.Elt, true)
	case *ast.MapType:
		return "map of " + typeName(p, x.Key, false) + " to " + typeName(p, x.Value, false)
	case *ast.SelectorExpr:
		switch pkg, _ := x.X.(*ast.Ident); pkg.Name + "." + x.Sel.Name {
		case "resource.Quantity":
			return "[" + pluralize("quantity", plural) + "](" + quantityURL + ")"
		case "runtime.RawExtension":
			return pluralize("object", plural)
		}
	case *ast.Ident:
		switch x.Name {
		case "string":
			return pluralize("string", plural)
		case "bool":
			return pluralize("boolean", plural)
		case "int", "int32", "int64":
			return pluralize("integer", plural)
		}
		if _, ok := p.structs[x.Name]; ok || documentedEnum(p, x.Name) {
			return link(policyPage, policyPage, doclinks.Slug(x.Name), x.Name)
		}
		if groups, ok := p.enums[x.Name]; ok {
			var values []string
			for _, g := range groups {
				for _, n := range g.Names {
					if v, ok := p.consts[n]; ok {
						values = append(values, "`"+v+"`")
					}
				}
			}
			return "string: " + joinOr(values)
		}
	}
	return fmt.Sprintf("%T", e)
}

func pluralize(s string, plural bool) string {
	if !plural {
		return s
	}
	if strings.HasSuffix(s, "y") {
		return strings.TrimSuffix(s, "y") + "ies"
	}
	return s + "s"
}

// indent indents every line but the first, which follows a list marker
// or is indented by the caller: a block under a list item.
func indent(s, by string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" && i > 0 {
			lines[i] = by + l
		}
	}
	return strings.Join(lines, "\n")
}

func joinAnd(xs []string) string { return join(xs, "and") }
func joinOr(xs []string) string  { return join(xs, "or") }

func join(xs []string, last string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " " + last + " " + xs[len(xs)-1]
}
