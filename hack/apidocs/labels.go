package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"regexp"
	"strings"
)

// key is a label or annotation key of package api.
type key struct {
	name, value string // LabelMode, claimbridge.io/mode
	doc         string
	values      []keyValue
}

// keyValue is a value a key takes, declared as a constant of api or
// api/v1alpha1.
type keyValue struct {
	pkg  *goPackage
	name string // ModeEnforce
	doc  string
}

// keyGroup is a const block of keys: "Labels of a namespace."
type keyGroup struct {
	title string // Labels of a namespace
	doc   string // what the block's comment says after its title
	keys  []*key
}

var groupTitle = regexp.MustCompile(`^((?:Labels|Annotations) of an? [^.]+)\.\s*`)

// isKey: a constant named Label… or Annotation… whose value is a key.
func isKey(name, value string) bool {
	return (strings.HasPrefix(name, "Label") || strings.HasPrefix(name, "Annotation")) && strings.Contains(value, "/")
}

// keyGroups reads the keys of package api in the order of its file, each
// with the values the constants of api and api/v1alpha1 give it.
func keyGroups(s *site) ([]*keyGroup, []string) {
	var probs problems
	var groups []*keyGroup
	byName := map[string]*key{}
	for _, f := range s.keys.files {
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			var group *keyGroup
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for _, n := range vs.Names {
					v, ok := s.keys.consts[n.Name]
					if !ok || !isKey(n.Name, v) {
						continue
					}
					if group == nil {
						m := groupTitle.FindStringSubmatch(g.Doc.Text())
						if m == nil {
							probs.add("key %s is in a const block whose comment does not start with \"Labels of a …\" or \"Annotations of a …\"", n.Name)
							break
						}
						group = &keyGroup{title: m[1], doc: strings.TrimSpace(strings.TrimPrefix(g.Doc.Text(), m[0]))}
						groups = append(groups, group)
					}
					k := &key{name: n.Name, value: v}
					if vs.Doc == nil || len(vs.Names) > 1 {
						probs.add("key %s has no doc comment of its own", n.Name)
					} else {
						k.doc = vs.Doc.Text()
					}
					group.keys = append(group.keys, k)
					byName[n.Name] = k
				}
			}
		}
	}
	for _, p := range []*goPackage{s.keys, s.policy} {
		for _, v := range keyValues(s, p) {
			if k, ok := byName[v.key]; ok {
				k.values = append(k.values, v.keyValue)
			}
		}
	}
	return groups, probs
}

type valueOf struct {
	key string
	keyValue
}

// keyValues are the constants of p that are values of a key: those of a
// block whose comment says so ("Values of AnnotationDecision."), of
// a type whose comment names it ("Mode is … from its label LabelMode"),
// or a constant whose own comment names it first ("RepairRecreate is the
// LabelRepair value …"). In api/v1alpha1 a key is named api.LabelX.
func keyValues(s *site, p *goPackage) []valueOf {
	prefix := ""
	if p != s.keys {
		prefix = `api\.`
	}
	mention := regexp.MustCompile(`\b` + prefix + `((?:Label|Annotation)[A-Za-z]+)\b`)
	named := func(doc string) string {
		for _, m := range mention.FindAllStringSubmatch(doc, -1) {
			if v, ok := s.keys.consts[m[1]]; ok && isKey(m[1], v) {
				return m[1]
			}
		}
		return ""
	}
	typeKey := map[string]string{}
	for _, t := range p.doc.Types {
		if k := named(t.Doc); k != "" {
			typeKey[t.Name] = k
		}
	}
	var out []valueOf
	for _, f := range p.files {
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			blockKey := ""
			if d := g.Doc.Text(); strings.HasPrefix(d, "Values of ") {
				blockKey = named(d)
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				k := blockKey
				if k == "" {
					if id, ok := vs.Type.(*ast.Ident); ok {
						k = typeKey[id.Name]
					}
				}
				doc := vs.Doc.Text()
				if g.Lparen == token.NoPos {
					// const X = …: the comment is the declaration's.
					doc = g.Doc.Text()
				}
				if k == "" {
					k = named(doc)
				}
				if k == "" {
					continue
				}
				for _, n := range vs.Names {
					if v, ok := p.consts[n.Name]; ok && !isKey(n.Name, v) {
						out = append(out, valueOf{key: k, keyValue: keyValue{pkg: p, name: n.Name, doc: doc}})
					}
				}
			}
		}
	}
	return out
}

// labelsReference renders the keys, group by group.
func labelsReference(s *site) (string, []string) {
	groups, probs := keyGroups(s)
	ps := problems(probs)
	var b strings.Builder
	for i, g := range groups {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "## %s\n", g.title)
		if g.doc != "" {
			b.WriteString("\n" + text{site: s, pkg: s.keys, page: labelsPage}.markdown(g.doc, &ps) + "\n")
		}
		for _, k := range g.keys {
			fmt.Fprintf(&b, "\n### `%s`\n\n", k.value)
			tx := text{site: s, pkg: s.keys, page: labelsPage, lead: k.name, leadAs: "`" + k.value + "`"}
			b.WriteString(tx.markdown(k.doc, &ps) + "\n")
			if len(k.values) > 0 {
				b.WriteString("\n")
			}
			for _, v := range k.values {
				value := v.pkg.consts[v.name]
				if strings.TrimSpace(v.doc) == "" {
					fmt.Fprintf(&b, "- `%s`\n", value)
					continue
				}
				vt := text{site: s, pkg: v.pkg, page: labelsPage}
				b.WriteString("- " + indent(vt.markdown(v.doc, &ps), "  ") + "\n")
			}
		}
	}
	return b.String(), ps
}
