// Package offline runs claimbridge over manifests: the translate, explain
// and audit commands, the Helm post-renderer and the KRM function, without a
// cluster. Every pod template of every object — Pods, built-in workloads and
// custom resources, as package podtemplates finds them — goes through the one
// decision path (decide.Pod), with a fleet when one is given.
package offline

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/internal/podtemplates"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// Reason codes of the offline runs.
const (
	// ReasonUnsupported: an object asks for legacy devices where claimbridge
	// cannot write a claim (no pod template it can locate, or one it cannot
	// write back to). The object is kept as it is.
	ReasonUnsupported reason.Code = "Unsupported"
	// ReasonOperatorReadsLimit (declared by decide, which emits it for
	// pods too): the operator that makes the workload reads the template's
	// device count when it sizes it (Kubeflow Trainer's processes per node,
	// KServe's image, LeaderWorkerSet's TPU environment), and has no field
	// where the count could be said instead: translated, the workload would
	// be sized as if it had no devices. The template is kept as it is.
	ReasonOperatorReadsLimit = decide.ReasonOperatorReadsLimit
	// ReasonOperatorCountWritten: the operator reads the count from a field
	// before the device limit (KubeRay's rayStartParams.num-gpus, Kubeflow
	// Trainer's mlPolicy.mpi.numProcPerNode); translation wrote the count
	// there, so that the operator sizes the workload as before.
	ReasonOperatorCountWritten reason.Code = "OperatorCountWritten"
	// ReasonRecordOfPods: the object records what pods of another object
	// ask for (Kueue's Workload: the pod sets of the Job, JobSet… it
	// admits; Karpenter's NodeClaim: the requests of the pods it launched
	// a node for): its device fields are no request; the pods are decided
	// on that object's row and by the webhook, and counting the record too
	// would count their devices twice. Skip.
	ReasonRecordOfPods reason.Code = "RecordOfPods"
	// ReasonTimeSlicingUnchecked: offline without a fleet, the input or the
	// policy shows that the cluster shares devices of a family among pods
	// (time-slicing or MPS: a shared resource, a -SHARED product, a sharing
	// strategy, a sharing rule), and a pod that asks for devices of that
	// family as whole ones is translated: if its nodes share their devices,
	// the device plugin gave it a share, and its claim gives it a device of
	// its own. Nothing without the nodes tells. Warning.
	ReasonTimeSlicingUnchecked reason.Code = "TimeSlicingUnchecked"
)

// Sections of the docs that explain reasons.
const (
	docOperators = "docs/reference/workloads.md#operators-that-size-from-the-device-limit"
	docFound     = "docs/reference/workloads.md#where-pod-templates-are-found"
	docShared    = "docs/reference/policy.md#shared-resources"
	// docNotRequests explains objects whose device fields ask for nothing.
	docNotRequests = "docs/reference/workloads.md#device-fields-that-ask-for-nothing"
)

// Reasons is the catalog of every code an offline run reports: the
// decision's and its own.
func Reasons() reason.Catalog { return catalog }

var catalog = decide.Reasons().With(reason.Catalog{
	ReasonUnsupported: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy,
		"translate the object that holds the pod template (the docs list where claimbridge finds them), or let the webhook translate its pods", docFound),
	ReasonRecordOfPods: reason.NewEntry(reason.SeverityInfo, reason.OutcomeSkip,
		"nothing to do: the pods are decided on the row of the object that makes them (and by the webhook)", docNotRequests),
	ReasonTimeSlicingUnchecked: reason.NewEntry(reason.SeverityWarning, "",
		"run with --fleet (the nodes say whether their GPUs are shared: nvidia.com/gpu.replicas, GKE's gke-max-shared-clients-per-gpu); if this pod's nodes share their GPUs, keep it on the device plugin (claimbridge.io/skip) or ask for the shared resource, which the policy's sharing rule translates", docShared),
	ReasonOperatorCountWritten: reason.NewEntry(reason.SeverityInfo, "",
		"nothing to do: the count the operator read from the device limit is written where it reads it first", docOperators),
})

// Item is one pod template of the input (or one object that asks for
// devices outside any template) and what the decision made of it.
type Item struct {
	Doc manifest.Document
	// Path of the template in the object, "" for a Pod, a built-in
	// workload's only template, or the object itself (Unsupported).
	Path string
	// Rule that found the template (Builtin, Table, Shape), "" when none.
	Rule podtemplates.Rule
	// Pod is the pod template as submitted and Decision what claimbridge
	// decided for it.
	Pod      *corev1.Pod
	Decision *decide.Decision
	// Replicas is how many pods of the workload the template stands for,
	// as its operator counts them; nil when the object's kind says it
	// (built-in workloads) or nothing does (one).
	Replicas *int32
}

