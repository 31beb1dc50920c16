// Package api holds the names claimbridge writes into the cluster and reads
// back: every claimbridge.io/* label and annotation, the values they take,
// and the apiVersion of claimbridge's own documents. It is the one place
// for them; every other package refers to these constants.
//
// The comments are the reference of the labels and annotations:
// docs/reference/labels.md is generated from them (go run ./hack/apidocs),
// and a test fails when the page and the comments differ. Keys are named
// Label… and Annotation…, in blocks whose comment says what they are on
// ("Labels of a namespace."); a value names its key in the comment of its
// block ("Values of AnnotationDecision."), of its type, or its own.
package api

// GroupVersion is the apiVersion of claimbridge's documents: the
// TranslationPolicy and the AuditReport.
const GroupVersion = "claimbridge.io/v1alpha1"

// What a translated pod refers to.
const (
	// ClaimName is the pod-level claim entry added to translated pods.
	ClaimName = "claimbridge"
	// TemplatePrefix starts the name of every generated template.
	TemplatePrefix = "claimbridge-"
)

// Labels of a namespace. You set them; claimbridge reads them and writes
// none. The webhook sees only the pods of namespaces labelled LabelMode
// "enforce" or "audit"; the other labels change what it decides there.
const (
	// LabelMode opts a namespace in (docs/tasks/install.md#modes). A value
	// other than ModeEnforce and ModeAudit, or none, leaves the namespace
	// out: the webhook's namespaceSelector keeps its pods from it.
	LabelMode = "claimbridge.io/mode"
	// LabelWhenDRABusy sets the namespace's rule for pods that DRA can
	// serve only once devices free up while a device-plugin node has room
	// for them now (docs/concepts/dra-busy.md#when-dra-is-busy). It wins
	// over the policy's whenDRABusy (docs/reference/policy.md#policyspec);
	// without it, or with another value, the policy's rule applies.
	LabelWhenDRABusy = "claimbridge.io/when-dra-busy"
	// LabelOnUnservable sets the namespace's rule for pods kept as
	// submitted that no node can serve
	// (docs/concepts/cutover.md#after-the-switch-no-silent-pending). It
	// wins over the policy's onUnservable
	// (docs/reference/policy.md#policyspec); without it, or with another
	// value, the policy's rule applies.
	LabelOnUnservable = "claimbridge.io/on-unservable"
	// LabelRepair opts a namespace into repairs of stranded pods: translated
	// pods that wait for their claim while a device-plugin node has room for
	// them as submitted (docs/concepts/dra-busy.md#when-dra-is-busy).
	// Without it, or with another value, a stranded pod is only told (an
	// Event and a metric). With the chart, the repair also needs
	// "controller.repair: true", which lets claimbridge delete pods.
	LabelRepair = "claimbridge.io/repair"
)

// Mode is a namespace's claimbridge mode, from its label LabelMode.
type Mode string

// Modes.
const (
	// ModeEnforce: pods are translated where the fleet's DRA devices can
	// serve them; the others are admitted as submitted, with a warning that
	// says why.
	ModeEnforce Mode = "enforce"
	// ModeAudit: pods are admitted as submitted; the decision is written in
	// their annotations, and the would-be change is an admission warning,
	// an Event and a row of the report.
	ModeAudit Mode = "audit"
	// ModeOff: the namespace is not opted in, which any value but
	// ModeEnforce and ModeAudit says too.
	ModeOff Mode = "off"
)

// RepairRecreate is the LabelRepair value that deletes a stranded pod that
// a controller owns, so that the controller creates it again and the
// webhook decides again; a pod no controller owns is only told.
const RepairRecreate = "Recreate"

