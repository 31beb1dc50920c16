package manifest

import (
	"bytes"
	"errors"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// A changed document is written for a reviewer's diff: what translation did
// not touch should read as it did. The YAML encoder keeps field order, styles
// and comments, but not two things real manifests have:
//
//   - the comment block above the first field (a licence header, a "# Source:"
//     line, a "[START ...]" marker of a sample), which the parser splits between
//     the document and its first key: it is written back as read;
//   - the indentation of each block under its key, which the encoder applies to
//     the whole document (sequence dashes at the key's column, or two spaces in;
//     mappings two spaces in) while files often mix them (kubectl's output
//     indents no sequence, a hand-written container list is indented, its args
//     are not; a sample indents one mapping by four): each block sequence or
//     mapping that is the value of a key keeps the indentation it was read with.
//     One that translation adds takes, for a sequence, the indentation of the
//     nearest sequence around it, else the one most of the document's sequences
//     have; for a mapping, the one most of the document's mappings have.

// encode is the document written from its nodes.
func (r *Root) encode() ([]byte, error) {
	doc := yaml.Node{Kind: yaml.DocumentNode}
	if r.doc != nil {
		doc = *r.doc
	}
	top := r.Node
	preamble := r.preamble()
	if preamble != nil {
		// Written as read: the document's head comment and the first key's.
		doc.HeadComment = ""
		top = shallowCopy(r.Node)
		first := *top.Content[0]
		first.HeadComment = ""
		top.Content[0] = &first
	}
	doc.Content = []*yaml.Node{top}

	seqDefault, mapDefault := r.usualIndents()
	want := map[*yaml.Node]int{}
	blockWants(top, r.indents, seqDefault, mapDefault, want)
	body, err := writeIndents(&doc, want)
	if err != nil {
		// The encoder's own indentation, the document's usual one throughout.
		style := yaml.CompactSequenceStyle
		if seqDefault > 0 {
			style = yaml.WideSequenceStyle
		}
		if body, err = yaml.MarshalWithOptions(&doc, &yaml.EncoderOptions{SeqIndent: style}); err != nil {
			return nil, err
		}
	}
	return append(preamble, body...), nil
}

// preamble is Raw's lines above the first key of the document, when they are
// blank or comments and the first key is still the one read there; else nil.
func (r *Root) preamble() []byte {
	if r.doc == nil || len(r.Node.Content) == 0 || r.Node.Style&yaml.FlowStyle != 0 {
		return nil
	}
	first := r.Node.Content[0]
	if first.Line <= 1 {
		return nil // nothing above it, or a key added by translation
	}
	end := 0
	for range first.Line - 1 {
		i := bytes.IndexByte(r.Raw[end:], '\n')
		if i < 0 {
			return nil
		}
		line := bytes.TrimSpace(r.Raw[end : end+i])
		if len(line) > 0 && line[0] != '#' {
			return nil
		}
		end += i + 1
	}
	if !bytes.HasPrefix(bytes.TrimLeft(r.Raw[end:], " \t"), []byte(first.Value)) {
		return nil
	}
	return bytes.Clone(r.Raw[:end])
}

func shallowCopy(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = append([]*yaml.Node(nil), n.Content...)
	return &c
}

// Indentation of a block under its key, as the encoder writes it with
// compact sequences: a sequence's dashes at the key's column, a mapping's
// keys two spaces in.
const (
	encoderSequenceIndent = 0
	encoderMappingIndent  = 2
)

// blockIndents records, for each block sequence or mapping that is the value
// of a mapping key under n and starts on a later line, how many columns its
// dashes or keys are to the right of the key.
func blockIndents(n *yaml.Node) map[*yaml.Node]int {
	out := map[*yaml.Node]int{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if at := blockStart(v); at != nil && at.Line > k.Line {
					out[v] = at.Column - k.Column
				}
				walk(v)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c)
			}
		}
	}
	walk(n)
	return out
}

// blockStart is the node whose column is a block collection's indentation:
// a block sequence itself (its first dash), a block mapping's first key; nil
// for anything else.
func blockStart(n *yaml.Node) *yaml.Node {
	if n.Style&yaml.FlowStyle != 0 || len(n.Content) == 0 {
		return nil
	}
	switch n.Kind {
	case yaml.SequenceNode:
		return n
	case yaml.MappingNode:
		return n.Content[0]
	}
	return nil
}

// usualIndents are the indentations most of the document's sequences and
// mappings were read with (ties to the encoder's).
func (r *Root) usualIndents() (seq, mapping int) {
	seqs, maps := map[int]int{}, map[int]int{}
	for n, in := range r.indents {
		if n.Kind == yaml.SequenceNode {
			seqs[in]++
		} else {
			maps[in]++
		}
	}
	usual := func(count map[int]int, def int) int {
		best := def
		for in, c := range count {
			if c > count[best] || (c == count[best] && in < best) {
				best = in
			}
		}
		return best
	}
	return usual(seqs, encoderSequenceIndent), usual(maps, encoderMappingIndent)
}