// Name is how reports name the item: "Deployment ml/trainer",
// "RayCluster ml/llm: spec.workerGroupSpecs[0].template".
func (it Item) Name() string {
	if it.Path == "" || it.Rule == podtemplates.RuleBuiltin {
		return manifest.Describe(it.Doc.Object)
	}
	return manifest.Describe(it.Doc.Object) + ": " + it.Path
}

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
	// Platform the decisions read (decide.Input.Platform); nil: none.
	Platform *platform.Platform
}

// Translate decides for every pod template of every document and rewrites,
// in place, those the decision translates: the documents' nodes are edited
// (and their Root marked changed). Items come in document order, then
// template order; the templates come back once per namespace and name, in
// the order first used, as [deployed] writes them.
func Translate(ctx context.Context, docs []manifest.Document, opts Options) ([]Item, []*resourceapi.ResourceClaimTemplate, error) {
	var items []Item
	var templates []*resourceapi.ResourceClaimTemplate
	seen := map[string]bool{}
	for i := range docs {
		d := &docs[i]
		if err := manifest.EnsureNode(d); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", d.Where(), err)
		}
		found, err := podtemplates.Find(d.Node)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", d.Where(), err)
		}
		for _, t := range found.Templates {
			path := t.Path
			if t.Rule == podtemplates.RuleBuiltin {
				path = ""
			}
			it := Item{Doc: *d, Path: path, Rule: t.Rule, Pod: t.Pod(), Replicas: t.Replicas}
			queue := queueOf(d.Object)
			dec, err := decidePod(ctx, asCreated(t, queue), opts)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %s: %w", d.Where(), t.Path, err)
			}
			if dec.Outcome == reason.OutcomeTranslate && t.Unsupported != "" {
				dec = unwritable(dec, t)
			}
			var sizing *podtemplates.Sizing
			if dec.Outcome == reason.OutcomeTranslate {
				if sizing = t.Sizing(dec.Translation.Pod); sizing != nil {
					dec = sized(dec, t, sizing)
				}
			}
			it.Decision = dec
			if dec.Outcome == reason.OutcomeTranslate {
				res := dec.Translation
				if res.Pod.Spec.SchedulerName == t.InheritedScheduler && t.Pod().Spec.SchedulerName == "" {
					// The controller sets it; the template stays as written.
					res.Pod.Spec.SchedulerName = ""
				}
				if _, own := t.Pod().Labels[translate.QueueLabel]; queue != "" && !own {
					// The workload's label, not the template's.
					delete(res.Pod.Labels, translate.QueueLabel)
					if len(res.Pod.Labels) == 0 {
						res.Pod.Labels = nil
					}
				}
				if err := t.Set(res.Pod); err != nil {
					return nil, nil, fmt.Errorf("%s: %s: %w", d.Where(), t.Path, err)
				}
				if err := t.Pin(sizing); err != nil {
					return nil, nil, fmt.Errorf("%s: %w", d.Where(), err)
				}
				d.Root.Changed = true
				key := res.Template.Namespace + "/" + res.Template.Name
				if !seen[key] {
					seen[key] = true
					templates = append(templates, deployed(res.Template))
				}
			}
			items = append(items, it)
		}
		if dec := unsupported(found, opts.Policy); dec != nil {
			items = append(items, Item{Doc: *d, Decision: dec})
		}
	}
	if opts.Checker == nil {
		sharingUnchecked(items, opts.Policy)
	}
	return items, templates, nil
}

