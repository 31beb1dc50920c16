// Package manifest reads Kubernetes manifests (multi-document YAML or JSON,
// files, directories or standard input) as typed objects and as YAML nodes
// that can be edited in place, and writes them back as a reviewer would diff
// them: a file is written whole, in its order, with its document separators
// as they were (a comment after `---` included); documents that were not
// changed, and empty, comment-only and null documents (as `helm template`
// prints them), byte for byte; changed ones re-encoded from their nodes with
// their field order, styles and comments, the comment block above their first
// field (a licence header) as it was, and each sequence indented under its key
// as it was ([Root.Changed]). Empty, comment-only and null documents are not
// objects: they are not read as documents, as kubectl skips them. Errors name
// the file and the document.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// Document is one object read from a manifest.
type Document struct {
	// Source is the file name ("-" for standard input).
	Source string
	// Index is the 0-based position of the document in its file; items of a
	// List share their List's index and are told apart by Item.
	Index int
	// Item is the position inside a List, or -1.
	Item int
	// Object is a typed object for kinds client-go knows, else unstructured.
	// It is not updated when Node is edited.
	Object runtime.Object
	// Node is the object as parsed YAML (a mapping); translation edits it in
	// place. Nil for objects that were not read from a manifest (see
	// [EnsureNode]).
	Node *yaml.Node
	// Root is the document the object was read from; the items of a List
	// share their List's.
	Root *Root
}

// Root is one document of the input.
type Root struct {
	// Raw is the document as read, without the separator line before it.
	Raw []byte
	// Node is the document's top node (a mapping).
	Node *yaml.Node
	// Changed is set by whoever edits a node inside the document; unchanged
	// documents are written back as Raw.
	Changed bool

	// doc is the document node that holds Node (its head and foot
	// comments); nil for a root made from an object or a node.
	doc *yaml.Node
	// indents records, for the block sequences and mappings that are
	// values of a mapping key as read, how far their dashes or keys are
	// indented from the key (see encode.go).
	indents map[*yaml.Node]int
	// file is the file the document was read from; nil for a root made from
	// an object or a node.
	file *file
}

// file is an input file (or standard input) as read: its documents in order,
// those that are not objects included, so that it can be written back whole.
type file struct {
	segments []segment
}

// segment is one document of a file: the separator line before it, as read
// ("--- # comment\n"; empty for a first document without one), its text, and
// its Root when it holds an object.
type segment struct {
	sep, body []byte
	root      *Root
}

// EnsureNode gives a document built from a typed object (a live cluster's)
// a YAML node.
func EnsureNode(d *Document) error {
	if d.Node != nil {
		return nil
	}
	data, err := MarshalYAML(d.Object)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	d.Node = doc.Content[0]
	d.Root = &Root{Raw: data, Node: d.Node, doc: &doc, indents: blockIndents(d.Node)}
	return nil
}

// Where names the document in messages: "file.yaml#2" or "file.yaml#2.items[0]".
func (d Document) Where() string {
	if d.Item >= 0 {
		return fmt.Sprintf("%s#%d.items[%d]", d.Source, d.Index, d.Item)
	}
	return fmt.Sprintf("%s#%d", d.Source, d.Index)
}

// ErrNoInput is returned when no path is given.
var ErrNoInput = errors.New("no input: give -f FILE, DIR or -")

// Read reads every path (a file, a directory walked for .yaml/.yml/.json
// files in name order, or "-" for stdin).
func Read(paths []string, stdin io.Reader) ([]Document, error) {
	if len(paths) == 0 {
		return nil, ErrNoInput
	}
	var docs []Document
	for _, p := range paths {
		if p == "-" {
			d, err := decodeAll("-", stdin)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
			continue
		}
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				return nil, err
			}
			d, err := decodeAll(f, fh)
			if cerr := fh.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
		}
	}
	return docs, nil
}