// Annotations of a pod. You set AnnotationSkip; claimbridge writes the
// others, on the pods of opted-in namespaces.
const (
	// AnnotationSkip set to "true" on a pod opts it out: it is admitted as
	// submitted, never translated and never refused (it is still told when
	// no node can serve it).
	AnnotationSkip = "claimbridge.io/skip"
	// AnnotationTemplate on a translated pod names its
	// ResourceClaimTemplate; a pod that carries it is translated already
	// and is left alone.
	AnnotationTemplate = "claimbridge.io/template"
	// AnnotationDecision is the decision a pod carries, written by
	// admission on every pod it decides in an opted-in namespace (both
	// modes): what was done (DecisionTranslated, DecisionWouldTranslate,
	// DecisionKeptLegacy or DecisionSkipped). The leader's explain
	// controller turns it into an Event on the pod; the live report and the
	// PolicyReports read it back, so it survives a restart of the webhook
	// (docs/operate/explain.md#annotations).
	AnnotationDecision = "claimbridge.io/decision"
	// AnnotationReason goes with AnnotationDecision: the reason code that
	// decided (docs/reference/reasons.md), e.g. "Translated", "Infeasible",
	// "OptedOut".
	AnnotationReason = "claimbridge.io/reason"
	// AnnotationDecisionMessage is the one-line account of the decision that
	// goes with AnnotationDecision and AnnotationReason: the reason code, its
	// remedy and the details, the template when translated (at most 1000
	// bytes). The Event on the pod carries it; optional for readers.
	AnnotationDecisionMessage = "claimbridge.io/decision-message"
	// AnnotationAdmission on a translated pod identifies its admission (the
	// AdmissionReview's UID): the replica that admitted it holds its devices
	// under that id until the pod is bound, and any replica that sees the
	// pod pending in its informer without holding them takes them over.
	AnnotationAdmission = "claimbridge.io/admission"
	// AnnotationDevicePluginHold on a pod kept as submitted because DRA
	// was busy while the device plugin had room (DRABusyLegacyFree)
	// identifies its admission: the replica that admitted it counts the
	// room it takes on the device plugin until the pod shows up in its
	// informer, so that the pods after it in a burst are not all kept for
	// the same free GPUs.
	AnnotationDevicePluginHold = "claimbridge.io/device-plugin-hold"
	// AnnotationSubmitted on a translated pod keeps what the device plugin's
	// side reads of the pod as submitted — its node selector, affinity,
	// tolerations and the containers' resources — so that a translated pod
	// still Pending can be judged against the device-plugin nodes.
	AnnotationSubmitted = "claimbridge.io/submitted"
)

// Annotations of a ResourceSlice. Only the slices of a forecast fleet
// carry them.
const (
	// AnnotationUnknownAttributes on a ResourceSlice lists, comma-separated
	// and qualified ("gpu.nvidia.com/driverVersion",
	// "resource.kubernetes.io/pcieRoot"), the attributes and capacities its
	// driver will publish on its devices that the slice leaves out because
	// their values are not known: the slices of a forecast fleet
	// (`claimbridge audit --forecast`, written with --forecast-out), made
	// from the nodes' labels before the driver runs. A check whose answer
	// depends on one of them is "Unknown" (AttributesUnknown), never
	// "NeverFits" (docs/concepts/cutover.md#forecast-the-switch-to-dra).
	// Edit the slice where you know better: add the attribute to the
	// devices and drop it from the annotation.
	AnnotationUnknownAttributes = "claimbridge.io/unknown-attributes"
)

// Labels of a ResourceClaimTemplate that claimbridge created.
const (
	// LabelManagedBy, set to ManagedByValue, marks the templates
	// claimbridge created for translated pods: those it watches, and
	// deletes once no pod has referred to one for the time `claimbridge
	// serve --template-gc-grace` says (docs/operate/templates.md#templates).
	// Written by claimbridge.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "claimbridge"
)

// Prefix starts every label and annotation claimbridge writes.
const Prefix = "claimbridge.io/"

// Values of AnnotationDecision.
const (
	// DecisionTranslated: enforce mode, the pod references a claimbridge
	// ResourceClaimTemplate (its name in AnnotationTemplate).
	DecisionTranslated = "Translated"
	// DecisionWouldTranslate: audit mode, the pod would have been translated.
	DecisionWouldTranslate = "WouldTranslate"
	// DecisionKeptLegacy: the pod keeps its device-plugin resources.
	DecisionKeptLegacy = "KeptLegacy"
	// DecisionSkipped: nothing to decide (opted out, translated already, …).
	DecisionSkipped = "Skipped"
)