// blockWants gives each block collection that is a mapping value under n the
// indentation it was read with; one that was not read (added or rewritten by
// translation) takes, for a sequence, seq (the nearest read sequence's around
// it, else the usual one), for a mapping, mapping (the usual one).
func blockWants(n *yaml.Node, read map[*yaml.Node]int, seq, mapping int, out map[*yaml.Node]int) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			v := n.Content[i+1]
			inner := seq
			if blockStart(v) != nil {
				in, ok := read[v]
				switch {
				case ok:
				case v.Kind == yaml.SequenceNode:
					in = seq
				default:
					in = mapping
				}
				out[v] = in
				if v.Kind == yaml.SequenceNode {
					inner = in
				}
			}
			blockWants(v, read, inner, mapping, out)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			blockWants(c, read, seq, mapping, out)
		}
	}
}

// writeIndents encodes doc with each block collection of want indented as
// it says: it encodes with the encoder's indentation, then moves the lines of
// each block whose indentation differs (nested blocks move with it), and
// checks that the text still holds the same document. An error means it
// could not; the caller encodes otherwise.
func writeIndents(doc *yaml.Node, want map[*yaml.Node]int) ([]byte, error) {
	compact, err := yaml.MarshalWithOptions(doc, &yaml.EncoderOptions{SeqIndent: yaml.CompactSequenceStyle})
	if err != nil {
		return nil, err
	}
	var reread yaml.Node
	if err := yaml.Unmarshal(compact, &reread); err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(compact), "\n")
	shift := make([]int, len(lines))
	moved := false
	var walk func(a, b *yaml.Node) error
	walk = func(a, b *yaml.Node) error {
		if a.Kind != b.Kind || len(a.Content) != len(b.Content) {
			return errors.New("the encoded document reads differently")
		}
		if a.Kind == yaml.AliasNode {
			return nil
		}
		for i := range a.Content {
			if in, ok := want[a.Content[i]]; ok && a.Kind == yaml.MappingNode && i%2 == 1 {
				key, at := b.Content[i-1], blockStart(b.Content[i])
				if at == nil || at.Line <= key.Line {
					return errors.New("the encoded document reads differently")
				}
				col, by := key.Column-1, in-(at.Column-key.Column)
				if by != 0 {
					lo, hi := blockLines(lines, key.Line-1, col, at.Column-1, at.Line-1)
					for l := lo; l < hi; l++ {
						shift[l] += by
					}
					moved = true
				}
			}
			if err := walk(a.Content[i], b.Content[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(doc, &reread); err != nil {
		return nil, err
	}
	if !moved {
		return compact, nil
	}
	var b strings.Builder
	for i, l := range lines {
		switch by := shift[i]; {
		case strings.TrimSpace(l) == "" || by == 0:
		case by > 0:
			b.WriteString(strings.Repeat(" ", by))
		case indent(l) >= -by:
			l = l[-by:]
		default:
			return nil, errors.New("a block cannot move left of its key")
		}
		b.WriteString(l)
	}
	out := []byte(b.String())
	// The moved text must hold what the encoder wrote.
	same, err := sameDocument(out, compact)
	if err != nil || !same {
		return nil, errors.New("moving the blocks changed the document")
	}
	return out, nil
}

// blockLines is the range [lo, hi) of lines that hold the block whose first
// line is first, its first dash or key at column at, under a key on line
// keyLine at column col: the lines more indented than the key, the block's
// dashes (a sequence at the key's column), and comments at its column above
// its first line or between its items.
func blockLines(lines []string, keyLine, col, at, first int) (lo, hi int) {
	lo, hi = first, first+1
	for lo-1 > keyLine && indent(lines[lo-1]) == at && comment(lines[lo-1]) {
		lo--
	}
	for i := first + 1; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" {
			continue
		}
		switch in := indent(l); {
		case in > col, in == col && at == col && dash(l):
		case in == col && at == col && comment(l) && nextIsDash(lines[i+1:], col):
		default:
			return lo, hi
		}
		hi = i + 1
	}
	return lo, hi
}

// nextIsDash reports whether the first line after comments and blank lines is
// an item at column col.
func nextIsDash(lines []string, col int) bool {
	for _, l := range lines {
		if strings.TrimSpace(l) == "" || comment(l) {
			continue
		}
		return indent(l) == col && dash(l)
	}
	return false
}

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

func comment(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "#") }

func dash(l string) bool {
	t := strings.TrimSpace(l)
	return t == "-" || strings.HasPrefix(t, "- ")
}

// sameDocument reports whether two texts hold the same document, comments
// and styles included: both encoded again the same way give the same text.
func sameDocument(a, b []byte) (bool, error) {
	norm := func(data []byte) ([]byte, error) {
		var n yaml.Node
		if err := yaml.Unmarshal(data, &n); err != nil {
			return nil, err
		}
		return yaml.MarshalWithOptions(&n, &yaml.EncoderOptions{SeqIndent: yaml.CompactSequenceStyle})
	}
	na, err := norm(a)
	if err != nil {
		return false, err
	}
	nb, err := norm(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(na, nb), nil
}