func expand(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		ext := strings.ToLower(filepath.Ext(path))
		if !d.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			files = append(files, path)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

var decoder = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

func decodeAll(source string, r io.Reader) ([]Document, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	chunks, err := splitDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	f := &file{}
	var docs []Document
	index := 0
	for _, c := range chunks {
		seg := segment{sep: c.sep, body: c.body}
		if len(c.body) == 0 {
			f.segments = append(f.segments, seg)
			continue // two separators in a row: no document for kubectl either
		}
		doc, node, err := parseNode(c.body)
		if err != nil {
			return nil, fmt.Errorf("%s#%d: %w", source, index, err)
		}
		if node == nil {
			f.segments = append(f.segments, seg) // empty, comment-only or null: not a document for kubectl either
			continue
		}
		obj, err := decodeOne(c.body)
		if err != nil {
			return nil, fmt.Errorf("%s#%d: %w", source, index, err)
		}
		root := &Root{Raw: c.body, Node: node, doc: doc, indents: blockIndents(node), file: f}
		seg.root = root
		f.segments = append(f.segments, seg)
		if list, ok := obj.(*corev1.List); ok {
			items := listItems(node)
			for i, item := range list.Items {
				o, err := decodeOne(item.Raw)
				if err != nil {
					return nil, fmt.Errorf("%s#%d.items[%d]: %w", source, index, i, err)
				}
				d := Document{Source: source, Index: index, Item: i, Object: o, Root: root}
				if i < len(items) {
					d.Node = items[i]
				}
				docs = append(docs, d)
			}
		} else {
			docs = append(docs, Document{Source: source, Index: index, Item: -1, Object: obj, Node: node, Root: root})
		}
		index++
	}
	return docs, nil
}

// chunk is one document's text and the separator line before it.
type chunk struct{ sep, body []byte }

// splitDocuments cuts a file into documents where kubectl does
// (k8s.io/apimachinery/pkg/util/yaml's YAMLReader): at every line that
// starts with "---" followed by nothing but blanks or a comment; "---"
// followed by anything else is an error, as there. Unlike YAMLReader it
// keeps the separator lines and every byte of the documents (line endings
// included), so that the chunks put together are the file.
func splitDocuments(data []byte) ([]chunk, error) {
	var out []chunk
	cur := chunk{}
	start := 0
	for start < len(data) {
		end := bytes.IndexByte(data[start:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += start + 1
		}
		line := data[start:end]
		if rest, ok := bytes.CutPrefix(line, []byte("---")); ok {
			trimmed := bytes.TrimSpace(rest)
			if len(trimmed) > 0 && trimmed[0] != '#' {
				return nil, fmt.Errorf("invalid Yaml document separator: %s", trimmed)
			}
			if cur.sep != nil || len(cur.body) > 0 {
				out = append(out, cur)
			}
			cur = chunk{sep: line}
		} else {
			cur.body = data[start-len(cur.body) : end]
		}
		start = end
	}
	if cur.sep != nil || len(cur.body) > 0 {
		out = append(out, cur)
	}
	return out, nil
}

// parseNode parses one document into its document node and top node; nil
// nodes for an empty, comment-only or null document.
func parseNode(raw []byte) (*yaml.Node, *yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil, nil
	}
	n := doc.Content[0]
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, nil, errors.New("document is not an object")
	}
	return &doc, n, nil
}

func listItems(list *yaml.Node) []*yaml.Node {
	for i := 0; i+1 < len(list.Content); i += 2 {
		if list.Content[i].Value == "items" && list.Content[i+1].Kind == yaml.SequenceNode {
			return list.Content[i+1].Content
		}
	}
	return nil
}

func decodeOne(raw []byte) (runtime.Object, error) {
	js, err := sigsyaml.YAMLToJSON(raw)
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := sigsyaml.Unmarshal(js, &tm); err != nil {
		return nil, err
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		return nil, errors.New("object has no apiVersion or kind")
	}
	if tm.Kind == "List" {
		var l corev1.List
		if err := sigsyaml.Unmarshal(js, &l); err != nil {
			return nil, err
		}
		return &l, nil
	}
	obj, gvk, err := decoder.Decode(js, nil, nil)
	if err == nil {
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		return obj, nil
	}
	if runtime.IsNotRegisteredError(err) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, err
		}
		return u, nil
	}
	return nil, err
}

// Describe names an object: "Deployment ml/trainer"; one the API server
// names on creation by its generateName with a star: "Pod ml/train-*".
func Describe(obj runtime.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	m, err := meta(obj)
	if err != nil {
		return kind
	}
	name := m.GetName()
	if name == "" && m.GetGenerateName() != "" {
		name = m.GetGenerateName() + "*"
	}
	if m.GetNamespace() == "" {
		return kind + " " + name
	}
	return kind + " " + m.GetNamespace() + "/" + name
}

func meta(obj runtime.Object) (metav1.Object, error) {
	if m, ok := obj.(metav1.Object); ok {
		return m, nil
	}
	return nil, errors.New("no metadata")
}

// Write prints the documents — each document once, unchanged ones as they
// were read, changed ones re-encoded from their nodes — followed by extra
// objects, as multi-document YAML; or all of them as one JSON List.
func Write(w io.Writer, format string, docs []Document, extra []runtime.Object) error {
	switch format {
	case "json":
		items := make([]any, 0, len(docs)+len(extra))
		for _, d := range docs {
			if d.Node == nil {
				p, err := plain(d.Object)
				if err != nil {
					return err
				}
				items = append(items, p)
				continue
			}
			v, err := nodeJSON(d.Node)
			if err != nil {
				return err
			}
			items = append(items, v)
		}
		for _, o := range extra {
			p, err := plain(o)
			if err != nil {
				return err
			}
			items = append(items, p)
		}
		data, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(data, '\n'))
		return err
	case "yaml", "":
		var out [][]byte
		seen := map[*Root]bool{}
		written := map[*file]bool{}
		for _, d := range docs {
			switch {
			case d.Root == nil:
				data, err := MarshalYAML(d.Object)
				if err != nil {
					return err
				}
				out = append(out, data)
			case d.Root.file != nil:
				if written[d.Root.file] {
					continue
				}
				written[d.Root.file] = true
				data, err := d.Root.file.bytes()
				if err != nil {
					return err
				}
				out = append(out, data)
			case !seen[d.Root]:
				seen[d.Root] = true
				data, err := d.Root.bytes()
				if err != nil {
					return err
				}
				out = append(out, data)
			}
		}
		for _, o := range extra {
			data, err := MarshalYAML(o)
			if err != nil {
				return err
			}
			out = append(out, data)
		}
		var b bytes.Buffer
		for i, data := range out {
			if i > 0 {
				if b.Len() > 0 && b.Bytes()[b.Len()-1] != '\n' {
					b.WriteByte('\n')
				}
				if !startsWithSeparator(data) {
					b.WriteString("---\n")
				}
			}
			b.Write(data)
		}
		_, err := w.Write(b.Bytes())
		return err
	}
	return fmt.Errorf("unknown output format %q (yaml or json)", format)
}

