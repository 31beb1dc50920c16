// Package offline runs claimbridge over manifests: the translate, explain
// and audit commands without a cluster. Every pod template goes through the
// one decision path (decide.Pod), with a fleet when one is given.
package offline

import (
	"context"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/translate"
	"github.com/claimbridge/claimbridge/translate/feasibility"
)

// Item is one object of the input and what the decision made of it.
type Item struct {
	Doc manifest.Document
	// Object is the rewritten object, or the original when not translated.
	Object runtime.Object
	// Pod is the pod template as submitted and Decision what claimbridge
	// decided for it; both nil for objects without a pod template.
	Pod      *corev1.Pod
	Decision *decide.Decision
}

// Name is how reports name the object: "Deployment ml/trainer".
func (it Item) Name() string { return manifest.Describe(it.Doc.Object) }

// Options of an offline run.
type Options struct {
	// Policy to apply. Required.
	Policy *translate.Policy
	// Classes for deference to KEP-5004 (nil: unknown).
	Classes []*resourceapi.DeviceClass
	// Quotas by namespace (nil: unknown).
	Quotas map[string][]*corev1.ResourceQuota
	// Checker and Snapshot check each translation against a fleet: the
	// placement proof and the verdict. Without a Checker only translation
	// decides.
	Checker  *feasibility.Checker
	Snapshot *feasibility.Snapshot
	// ListNodes names the nodes of the placement check in the decisions.
	ListNodes bool
}

// Translate decides for the pod template of every document and rewrites
// those the decision translates. Documents keep their order; the templates
// come back once per namespace and name, in the order first used.
func Translate(ctx context.Context, docs []manifest.Document, opts Options) ([]Item, []*resourceapi.ResourceClaimTemplate, error) {
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
		dec, err := decide.Pod(ctx, decide.Input{Pod: pt.Pod, Policy: opts.Policy, Classes: opts.Classes, Quotas: opts.Quotas[pt.Pod.Namespace],
			Checker: opts.Checker, Snapshot: opts.Snapshot, ListNodes: opts.ListNodes})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", d.Where(), err)
		}
		it.Decision, it.Pod = dec, pt.Pod.DeepCopy()
		if dec.Outcome == translate.OutcomeTranslate {
			res := dec.Translation
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
		if it.Decision == nil {
			continue
		}
		fmt.Fprintf(&b, "%s (%s): %s\n", it.Name(), it.Doc.Where(), it.Decision.Outcome)
		for _, r := range it.Decision.Reasons {
			fmt.Fprintf(&b, "  %-7s %s\n", r.Severity, r.String())
		}
		if pl := it.Decision.Placement; pl != nil && (len(pl.LegacyNodes) > 0 || len(pl.TranslatedNodes) > 0) {
			fmt.Fprintf(&b, "  nodes   as submitted: %s\n", nodeList(pl.LegacyNodes))
			fmt.Fprintf(&b, "  nodes   translated:   %s\n", nodeList(pl.TranslatedNodes))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func nodeList(nodes []string) string {
	if len(nodes) == 0 {
		return "none"
	}
	return strings.Join(nodes, ", ")
}
