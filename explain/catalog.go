package explain

import (
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/reason"
)

// Reason codes of the webhook itself (translation, feasibility and the
// decision have theirs).
const (
	// ReasonNotCreate: the request is not a CREATE. Skip.
	ReasonNotCreate reason.Code = "NotCreate"
	// ReasonNotPod: the request is not for a core/v1 Pod. Skip.
	ReasonNotPod reason.Code = "NotPod"
	// ReasonExcludedNS: kube-system or claimbridge's own namespace. Skip.
	ReasonExcludedNS reason.Code = "ExcludedNamespace"
	// ReasonNamespaceOff: the namespace has no claimbridge.io/mode. Skip.
	ReasonNamespaceOff reason.Code = "NamespaceNotOptedIn"
	// ReasonDecodeError: the pod in the request cannot be decoded; it is
	// admitted as submitted.
	ReasonDecodeError reason.Code = "DecodeError"
	// ReasonDecideError: the decision refused its input (no policy, a pod
	// translation calls invalid); the pod is admitted as submitted.
	ReasonDecideError reason.Code = "DecideError"
	// ReasonPatchError: the translated pod could not be encoded into a
	// patch; the request fails and failurePolicy decides.
	ReasonPatchError reason.Code = "PatchError"
	// ReasonTemplateError: the template could not be created or read; the
	// pod stays as submitted.
	ReasonTemplateError reason.Code = "TemplateError"
	// ReasonTemplateConflict: a template of that name exists with another
	// spec or was not made by claimbridge; the pod stays as submitted.
	ReasonTemplateConflict reason.Code = "TemplateConflict"
	// ReasonDryRun: a dry-run request; the template was not created.
	ReasonDryRun reason.Code = "DryRun"
	// ReasonLegacyUnservable: the pod is admitted without translation and
	// asks for an extended resource that no node advertises as much of as
	// it needs (after the switch to DRA, none at all): it would wait Pending
	// forever. A warning, a report reason, a metric and, from the leader,
	// an Event on the pod and its owner; with onUnservable: Deny the pod is
	// refused in enforce namespaces.
	ReasonLegacyUnservable reason.Code = "LegacyUnservable"
)

// Reasons is the catalog of every code the webhook reports: the decision's
// and its own.
func Reasons() reason.Catalog { return catalog }

const (
	docModes     = "docs/tasks/install.md#modes"
	docTemplates = "docs/operate/templates.md#templates"
	docSwitch    = "docs/concepts/cutover.md#after-the-switch-no-silent-pending"
	docExplain   = "docs/operate/explain.md#every-pod-explains-itself"
)

var catalog = decide.Reasons().With(reason.Catalog{
	ReasonNotCreate:        reason.NewEntry(reason.SeverityInfo, reason.OutcomeSkip, "nothing to do: only pod creation is translated", docModes),
	ReasonNotPod:           reason.NewEntry(reason.SeverityInfo, reason.OutcomeSkip, "nothing to do: only core/v1 Pods are translated; check the webhook's rules if this request reached it", docModes),
	ReasonExcludedNS:       reason.NewEntry(reason.SeverityInfo, reason.OutcomeSkip, "nothing to do: kube-system and claimbridge's own namespace are never changed", docModes),
	ReasonNamespaceOff:     reason.NewEntry(reason.SeverityInfo, reason.OutcomeSkip, "label the namespace claimbridge.io/mode=audit (or enforce) to have its pods decided", docModes),
	ReasonDecodeError:      reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "check the client that created the pod: its object does not decode as a core/v1 Pod", docModes),
	ReasonDecideError:      reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "check the webhook's policy (claimbridge policy check) and its log: the decision refused the pod", docModes),
	ReasonPatchError:       reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "report a bug: the translated pod could not be encoded; the webhook's failurePolicy decides the request", docModes),
	ReasonTemplateError:    reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "check the webhook's RBAC on resourceclaimtemplates and the apiserver's health: the template could not be created or read", docTemplates),
	ReasonTemplateConflict: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "delete or rename the ResourceClaimTemplate of that name that claimbridge did not create", docTemplates),
	ReasonDryRun:           reason.NewEntry(reason.SeverityInfo, "", "nothing to do: a dry run creates no template", docModes),
	ReasonLegacyUnservable: reason.NewEntry(reason.SeverityWarning, "", "make the pod translatable (see why it is not), ask for what nodes offer, or restore the device plugin", docSwitch),
	ReasonNotSeenByWebhook: reason.NewEntry(reason.SeverityWarning, reason.OutcomeSkip, "create the pod again (delete it; its controller makes a new one) to have it decided; if pods keep arriving undecided, check that the webhook is reachable and its matchConditions", docExplain),
})