// startsWithSeparator reports whether data begins with a document
// separator line.
func startsWithSeparator(data []byte) bool {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	trimmed := bytes.TrimSpace(rest)
	return ok && (len(trimmed) == 0 || trimmed[0] == '#')
}

// bytes is the file as it is to be written: every document in its place
// after its separator line as read, unchanged ones and those that are not
// objects as read.
func (f *file) bytes() ([]byte, error) {
	var b bytes.Buffer
	for i, s := range f.segments {
		b.Write(s.sep)
		data := s.body
		if s.root != nil {
			var err error
			if data, err = s.root.bytes(); err != nil {
				return nil, err
			}
		}
		b.Write(data)
		if i+1 < len(f.segments) && b.Len() > 0 && b.Bytes()[b.Len()-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes(), nil
}

// bytes is the document as it is to be written: Raw when nothing changed,
// else its node encoded (see encode).
func (r *Root) bytes() ([]byte, error) {
	if !r.Changed {
		return r.Raw, nil
	}
	return r.encode()
}

// nodeJSON is a node as a JSON value (map keys in JSON's sorted order).
func nodeJSON(n *yaml.Node) (any, error) {
	data, err := yaml.Marshal(n)
	if err != nil {
		return nil, err
	}
	js, err := sigsyaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var v any
	err = json.Unmarshal(js, &v)
	return v, err
}

// plain turns an object into a map without the noise typed objects carry
// (null creationTimestamp, empty status), as kubectl would print it.
func plain(o any) (any, error) {
	data, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	prune(m)
	return m, nil
}

func prune(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if (k == "creationTimestamp" && val == nil) || (k == "status" && isEmptyMap(val)) {
				delete(x, k)
				continue
			}
			prune(val)
			if k == "metadata" && isEmptyMap(x[k]) {
				delete(x, k)
			}
		}
	case []any:
		for _, e := range x {
			prune(e)
		}
	}
}

func isEmptyMap(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

// MarshalYAML prints one object as YAML without the noise of typed objects.
func MarshalYAML(o any) ([]byte, error) {
	p, err := plain(o)
	if err != nil {
		return nil, err
	}
	return sigsyaml.Marshal(p)
}

// FromNode makes a document of an object held as a YAML node (a KRM
// function's item), validated as [Read] validates documents. The node is
// edited in place by translation.
func FromNode(source string, index int, n *yaml.Node) (Document, error) {
	raw, err := yaml.Marshal(n)
	if err != nil {
		return Document{}, fmt.Errorf("%s#%d: %w", source, index, err)
	}
	obj, err := decodeOne(raw)
	if err != nil {
		return Document{}, fmt.Errorf("%s#%d: %w", source, index, err)
	}
	return Document{Source: source, Index: index, Item: -1, Object: obj, Node: n, Root: &Root{Raw: raw, Node: n, indents: blockIndents(n)}}, nil
}

// Clone is a deep copy of docs that translation can edit without changing
// docs: the objects, their YAML nodes and the documents they were read
// from (the items of one List keep sharing their copy of it). The copies
// are for deciding, not for writing back: they know no file.
func Clone(docs []Document) []Document {
	nodes := map[*yaml.Node]*yaml.Node{}
	var copyNode func(n *yaml.Node) *yaml.Node
	copyNode = func(n *yaml.Node) *yaml.Node {
		if n == nil {
			return nil
		}
		if c, ok := nodes[n]; ok {
			return c
		}
		c := *n
		nodes[n] = &c
		c.Alias = copyNode(n.Alias)
		if n.Content != nil {
			c.Content = make([]*yaml.Node, len(n.Content))
			for i, k := range n.Content {
				c.Content[i] = copyNode(k)
			}
		}
		return &c
	}
	roots := map[*Root]*Root{}
	out := make([]Document, len(docs))
	for i, d := range docs {
		c := d
		if d.Object != nil {
			c.Object = d.Object.DeepCopyObject()
		}
		if d.Root != nil {
			r, ok := roots[d.Root]
			if !ok {
				r = &Root{Raw: d.Root.Raw, Node: copyNode(d.Root.Node), Changed: d.Root.Changed, doc: copyNode(d.Root.doc), indents: map[*yaml.Node]int{}}
				for n, in := range d.Root.indents {
					r.indents[copyNode(n)] = in
				}
				roots[d.Root] = r
			}
			c.Root = r
		}
		c.Node = copyNode(d.Node)
		out[i] = c
	}
	return out
}
