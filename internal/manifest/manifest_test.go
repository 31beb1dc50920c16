package manifest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// licence is the head of many real manifests: a comment block, a blank line,
// then the document's own comment.
const licence = `# Copyright 2024 The Example Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.

`

// files are real-file-shaped inputs: licence headers, comment-only
// documents, separators with comments, sequences indented under their key
// and not, in one file and in one document.
var files = map[string]string{
	"licence, comment-only documents, a separator with a comment, no final newline": licence +
		"# [START sample]\n" +
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web # the web tier\nspec:\n  template:\n    spec:\n" +
		"      containers:\n      - name: web\n        args:\n          - --port=8080\n        ports:\n        - containerPort: 8080\n" +
		"---\n# Source: chart/templates/disabled.yaml\n" +
		"--- # the service\n" +
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n    - protocol: TCP\n      port: 80\n" +
		"# [END sample]",
	"helm template output": "---\n# Source: chart/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: \"1\"\n" +
		"---\n# Source: chart/templates/empty.yaml\n---\n---\n# Source: chart/templates/null.yaml\nnull\n" +
		"---\n# Source: chart/templates/pod.yaml\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    - name: app\n      image: app:1\n" +
		"      env:\n      - name: A\n        value: \"1\"\n",
	"a List, CRLF line endings, four-space indentation": "apiVersion: v1\r\nkind: List\r\nitems:\r\n-   apiVersion: v1\r\n    kind: ConfigMap\r\n" +
		"    metadata:\r\n        name: c\r\n    data:\r\n        a: b\r\n...\r\n",
}

// TestAnUnchangedFileIsWrittenByteForByte: read and written back with no
// document changed, every file is what it was: comment-only and empty
// documents, separators with their comments, CRLF, no final newline.
func TestAnUnchangedFileIsWrittenByteForByte(t *testing.T) {
	for name, text := range files {
		t.Run(name, func(t *testing.T) {
			docs, err := Read([]string{"-"}, strings.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := Write(&out, "yaml", docs, nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(text, out.String()); diff != "" {
				t.Errorf("written back (-read,+written):\n%s", diff)
			}
		})
	}
}

// TestAChangedDocumentKeepsItsHeadAndIndentation: a document marked changed
// is encoded again from its nodes; one the encoder writes as it was read
// (its own spacing) comes back the same: the licence block above its first
// field as read, each sequence and mapping indented under its key as read.
func TestAChangedDocumentKeepsItsHeadAndIndentation(t *testing.T) {
	cases := map[string]string{
		"licence, then the first field's own comment": licence + "# [START sample]\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
		"sequences indented under their key and not, nested": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n" +
			"  containers:\n    - name: a\n      args:\n      - --x\n      - --y\n      env:\n        - name: A\n          value: \"1\"\n" +
			"    # the sidecar\n    - name: b\n      command:\n      - sh\n  volumes:\n  - name: v\n    emptyDir: {}\n",
		"a mapping indented by four":                     "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  volumes:\n  - name: dshm\n    emptyDir:\n        medium: Memory\n",
		"sequences indented by four":                     "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n      - name: a\n        image: a:1\n",
		"a comment between a key and its indented items": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    # first\n    - name: a\n",
		"a literal block in an indented sequence":        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    - name: a\n      args:\n        - |\n          line one\n            line two\n",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			docs, err := Read([]string{"-"}, strings.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			docs[0].Root.Changed = true
			var out bytes.Buffer
			if err := Write(&out, "yaml", docs, nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(text, out.String()); diff != "" {
				t.Errorf("re-encoded (-read,+written):\n%s", diff)
			}
		})
	}
}

// TestAddedSequencesTakeTheIndentationAroundThem: a sequence translation
// adds is indented like the nearest sequence around it, else like most of
// the document's.
func TestAddedSequencesTakeTheIndentationAroundThem(t *testing.T) {
	text := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    - name: a\n      resources: {}\n" +
		"  volumes:\n    - name: v\n  tolerations:\n  - key: k\n    operator: Exists\n"
	docs, err := Read([]string{"-"}, strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	d := docs[0]
	spec := d.Node.Content[7]
	container := spec.Content[1].Content[0]
	claims := mustNode(t, "claims:\n- name: claimbridge\n  request: a-gpu\n")
	container.Content[3] = claims
	spec.Content = append(spec.Content, mustNode(t, "resourceClaims:\n- name: claimbridge\n").Content...)
	d.Root.Changed = true
	var out bytes.Buffer
	if err := Write(&out, "yaml", docs, nil); err != nil {
		t.Fatal(err)
	}
	want := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    - name: a\n      resources:\n" +
		"        claims:\n          - name: claimbridge\n            request: a-gpu\n" +
		"  volumes:\n    - name: v\n  tolerations:\n  - key: k\n    operator: Exists\n" +
		"  resourceClaims:\n    - name: claimbridge\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("written (-want,+got):\n%s", diff)
	}
}

func mustNode(t *testing.T, text string) *yaml.Node {
	t.Helper()
	_, n, err := parseNode([]byte(text))
	if err != nil || n == nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	return n
}

// TestFilesAndExtraObjectsAreSeparated: files follow each other and the
// extra objects with a separator between them, none doubled.
func TestFilesAndExtraObjectsAreSeparated(t *testing.T) {
	a := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a" // no final newline
	b := "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"
	docsA, err := Read([]string{"-"}, strings.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	docsB, err := Read([]string{"-"}, strings.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Write(&out, "yaml", append(docsA, docsB...), []runtime.Object{docsA[0].Object}); err != nil {
		t.Fatal(err)
	}
	want := a + "\n" + b + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("written (-want,+got):\n%s", diff)
	}
}

// TestSplitDocumentsMirrorsKubectl: documents are cut where kubectl's
// YAMLReader cuts them, and the chunks put together are the input.
func TestSplitDocumentsMirrorsKubectl(t *testing.T) {
	for name, text := range files {
		chunks, err := splitDocuments([]byte(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var joined []byte
		for _, c := range chunks {
			joined = append(append(joined, c.sep...), c.body...)
		}
		if string(joined) != text {
			t.Errorf("%s: the chunks put together differ from the input", name)
		}
	}
	if _, err := splitDocuments([]byte("a: 1\n--- b: 2\n")); err == nil {
		t.Error("a separator followed by content was accepted")
	}
}