// sharingUnchecked warns, offline without a fleet, each translated pod that
// asks for whole devices of a family whose devices the input or the policy
// shows to be shared among pods (translate.Policy.SharingShown: a shared
// resource, a -SHARED product, GFD's or GKE's sharing labels, in any pod
// template of the input; SharingConfigured: a sharing rule of the policy).
// Time-slicing and MPS are set on the nodes, which a manifest does not
// show: a plain nvidia.com/gpu: 1 on a node that time-slices its GPUs got
// a share from the device plugin, and would get a GPU of its own from its
// claim. The first pod (in input order) that shows it is named.
func sharingUnchecked(items []Item, p *translate.Policy) {
	shown := p.SharingConfigured()
	for _, it := range items {
		if it.Pod == nil {
			continue
		}
		for f, what := range p.SharingShown(it.Pod) {
			if _, ok := shown[f]; !ok {
				shown[f] = fmt.Sprintf("%s: %s", it.Name(), what)
			}
		}
	}
	if len(shown) == 0 {
		return
	}
	for _, it := range items {
		d := it.Decision
		if d == nil || d.Outcome != reason.OutcomeTranslate {
			continue
		}
		var whole []string
		var why string
		for _, n := range slices.Sorted(maps.Keys(d.Requested)) {
			f, shared, ok := p.ResourceFamily(n)
			if what, in := shown[f]; ok && !shared && in {
				whole = append(whole, string(n))
				if why == "" {
					why = what
				}
			}
		}
		if len(whole) == 0 {
			continue
		}
		d.Reasons = append(d.Reasons, reason.Reason{Code: ReasonTimeSlicingUnchecked, Severity: reason.SeverityWarning, Message: fmt.Sprintf(
			"%s becomes whole devices of the pod's own claim, and the manifests or the policy show that such devices are shared among pods (%s): if this pod's nodes share their GPUs by time-slicing or MPS, the device plugin gives it a share and the translation a GPU of its own, so fewer pods fit; with no fleet (--fleet), nothing shows which nodes share",
			strings.Join(whole, ", "), why)})
	}
}

// asCreated is the template's pod as its controller will create it: with
// the scheduler the controller gives pods whose template names none. A
// template of a workload that Kueue manages (the object carries
// kueue.x-k8s.io/queue-name) is decided as a Kueue-managed pod: Kueue reads
// the workload's pod templates, claims included, to admit it.
func asCreated(t *podtemplates.Template, queue string) *corev1.Pod {
	pod := t.Pod()
	if pod.Spec.SchedulerName == "" && t.InheritedScheduler != "" {
		pod.Spec.SchedulerName = t.InheritedScheduler
	}
	if _, own := pod.Labels[translate.QueueLabel]; queue != "" && !own {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[translate.QueueLabel] = queue
	}
	return pod
}

// queueOf is the Kueue queue an object is submitted to (its label
// kueue.x-k8s.io/queue-name), "" for none or a Pod (whose own label is
// read as any pod's).
func queueOf(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	if _, isPod := obj.(*corev1.Pod); isPod {
		return ""
	}
	return m.GetLabels()[translate.QueueLabel]
}

// decidePod is the one place the offline tools ask for a decision.
func decidePod(ctx context.Context, pod *corev1.Pod, opts Options) (*decide.Decision, error) {
	return decide.Pod(ctx, decide.Input{Pod: pod, Policy: opts.Policy, Classes: opts.Classes, Quotas: opts.Quotas[pod.Namespace],
		Checker: opts.Checker, Snapshot: opts.Snapshot, ListNodes: opts.ListNodes, Platform: opts.Platform})
}

// unwritable keeps legacy a pod whose translation cannot be written back
// where it is (an Argo template whose podSpecPatch cannot be merged into).
// The would-be translation's reasons stay, but for the one that says it
// happened.
func unwritable(dec *decide.Decision, t *podtemplates.Template) *decide.Decision {
	code := t.UnsupportedCode
	if code == "" {
		code = ReasonUnsupported
	}
	r := reason.Reason{Code: code, Severity: reason.SeverityWarning, Field: t.Path, Message: t.Unsupported}
	out := *dec
	out.Outcome = reason.OutcomeKeepLegacy
	out.Reasons = append(slices.DeleteFunc(slices.Clone(dec.Reasons), translatedOnly), r)
	out.Decisive = r
	return &out
}

// translatedOnly: a reason that says what happened to a pod because it was
// translated (Translated) or warns about the translation as it is written
// (ImplicitTolerationsUnknown), moot for a template kept as it is.
func translatedOnly(r reason.Reason) bool {
	return r.Code == translate.ReasonTranslated || r.Code == decide.ReasonImplicitTolerationsUnknown
}

