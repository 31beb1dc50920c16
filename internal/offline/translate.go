// Package offline runs claimbridge over manifests: the translate and audit
// commands without a cluster.
package offline

import (
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/translate"
)

// Item is one object of the input and what translation made of it.
type Item struct {
	Doc manifest.Document
	// Object is the rewritten object, or the original when not translated.
	Object runtime.Object
	// Pod is the translated pod (template) and Result the decision; both nil
	// for objects without a pod template.
	Pod    *corev1.Pod
	Result *translate.Result
}

// Name is how reports name the object: "Deployment ml/trainer".
func (it Item) Name() string { return manifest.Describe(it.Doc.Object) }

// Options of an offline translation.
type Options struct {
	// Policy to apply. Required.
	Policy *translate.Policy
	// Classes for deference to KEP-5004 (nil: unknown).
	Classes []*resourceapi.DeviceClass
	// Quotas by namespace (nil: unknown).
	Quotas map[string][]*corev1.ResourceQuota
}

// Translate translates the pod template of every document. Documents keep
// their order; the templates come back once per namespace and name, in the
// order first used.
func Translate(docs []manifest.Document, opts Options) ([]Item, []*resourceapi.ResourceClaimTemplate, error) {
	var items []Item
	var templates []*resourceapi.ResourceClaimTemplate
	seen := map[string]bool{}
	for _, d := range docs {
		obj := d.Object.DeepCopyObject()
		it := Item{Doc: d, Object: obj}
		pt, ok := manifest.PodOf(obj)
		if !ok {
			items = append(items, it)
			continue
		}
		res, err := translate.Pod(translate.Input{Pod: pt.Pod, Policy: opts.Policy, Classes: opts.Classes, Quotas: opts.Quotas[pt.Pod.Namespace]})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", d.Where(), err)
		}
		it.Result, it.Pod = res, res.Pod
		if res.Outcome == translate.OutcomeTranslate {
			pt.Set(res.Pod)
			key := res.Template.Namespace + "/" + res.Template.Name
			if !seen[key] {
				seen[key] = true
				templates = append(templates, res.Template)
			}
		}
		items = append(items, it)
	}
	return items, templates, nil
}

// WriteObjects prints the rewritten objects followed by the templates.
func WriteObjects(w io.Writer, format string, items []Item, templates []*resourceapi.ResourceClaimTemplate) error {
	objs := make([]runtime.Object, 0, len(items)+len(templates))
	for _, it := range items {
		objs = append(objs, it.Object)
	}
	for _, t := range templates {
		objs = append(objs, t)
	}
	return manifest.Write(w, format, objs)
}

// WriteExplain prints, for each object with a pod template, the outcome and
// every reason.
func WriteExplain(w io.Writer, items []Item) error {
	var b strings.Builder
	for _, it := range items {
		if it.Result == nil {
			continue
		}
		fmt.Fprintf(&b, "%s (%s): %s\n", it.Name(), it.Doc.Where(), it.Result.Outcome)
		for _, r := range it.Result.Reasons {
			fmt.Fprintf(&b, "  %-7s %s\n", r.Severity, r.String())
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
