package translate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Outcome is what translation decided for a pod.
type Outcome string

// Outcomes.
const (
	// OutcomeTranslate: the pod was rewritten to use a ResourceClaimTemplate.
	OutcomeTranslate Outcome = "Translate"
	// OutcomeKeepLegacy: the pod asks for legacy devices but stays as it is
	// (it cannot or should not be translated); Reasons say why.
	OutcomeKeepLegacy Outcome = "KeepLegacy"
	// OutcomeSkip: the pod is not claimbridge's business (opted out, already
	// translated, mirror pod, no legacy device request).
	OutcomeSkip Outcome = "Skip"
)

// Severity of a reason. Warnings are worth a human's attention (they become
// admission warnings); Info records a decision.
type Severity string

// Severities.
const (
	SeverityInfo    Severity = "Info"
	SeverityWarning Severity = "Warning"
)

// ReasonCode is a stable PascalCase code, usable as a metrics label.
type ReasonCode string

// Reason codes. Each one is documented where it is produced and has an
// entry in the catalog (catalog.go); the CLI's explain output and the
// webhook's warnings, Events and metrics all use them.
const (
	ReasonTranslated                    ReasonCode = "Translated"
	ReasonOptedOut                      ReasonCode = "OptedOut"
	ReasonMirrorPod                     ReasonCode = "MirrorPod"
	ReasonAlreadyTranslated             ReasonCode = "AlreadyTranslated"
	ReasonNoLegacyResources             ReasonCode = "NoLegacyResources"
	ReasonUnmappedResource              ReasonCode = "UnmappedResource"
	ReasonInvalidQuantity               ReasonCode = "InvalidQuantity"
	ReasonRequestLimitMismatch          ReasonCode = "RequestLimitMismatch"
	ReasonTooManyDevices                ReasonCode = "TooManyDevices"
	ReasonTooManyRequests               ReasonCode = "TooManyRequests"
	ReasonTooManyAlternatives           ReasonCode = "TooManyAlternatives"
	ReasonAlternativesDropped           ReasonCode = "AlternativesDropped"
	ReasonDeferToExtendedResource       ReasonCode = "DeferToExtendedResource"
	ReasonExtendedResourceMappedByClass ReasonCode = "ExtendedResourceMappedByClass"
	ReasonQuotaNotCovered               ReasonCode = "QuotaNotCovered"
	ReasonNodeLabelTranslated           ReasonCode = "NodeLabelTranslated"
	ReasonNodeLabelImplied              ReasonCode = "NodeLabelImplied"
	ReasonNodeLabelDropped              ReasonCode = "NodeLabelDropped"
	ReasonNodeLabelKept                 ReasonCode = "NodeLabelKept"
	ReasonNodeLabelUntranslatable       ReasonCode = "NodeLabelUntranslatable"
	ReasonAffinityNotTranslatable       ReasonCode = "AffinityNotTranslatable"
	ReasonFallbackApplied               ReasonCode = "FallbackApplied"
	ReasonAlignmentApplied              ReasonCode = "AlignmentApplied"
	ReasonAlignmentNotApplied           ReasonCode = "AlignmentNotApplied"
	ReasonInitContainerSharesDevices    ReasonCode = "InitContainerSharesDevices"
	ReasonInitContainerHoldsDevices     ReasonCode = "InitContainerHoldsDevices"
	ReasonCompanionNotAdded             ReasonCode = "CompanionNotAdded"
	ReasonInvalidSelector               ReasonCode = "InvalidSelector"
)

