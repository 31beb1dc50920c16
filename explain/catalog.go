package explain

import (
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/translate"
)

// Reason codes of the webhook itself (translation, feasibility and the
// decision have theirs).
const (
	// ReasonNotCreate: the request is not a CREATE. Skip.
	ReasonNotCreate translate.ReasonCode = "NotCreate"
	// ReasonNotPod: the request is not for a core/v1 Pod. Skip.
	ReasonNotPod translate.ReasonCode = "NotPod"
	// ReasonExcludedNS: kube-system or claimbridge's own namespace. Skip.
	ReasonExcludedNS translate.ReasonCode = "ExcludedNamespace"
	// ReasonNamespaceOff: the namespace has no claimbridge.io/mode. Skip.
	ReasonNamespaceOff translate.ReasonCode = "NamespaceNotOptedIn"
	// ReasonDecodeError: the pod in the request cannot be decoded; it is
	// admitted as submitted.
	ReasonDecodeError translate.ReasonCode = "DecodeError"
	// ReasonDecideError: the decision refused its input (no policy, a pod
	// translation calls invalid); the pod is admitted as submitted.
	ReasonDecideError translate.ReasonCode = "DecideError"
	// ReasonPatchError: the translated pod could not be encoded into a
	// patch; the request fails and failurePolicy decides.
	ReasonPatchError translate.ReasonCode = "PatchError"
	// ReasonTemplateError: the template could not be created or read; the
	// pod stays as submitted.
	ReasonTemplateError translate.ReasonCode = "TemplateError"
	// ReasonTemplateConflict: a template of that name exists with another
	// spec or was not made by claimbridge; the pod stays as submitted.
	ReasonTemplateConflict translate.ReasonCode = "TemplateConflict"
	// ReasonDryRun: a dry-run request; the template was not created.
	ReasonDryRun translate.ReasonCode = "DryRun"
	// ReasonLegacyUnservable: the pod is admitted without translation and
	// asks for an extended resource that no node advertises as much of as
	// it needs (after the switch to DRA, none at all): it would wait Pending
	// forever. A warning, a report reason, a metric and, from the leader,
	// an Event on the pod and its owner; with onUnservable: Deny the pod is
	// refused in enforce namespaces.
	ReasonLegacyUnservable translate.ReasonCode = "LegacyUnservable"
)

// Reasons is the catalog of every code the webhook reports: the decision's
// and its own.
func Reasons() translate.Catalog { return catalog }

const (
	docModes     = "docs/tasks/install.md#modes"
	docTemplates = "docs/operate/templates.md#templates"
	docSwitch    = "docs/concepts/cutover.md#after-the-switch-no-silent-pending"
	docExplain   = "docs/operate/explain.md#every-pod-explains-itself"
)

var catalog = decide.Reasons().With(translate.Catalog{
	ReasonNotCreate:        translate.NewEntry(translate.SeverityInfo, translate.OutcomeSkip, "nothing to do: only pod creation is translated", docModes),
	ReasonNotPod:           translate.NewEntry(translate.SeverityInfo, translate.OutcomeSkip, "nothing to do: only core/v1 Pods are translated; check the webhook's rules if this request reached it", docModes),
	ReasonExcludedNS:       translate.NewEntry(translate.SeverityInfo, translate.OutcomeSkip, "nothing to do: kube-system and claimbridge's own namespace are never changed", docModes),
	ReasonNamespaceOff:     translate.NewEntry(translate.SeverityInfo, translate.OutcomeSkip, "label the namespace claimbridge.io/mode=audit (or enforce) to have its pods decided", docModes),
	ReasonDecodeError:      translate.NewEntry(translate.SeverityWarning, translate.OutcomeKeepLegacy, "check the client that created the pod: its object does not decode as a core/v1 Pod", docModes),
	ReasonDecideError:      translate.NewEntry(translate.SeverityWarning, translate.OutcomeKeepLegacy, "check the webhook's policy (claimbridge policy check) and its log: the decision refused the pod", docModes),
	ReasonPatchError:       translate.NewEntry(translate.SeverityWarning, translate.OutcomeKeepLegacy, "report a bug: the translated pod could not be encoded; the webhook's failurePolicy decides the request", docModes),
	ReasonTemplateError:    translate.NewEntry(translate.SeverityWarning, translate.OutcomeKeepLegacy, "check the webhook's RBAC on resourceclaimtemplates and the apiserver's health: the template could not be created or read", docTemplates),
	ReasonTemplateConflict: translate.NewEntry(translate.SeverityWarning, translate.OutcomeKeepLegacy, "delete or rename the ResourceClaimTemplate of that name that claimbridge did not create", docTemplates),
	ReasonDryRun:           translate.NewEntry(translate.SeverityInfo, "", "nothing to do: a dry run creates no template", docModes),
	ReasonLegacyUnservable: translate.NewEntry(translate.SeverityWarning, "", "make the pod translatable (see why it is not), ask for what nodes offer, or restore the device plugin", docSwitch),
	ReasonNotSeenByWebhook: translate.NewEntry(translate.SeverityWarning, translate.OutcomeSkip, "create the pod again (delete it; its controller makes a new one) to have it decided; if pods keep arriving undecided, check that the webhook is reachable and its matchConditions", docExplain),
})
