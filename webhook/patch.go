package webhook

import (
	"maps"
	"reflect"
	"slices"
	"strconv"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// translationPatch is the JSON patch that makes the pod as submitted (as
// decoded from the request) the pod as translated, written from the
// fields a translation changes: the namespace (filled in from the
// request), the annotations (one operation per key, as decisionPatch), the
// node selector, affinity, tolerations and claims of the pod, and the
// resources of each container and init container (each replaced whole).
// It is what a diff of the two pods' JSON (jsonpatch.CreatePatch) gives,
// coarser, without encoding the pod or decoding the request a second
// time. false when the pods differ anywhere else: the caller then diffs
// the whole pods.
//
// JSON Patch's "add" on an object member adds or replaces it (RFC 6902
// 4.1); "remove" needs it there: it is used only for a field the submitted
// pod holds, which the request's JSON therefore has (the decoder matches
// keys case-sensitively and defaults nothing). A submitted pod with no
// metadata or no containers may lack the member an operation adds to: it
// is diffed whole.
func translationPatch(submitted, translated *corev1.Pod) ([]jsonpatch.JsonPatchOperation, bool) {
	// A request without metadata or spec has no member to add to.
	if equality.Semantic.DeepEqual(submitted.ObjectMeta, metav1.ObjectMeta{}) || len(submitted.Spec.Containers) == 0 || !othersEqual(submitted, translated) {
		return nil, false
	}
	var ops []jsonpatch.JsonPatchOperation
	if submitted.Namespace != translated.Namespace {
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/namespace", translated.Namespace))
	}
	ops = append(ops, annotationsPatch(submitted.Annotations, translated.Annotations)...)
	field := func(path string, empty, same bool, value any) {
		switch {
		case same:
		case empty:
			ops = append(ops, jsonpatch.NewOperation("remove", path, nil))
		default:
			ops = append(ops, jsonpatch.NewOperation("add", path, value))
		}
	}
	s, t := &submitted.Spec, &translated.Spec
	field("/spec/nodeSelector", len(t.NodeSelector) == 0, equality.Semantic.DeepEqual(s.NodeSelector, t.NodeSelector), t.NodeSelector)
	field("/spec/affinity", t.Affinity == nil, equality.Semantic.DeepEqual(s.Affinity, t.Affinity), t.Affinity)
	field("/spec/tolerations", len(t.Tolerations) == 0, equality.Semantic.DeepEqual(s.Tolerations, t.Tolerations), t.Tolerations)
	field("/spec/resourceClaims", len(t.ResourceClaims) == 0, equality.Semantic.DeepEqual(s.ResourceClaims, t.ResourceClaims), t.ResourceClaims)
	for _, cs := range []struct {
		path string
		s, t []corev1.Container
	}{{"/spec/initContainers/", s.InitContainers, t.InitContainers}, {"/spec/containers/", s.Containers, t.Containers}} {
		for i := range cs.t {
			if !equality.Semantic.DeepEqual(cs.s[i].Resources, cs.t[i].Resources) {
				// resources is written even when empty: replaced whole.
				ops = append(ops, jsonpatch.NewOperation("add", cs.path+strconv.Itoa(i)+"/resources", cs.t[i].Resources))
			}
		}
	}
	return ops, true
}

// annotationsPatch adds, replaces and removes annotations one key at a
// time; a pod without annotations gets the whole map.
func annotationsPatch(submitted, translated map[string]string) []jsonpatch.JsonPatchOperation {
	if len(submitted) == 0 {
		if len(translated) == 0 {
			return nil
		}
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/metadata/annotations", translated)}
	}
	if len(translated) == 0 {
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("remove", "/metadata/annotations", nil)}
	}
	var ops []jsonpatch.JsonPatchOperation
	for _, k := range slices.Sorted(maps.Keys(translated)) {
		if have, ok := submitted[k]; !ok || have != translated[k] {
			ops = append(ops, jsonpatch.NewOperation("add", "/metadata/annotations/"+jsonPointerEscape(k), translated[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(submitted)) {
		if _, ok := translated[k]; !ok {
			ops = append(ops, jsonpatch.NewOperation("remove", "/metadata/annotations/"+jsonPointerEscape(k), nil))
		}
	}
	return ops
}

// othersEqual: the two pods are equal but for the fields translationPatch
// writes, with as many containers and init containers. reflect.DeepEqual
// is stricter than the API's semantic equality (a quantity written
// another way differs) at a third of its cost here: a pod it finds
// different only so is diffed whole, never patched wrong.
func othersEqual(a, b *corev1.Pod) bool {
	if len(a.Spec.Containers) != len(b.Spec.Containers) || len(a.Spec.InitContainers) != len(b.Spec.InitContainers) {
		return false
	}
	for _, cs := range [][2][]corev1.Container{{a.Spec.Containers, b.Spec.Containers}, {a.Spec.InitContainers, b.Spec.InitContainers}} {
		for i := range cs[0] {
			x, y := cs[0][i], cs[1][i] // copies: the pods' containers stay
			x.Resources, y.Resources = corev1.ResourceRequirements{}, corev1.ResourceRequirements{}
			if !reflect.DeepEqual(x, y) {
				return false
			}
		}
	}
	x, y := *a, *b // copies of the structs; the fields cleared are the copies'
	for _, p := range []*corev1.Pod{&x, &y} {
		p.Namespace, p.Annotations = "", nil
		p.Spec.NodeSelector, p.Spec.Affinity, p.Spec.Tolerations, p.Spec.ResourceClaims = nil, nil, nil, nil
		p.Spec.Containers, p.Spec.InitContainers = nil, nil
	}
	return reflect.DeepEqual(x, y)
}