// Reason codes of the rules that keep a pod from being stranded: a
// translated pod needs a scheduler that allocates its claim, every resource
// it asks for, and the sharing it relied on (scheduling.go, capacity.go,
// shared.go, tolerations.go).
const (
	// ReasonNodeNamePreset: spec.nodeName is set at creation; no scheduler
	// runs, so no one would allocate the claim. Skip.
	ReasonNodeNamePreset ReasonCode = "NodeNamePreset"
	// ReasonSchedulerNotListed: the pod's schedulerName is not in the
	// policy's schedulers, the schedulers known to allocate DRA claims. Skip.
	ReasonSchedulerNotListed ReasonCode = "SchedulerNotListed"
	// ReasonUnmappedCompanionResource: the pod asks for an extended resource
	// the policy does not map, in the domain of one it does (HAMi's
	// nvidia.com/gpumem beside nvidia.com/gpu); translated, the device
	// would lose it and no node would offer the rest. KeepLegacy.
	ReasonUnmappedCompanionResource ReasonCode = "UnmappedCompanionResource"
	// ReasonCapacityNotTranslatable: a capacity of a device (capacityOf)
	// cannot go with its device: the container does not ask for the device,
	// an init container holds it, or the quantity is not a whole number.
	// KeepLegacy.
	ReasonCapacityNotTranslatable ReasonCode = "CapacityNotTranslatable"
	// ReasonSharedDeviceNotMapped: the pod asks for a share of a device (a
	// shared resource, or a node-label value of a shared product) and the
	// policy does not say how to share it under DRA. KeepLegacy.
	ReasonSharedDeviceNotMapped ReasonCode = "SharedDeviceNotMapped"
	// ReasonSharedDevicePerPod: a shared resource translated with a claim
	// configuration (sharing mode ClaimConfig): the pod gets a device of its
	// own, shared only among its containers. Warning.
	ReasonSharedDevicePerPod ReasonCode = "SharedDevicePerPod"
	// ReasonPreemptionLost: the pod may preempt (priority above 0, policy
	// not Never), and a pod whose devices come from a claim cannot preempt
	// for them in Kubernetes 1.37. Warning; KeepLegacy above the policy's
	// preemption.keepLegacyAbovePriority.
	ReasonPreemptionLost ReasonCode = "PreemptionLost"
	// ReasonImplicitToleration: the toleration that admission adds for a
	// requested extended resource was added for one translation removed.
	ReasonImplicitToleration ReasonCode = "ImplicitToleration"
)

// Reason codes of the rest of the stack: what the pod's scheduler, Kueue
// and the namespace's quota accept (schedulers.go, output.go, quota.go).
const (
	// ReasonSchedulerSkipped: the policy lists the pod's scheduler with
	// output Skip (the built-in profile of schedulers that do not
	// allocate claims), or Kueue manages the pod and spec.kueue.output is
	// Skip. Skip.
	ReasonSchedulerSkipped ReasonCode = "SchedulerSkipped"
	// ReasonSingleAlternative: the output profile is ExactlyOnly, and a
	// request keeps one of its alternatives. Info.
	ReasonSingleAlternative ReasonCode = "SingleAlternative"
	// ReasonNoSingleAlternative: the output profile is ExactlyOnly and no
	// single alternative is acceptable (decide: none lands where the pod
	// as submitted can; without a fleet, a request has several mandatory
	// alternatives). KeepLegacy.
	ReasonNoSingleAlternative ReasonCode = "NoSingleAlternative"
	// ReasonClassNotCountedByScheduler: the scheduler accounts the legacy
	// resource only on classes whose name contains a string
	// (classNameContains; KAI-Scheduler's "gpu"), and the translation uses
	// another class. KeepLegacy.
	ReasonClassNotCountedByScheduler ReasonCode = "ClassNotCountedByScheduler"
	// ReasonCapacityNotSupported: the scheduler's allocator ignores
	// consumable capacity (consumableCapacity: false; KAI-Scheduler), and
	// the translation requests capacities or a shared device. KeepLegacy.
	ReasonCapacityNotSupported ReasonCode = "CapacityNotSupported"
	// ReasonKueueClassNotMapped: Kueue manages the pod and a class of its
	// claim is not in Kueue's deviceClassMappings. KeepLegacy.
	ReasonKueueClassNotMapped ReasonCode = "KueueClassNotMapped"
	// ReasonQuotaCharge: what the claim would be charged against a
	// ResourceQuota that limits it, within what is left. Info.
	ReasonQuotaCharge ReasonCode = "QuotaCharge"
	// ReasonQuotaWouldBlockClaim: the claim's charge is over what a
	// ResourceQuota has left, so the resourceclaim controller could not
	// create it and the pod would wait Pending (FailedResourceClaimCreation).
	// KeepLegacy.
	ReasonQuotaWouldBlockClaim ReasonCode = "QuotaWouldBlockClaim"
)

// Reason explains one decision, with the field it is about.
type Reason struct {
	Code     ReasonCode `json:"code"`
	Severity Severity   `json:"severity"`
	Field    string     `json:"field,omitempty"`
	Message  string     `json:"message"`
}

func (r Reason) String() string {
	if r.Field == "" {
		return fmt.Sprintf("%s: %s", r.Code, r.Message)
	}
	return fmt.Sprintf("%s: %s: %s", r.Code, r.Field, r.Message)
}

// say makes a reason of a code, with the severity its catalog entry gives.
func say(code ReasonCode, p *field.Path, format string, args ...any) Reason {
	r := Reason{Code: code, Severity: reasons[code].Severity, Message: fmt.Sprintf(format, args...)}
	if p != nil {
		r.Field = p.String()
	}
	return r
}
