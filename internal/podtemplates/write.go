package podtemplates

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// apply changes dst, a YAML node that holds before, so that it holds after,
// touching only what differs: keys are added at the end of their mapping,
// removed, or their values changed in place; lists of the same length are
// changed element by element; anything else is replaced whole. dst may hold
// more than before (fields the typed view does not know): those stay.
func apply(dst *yaml.Node, before, after any) error {
	if reflect.DeepEqual(before, after) {
		return nil
	}
	if dst.Kind == yaml.AliasNode {
		return fmt.Errorf("cannot write through the YAML alias *%s", dst.Value)
	}
	if am, ok := after.(map[string]any); ok {
		bm, _ := before.(map[string]any)
		if isNull(dst) {
			*dst = yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap, HeadComment: dst.HeadComment, LineComment: dst.LineComment, FootComment: dst.FootComment}
		}
		if dst.Kind == yaml.MappingNode {
			return applyMap(dst, bm, am)
		}
	}
	if al, ok := after.([]any); ok {
		bl, _ := before.([]any)
		if dst.Kind == yaml.SequenceNode && len(bl) == len(al) && len(dst.Content) == len(al) {
			for i := range al {
				if err := apply(dst.Content[i], bl[i], al[i]); err != nil {
					return err
				}
			}
			return nil
		}
	}
	n, err := build(after)
	if err != nil {
		return err
	}
	n.HeadComment, n.LineComment, n.FootComment = dst.HeadComment, dst.LineComment, dst.FootComment
	*dst = *n
	return nil
}

func applyMap(dst *yaml.Node, before, after map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if _, ok := after[k]; !ok {
			deleteKey(dst, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		b, hadB := before[k]
		a := after[k]
		if hadB && reflect.DeepEqual(b, a) {
			continue
		}
		v := lookup(dst, k)
		if v == nil {
			if a == nil || isEmpty(a) {
				continue
			}
			v = &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagNull, Value: "null"}
			dst.Content = append(dst.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: k}, v)
			if _, isMap := a.(map[string]any); !isMap {
				b = nil // a new list or scalar is written whole
			}
		}
		if a == nil {
			deleteKey(dst, k)
			continue
		}
		if err := apply(v, b, a); err != nil {
			return err
		}
	}
	return nil
}

// lookup returns the value of key k of a mapping node, or nil.
func lookup(m *yaml.Node, k string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == k {
			return m.Content[i+1]
		}
	}
	return nil
}

func deleteKey(m *yaml.Node, k string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == k {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && (n.Tag == yaml.NodeTagNull || (n.Tag == "" && (n.Value == "" || n.Value == "null" || n.Value == "~")))
}

// isEmpty: typed encoding noise that a manifest never needs (an empty
// mapping such as `resources: {}` or `metadata: {creationTimestamp: null}`).
func isEmpty(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, e := range m {
		if e != nil && !isEmpty(e) {
			return false
		}
	}
	return true
}

// build makes a new node for a generic value, without the nulls and empty
// mappings that typed encoding adds.
func build(v any) (*yaml.Node, error) {
	data, err := sigsyaml.Marshal(prune(v))
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("unexpected YAML for %T", v)
	}
	return doc.Content[0], nil
}

func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e == nil {
				continue
			}
			if m, ok := e.(map[string]any); ok && len(m) > 0 && isEmpty(m) {
				continue
			}
			if k == "resources" && isEmpty(e) {
				continue
			}
			out[k] = prune(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = prune(e)
		}
		return out
	}
	return v
}
