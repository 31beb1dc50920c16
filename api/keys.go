// Package api holds the names claimbridge writes into the cluster and reads
// back: every claimbridge.io/* label and annotation, the values they take,
// and the apiVersion of claimbridge's own documents. It is the one place
// for them; every other package refers to these constants.
package api

// GroupVersion is the apiVersion of claimbridge's documents: the
// TranslationPolicy and the AuditReport.
const GroupVersion = "claimbridge.io/v1alpha1"

// What a translated pod refers to, and how claimbridge marks what it creates.
const (
	// ClaimName is the pod-level claim entry added to translated pods.
	ClaimName = "claimbridge"
	// TemplatePrefix starts the name of every generated template.
	TemplatePrefix = "claimbridge-"
	// LabelManagedBy marks templates claimbridge created.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "claimbridge"
)

// Labels of a namespace.
const (
	// LabelMode opts a namespace in: "enforce" or "audit" (Mode).
	LabelMode = "claimbridge.io/mode"
	// LabelWhenDRABusy sets the namespace's rule for pods DRA serves only
	// once devices free up ("KeepLegacy" or "Wait").
	LabelWhenDRABusy = "claimbridge.io/when-dra-busy"
	// LabelOnUnservable sets the namespace's rule for pods kept as
	// submitted that no node can serve ("Admit" or "Deny").
	LabelOnUnservable = "claimbridge.io/on-unservable"
	// LabelRepair opts a namespace into repairs of stranded pods:
	// RepairRecreate deletes a stranded pod that a controller owns, so that
	// the controller creates it again and the webhook decides again.
	LabelRepair = "claimbridge.io/repair"
)

// Mode is a namespace's claimbridge mode, from its label LabelMode.
type Mode string

// Modes.
const (
	ModeEnforce Mode = "enforce"
	ModeAudit   Mode = "audit"
	ModeOff     Mode = "off"
)

// RepairRecreate is the LabelRepair value that recreates stranded pods.
const RepairRecreate = "Recreate"

// Annotations of a pod.
const (
	// AnnotationSkip set to "true" on a pod opts it out.
	AnnotationSkip = "claimbridge.io/skip"
	// AnnotationTemplate on a translated pod names its template.
	AnnotationTemplate = "claimbridge.io/template"
	// AnnotationDecision and AnnotationReason: the decision a pod carries,
	// written by admission on every pod it decides in an opted-in namespace
	// (both modes): what was done (a Decision* value) and the reason code
	// that decided. The leader's explain controller turns them into Events
	// on the pod; the live report and the PolicyReports read them back, so
	// they survive a restart of the webhook.
	AnnotationDecision = "claimbridge.io/decision"
	AnnotationReason   = "claimbridge.io/reason"
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
	// AnnotationSubmitted on a translated pod keeps what the device plugin's
	// side reads of the pod as submitted — its node selector, affinity,
	// tolerations and the containers' resources — so that a translated pod
	// still Pending can be judged against the device-plugin nodes.
	AnnotationSubmitted = "claimbridge.io/submitted"
)

// Annotations of a ResourceSlice.
const (
	// AnnotationUnknownAttributes on a ResourceSlice lists, comma-separated
	// and qualified ("gpu.nvidia.com/driverVersion",
	// "resource.kubernetes.io/pcieRoot"), the attributes and capacities its
	// driver will publish on its devices that the slice leaves out because
	// their values are not known: the slices of a forecast fleet
	// (claimbridge audit --forecast), made from the nodes' labels before the
	// driver runs. A check whose answer depends on one of them is Unknown,
	// never NeverFits.
	AnnotationUnknownAttributes = "claimbridge.io/unknown-attributes"
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
