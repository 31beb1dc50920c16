// Package manifest reads Kubernetes manifests (multi-document YAML or JSON,
// files, directories or standard input) and gives access to the pod
// templates of Pods and workloads. Errors name the file and the document.
package manifest

import (
	"bufio"
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

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
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
	Object runtime.Object
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
	reader := utilyaml.NewYAMLReader(bufio.NewReaderSize(r, 64*1024))
	var docs []Document
	for index := 0; ; index++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s#%d: %w", source, index, err)
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			index--
			continue
		}
		obj, err := decodeOne(raw)
		if err != nil {
			return nil, fmt.Errorf("%s#%d: %w", source, index, err)
		}
		if list, ok := obj.(*corev1.List); ok {
			for i, item := range list.Items {
				o, err := decodeOne(item.Raw)
				if err != nil {
					return nil, fmt.Errorf("%s#%d.items[%d]: %w", source, index, i, err)
				}
				docs = append(docs, Document{Source: source, Index: index, Item: i, Object: o})
			}
			continue
		}
		docs = append(docs, Document{Source: source, Index: index, Item: -1, Object: obj})
	}
}

func stripComments(b []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

func decodeOne(raw []byte) (runtime.Object, error) {
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(js, &tm); err != nil {
		return nil, err
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		return nil, errors.New("object has no apiVersion or kind")
	}
	if tm.Kind == "List" {
		var l corev1.List
		if err := yaml.Unmarshal(js, &l); err != nil {
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

// PodTemplate gives access to the pod (or pod template) inside an object.
type PodTemplate struct {
	// Pod is a Pod built from the template: the template's metadata and
	// spec, and the namespace of the object.
	Pod *corev1.Pod
	// Set writes a translated pod back into the object.
	Set func(*corev1.Pod)
}

// PodOf returns the pod template of a Pod or workload, or false for other
// kinds.
func PodOf(obj runtime.Object) (PodTemplate, bool) {
	fromTemplate := func(ns string, t *corev1.PodTemplateSpec) PodTemplate {
		pod := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: *t.ObjectMeta.DeepCopy(),
			Spec:       *t.Spec.DeepCopy(),
		}
		if pod.Namespace == "" {
			pod.Namespace = ns
		}
		return PodTemplate{Pod: pod, Set: func(p *corev1.Pod) {
			meta := *p.ObjectMeta.DeepCopy()
			meta.Namespace = t.Namespace
			t.ObjectMeta = meta
			t.Spec = *p.Spec.DeepCopy()
		}}
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return PodTemplate{Pod: o.DeepCopy(), Set: func(p *corev1.Pod) { *o = *p.DeepCopy() }}, true
	case *appsv1.Deployment:
		return fromTemplate(o.Namespace, &o.Spec.Template), true
	case *appsv1.StatefulSet:
		return fromTemplate(o.Namespace, &o.Spec.Template), true
	case *appsv1.DaemonSet:
		return fromTemplate(o.Namespace, &o.Spec.Template), true
	case *appsv1.ReplicaSet:
		return fromTemplate(o.Namespace, &o.Spec.Template), true
	case *batchv1.Job:
		return fromTemplate(o.Namespace, &o.Spec.Template), true
	case *batchv1.CronJob:
		return fromTemplate(o.Namespace, &o.Spec.JobTemplate.Spec.Template), true
	case *corev1.ReplicationController:
		if o.Spec.Template == nil {
			return PodTemplate{}, false
		}
		return fromTemplate(o.Namespace, o.Spec.Template), true
	case *corev1.PodTemplate:
		return fromTemplate(o.Namespace, &o.Template), true
	}
	return PodTemplate{}, false
}

// Describe names an object: "Deployment ml/trainer".
func Describe(obj runtime.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	m, err := meta(obj)
	if err != nil {
		return kind
	}
	if m.GetNamespace() == "" {
		return kind + " " + m.GetName()
	}
	return kind + " " + m.GetNamespace() + "/" + m.GetName()
}

func meta(obj runtime.Object) (metav1.Object, error) {
	if m, ok := obj.(metav1.Object); ok {
		return m, nil
	}
	return nil, errors.New("no metadata")
}

// Write prints objects as multi-document YAML or as a JSON List.
func Write(w io.Writer, format string, objs []runtime.Object) error {
	switch format {
	case "json":
		items := make([]runtime.RawExtension, 0, len(objs))
		for _, o := range objs {
			items = append(items, runtime.RawExtension{Object: o})
		}
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
		data, err := jsonIndent(list)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case "yaml", "":
		for i, o := range objs {
			data, err := MarshalYAML(o)
			if err != nil {
				return err
			}
			if i > 0 {
				if _, err := io.WriteString(w, "---\n"); err != nil {
					return err
				}
			}
			if _, err := w.Write(data); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown output format %q (yaml or json)", format)
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

func jsonIndent(v any) ([]byte, error) {
	p, err := plainList(v)
	if err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func plainList(v any) (any, error) {
	list, ok := v.(map[string]any)
	if !ok {
		return plain(v)
	}
	items, _ := list["items"].([]runtime.RawExtension)
	out := make([]any, 0, len(items))
	for _, it := range items {
		p, err := plain(it.Object)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": out}, nil
}

// MarshalYAML prints one object as YAML without the noise of typed objects.
func MarshalYAML(o any) ([]byte, error) {
	p, err := plain(o)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(p)
}