// sized is the decision for a template whose operator reads its device
// count: kept legacy when the operator has no field for the count
// (OperatorReadsLimit, decisive), else translated with the count written
// where the operator reads it first (OperatorCountWritten).
func sized(dec *decide.Decision, t *podtemplates.Template, s *podtemplates.Sizing) *decide.Decision {
	out := *dec
	out.Reasons = slices.Clone(dec.Reasons)
	if s.Keep != "" {
		code := s.Code
		if code == "" {
			code = ReasonOperatorReadsLimit
		}
		r := reason.Reason{Code: code, Severity: reason.SeverityWarning, Field: t.Path,
			Message: s.Keep + "; the template is kept as it is"}
		out.Outcome = reason.OutcomeKeepLegacy
		out.Reasons = append(slices.DeleteFunc(out.Reasons, translatedOnly), r)
		out.Decisive = r
		return &out
	}
	for _, w := range s.Writes {
		out.Reasons = append(out.Reasons, reason.Reason{Code: ReasonOperatorCountWritten, Severity: reason.SeverityInfo, Field: w.Field,
			Message: fmt.Sprintf("set to %s, the count of the device limits that translation removes: %s reads it first", w.Value, s.Operator)})
	}
	return &out
}

// deployed is a template as the offline tools write it: the webhook's
// object (same name, same spec) without the managed-by label, because
// whoever applies it (kubectl, Helm, kustomize, a GitOps controller) owns it,
// and the webhook's collector must not delete what that tool declares.
func deployed(t *resourceapi.ResourceClaimTemplate) *resourceapi.ResourceClaimTemplate {
	t = t.DeepCopy()
	delete(t.Labels, api.LabelManagedBy)
	if len(t.Labels) == 0 {
		t.Labels = nil
	}
	return t
}

// unsupported is the decision for the mapped device requests of an object
// that are outside any template claimbridge can locate, or nil if there are
// none. An object whose device fields are no request (Found.Record) is
// skipped with its reason, and asks for no device.
func unsupported(f *podtemplates.Found, p *translate.Policy) *decide.Decision {
	if f.Record != nil {
		return recorded(f, p)
	}
	var reasons []reason.Reason
	requested := map[corev1.ResourceName]int64{}
	for _, s := range f.Stray {
		if !mapped(p, s.Resource) {
			continue
		}
		reasons = append(reasons, reason.Reason{Code: ReasonUnsupported, Severity: reason.SeverityWarning, Field: s.Field,
			Message: fmt.Sprintf("%s is asked for outside any pod template claimbridge can locate; the object is kept as it is", s.Resource)})
		requested[corev1.ResourceName(s.Resource)] = max(requested[corev1.ResourceName(s.Resource)], s.Count)
	}
	if len(reasons) == 0 {
		return nil
	}
	return &decide.Decision{Outcome: reason.OutcomeKeepLegacy, Reasons: reasons, Decisive: reasons[0], Requested: requested}
}

// recorded is the decision for an object whose device fields are no
// request of pods (Found.Record): Skip, with a reason on each mapped
// resource it names: RecordOfPods for a record of another object's pods,
// NoLegacyResources for a cap; nil when it names none.
func recorded(f *podtemplates.Found, p *translate.Policy) *decide.Decision {
	code := ReasonRecordOfPods
	if f.Record.Kind == podtemplates.RecordCap {
		code = translate.ReasonNoLegacyResources
	}
	var reasons []reason.Reason
	for _, s := range f.Stray {
		if mapped(p, s.Resource) {
			reasons = append(reasons, reason.Reason{Code: code, Severity: reason.SeverityInfo, Field: s.Field, Message: f.Record.Why})
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return &decide.Decision{Outcome: reason.OutcomeSkip, Reasons: reasons, Decisive: reasons[0], Requested: map[corev1.ResourceName]int64{}}
}

// mapped reports whether the policy maps an extended resource (companions
// such as cpu, which never make a pod worth translating alone, excluded).
func mapped(p *translate.Policy, name string) bool {
	for _, r := range p.Spec().Resources {
		if len(r.OnlyWith) > 0 {
			continue
		}
		if base, ok := strings.CutSuffix(r.Name, "*"); ok {
			if strings.HasPrefix(name, base) && name != base {
				return true
			}
		} else if r.Name == name {
			return true
		}
	}
	return false
}

// WriteObjects prints the documents, rewritten where translated, followed by
// the templates.
func WriteObjects(w io.Writer, format string, docs []manifest.Document, templates []*resourceapi.ResourceClaimTemplate) error {
	extra := make([]runtime.Object, 0, len(templates))
	for _, t := range templates {
		extra = append(extra, t)
	}
	return manifest.Write(w, format, docs, extra)
}

// WriteExplain prints, for each pod template, the outcome and every reason.
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
