package translate

import (
	"github.com/claimbridge/claimbridge/reason"
)

// The reason catalog of translation; how codes and catalogs work is package
// reason's. Adding a code is one constant and one entry beside it. decide's
// catalog merges this one with feasibility's and its own; the webhook's and
// the offline runs' add theirs.

// Reason codes of translation. Each has its entry in the catalog below;
// the CLI's explain output and the webhook's warnings, Events and metrics
// all use them.
const (
	ReasonTranslated                    reason.Code = "Translated"
	ReasonOptedOut                      reason.Code = "OptedOut"
	ReasonMirrorPod                     reason.Code = "MirrorPod"
	ReasonAlreadyTranslated             reason.Code = "AlreadyTranslated"
	ReasonNoLegacyResources             reason.Code = "NoLegacyResources"
	ReasonUnmappedResource              reason.Code = "UnmappedResource"
	ReasonInvalidQuantity               reason.Code = "InvalidQuantity"
	ReasonRequestLimitMismatch          reason.Code = "RequestLimitMismatch"
	ReasonTooManyDevices                reason.Code = "TooManyDevices"
	ReasonTooManyRequests               reason.Code = "TooManyRequests"
	ReasonTooManyAlternatives           reason.Code = "TooManyAlternatives"
	ReasonAlternativesDropped           reason.Code = "AlternativesDropped"
	ReasonDeferToExtendedResource       reason.Code = "DeferToExtendedResource"
	ReasonExtendedResourceMappedByClass reason.Code = "ExtendedResourceMappedByClass"
	ReasonQuotaNotCovered               reason.Code = "QuotaNotCovered"
	ReasonNodeLabelTranslated           reason.Code = "NodeLabelTranslated"
	ReasonNodeLabelImplied              reason.Code = "NodeLabelImplied"
	ReasonNodeLabelDropped              reason.Code = "NodeLabelDropped"
	ReasonNodeLabelKept                 reason.Code = "NodeLabelKept"
	ReasonNodeLabelAmbiguous            reason.Code = "NodeLabelAmbiguous"
	ReasonNodeLabelUntranslatable       reason.Code = "NodeLabelUntranslatable"
	ReasonAffinityNotTranslatable       reason.Code = "AffinityNotTranslatable"
	ReasonFallbackApplied               reason.Code = "FallbackApplied"
	ReasonAlignmentApplied              reason.Code = "AlignmentApplied"
	ReasonAlignmentNotApplied           reason.Code = "AlignmentNotApplied"
	ReasonInitContainerSharesDevices    reason.Code = "InitContainerSharesDevices"
	ReasonInitContainerHoldsDevices     reason.Code = "InitContainerHoldsDevices"
	ReasonCompanionNotAdded             reason.Code = "CompanionNotAdded"
	ReasonInvalidSelector               reason.Code = "InvalidSelector"
)

// Reason codes of the rules that keep a pod from being stranded: a
// translated pod needs a scheduler that allocates its claim, every resource
// it asks for, and the sharing it relied on (scheduling.go, capacity.go,
// shared.go, tolerations.go).
const (
	// ReasonNodeNamePreset: spec.nodeName is set at creation; no scheduler
	// runs, so no one would allocate the claim. The pod asks for devices and
	// stays on the device plugin: KeepLegacy.
	ReasonNodeNamePreset reason.Code = "NodeNamePreset"
	// ReasonSchedulerNotListed: the pod's schedulerName is not in the
	// policy's schedulers, the schedulers known to allocate DRA claims.
	// KeepLegacy.
	ReasonSchedulerNotListed reason.Code = "SchedulerNotListed"
	// ReasonUnmappedCompanionResource: the pod asks for an extended resource
	// the policy does not map, in the domain of one it does (HAMi's
	// nvidia.com/gpumem beside nvidia.com/gpu); translated, the device
	// would lose it and no node would offer the rest. KeepLegacy.
	ReasonUnmappedCompanionResource reason.Code = "UnmappedCompanionResource"
	// ReasonCapacityNotTranslatable: a capacity of a device (capacityOf)
	// cannot go with its device: the container does not ask for the device,
	// an init container holds it, or the quantity is not a whole number.
	// KeepLegacy.
	ReasonCapacityNotTranslatable reason.Code = "CapacityNotTranslatable"
	// ReasonSharedDeviceNotMapped: the pod asks for a share of a device (a
	// shared resource, or a node-label value of a shared product) and the
	// policy does not say how to share it under DRA. KeepLegacy.
	ReasonSharedDeviceNotMapped reason.Code = "SharedDeviceNotMapped"
	// ReasonSharesUnavailable: the pod asks for a share of a time-sliced
	// GPU (a shared resource of sharing mode ConsumableShares, or a
	// device the pod's node labels show to be shared), and nothing says
	// the DRA devices are shared: no device of the fleet publishes the
	// family's share capacity, or, without a fleet, the policy's
	// consumableShares does not name the family. KeepLegacy.
	ReasonSharesUnavailable reason.Code = "SharesUnavailable"
	// ReasonSharedMPSNotMapped: the pod selects GPUs shared by MPS, and
	// the policy translates the family's shares as consumable shares, which
	// time-slice: the NVIDIA DRA driver runs MPS only within one claim and
	// refuses it on shared devices. KeepLegacy.
	ReasonSharedMPSNotMapped reason.Code = "SharedMPSNotMapped"
	// ReasonSharesOnDistinctDevices: a container asks for several shares;
	// its claim takes one share of as many distinct devices, where the
	// device plugin may hand it several replicas of one GPU. Warning.
	ReasonSharesOnDistinctDevices reason.Code = "SharesOnDistinctDevices"
	// ReasonWholeDeviceOnShares: the pod asks for whole devices of a family
	// whose devices are shared; its request takes devices that one claim
	// holds, or all the shares of a shared device, never one share. Info.
	ReasonWholeDeviceOnShares reason.Code = "WholeDeviceOnShares"
	// ReasonSharedDevicePerPod: a shared resource translated with a claim
	// configuration (sharing mode ClaimConfig): the pod gets a device of its
	// own, shared only among its containers. Warning.
	ReasonSharedDevicePerPod reason.Code = "SharedDevicePerPod"
	// ReasonPreemptionLost: the pod may preempt (priority above 0, policy
	// not Never), and a pod whose devices come from a claim cannot preempt
	// for them in Kubernetes 1.37. Warning; KeepLegacy above the policy's
	// preemption.keepLegacyAbovePriority.
	ReasonPreemptionLost reason.Code = "PreemptionLost"
	// ReasonImplicitToleration: the toleration that admission adds for a
	// requested extended resource was added for one translation removed.
	ReasonImplicitToleration reason.Code = "ImplicitToleration"
	// ReasonCardTypeTranslated: HAMi's card-type annotations
	// (nvidia.com/use-gputype, nouse-gputype) became a selector on the
	// devices' type (cardtype.go). Info.
	ReasonCardTypeTranslated reason.Code = "CardTypeTranslated"
	// ReasonCardTypeNotTranslatable: the pod carries HAMi's card-type
	// annotations for a resource whose rule does not read them
	// (resources[].cardType), or an entry a selector cannot compare as HAMi
	// does. KeepLegacy.
	ReasonCardTypeNotTranslatable reason.Code = "CardTypeNotTranslatable"
)

// Reason codes of the risks a translation takes that no check proves or
// refutes (risks.go): the pod is translated, with a Warning.
const (
	// ReasonMultiHostTPUSlice: the pod selects a TPU slice topology of more
	// chips than it asks for (a multi-host slice), and is translated per
	// device. Warning.
	ReasonMultiHostTPUSlice reason.Code = "MultiHostTPUSlice"
	// ReasonWholeNodeOnly: the resource's driver prepares only claims for
	// every device of a node (the TPU DRA driver), so the translation asks
	// for devices of nodes with exactly the pod's count
	// (ResourceRule.WholeNodeCount); where the fleet has none, the
	// placement check keeps the pod as submitted. Info.
	ReasonWholeNodeOnly reason.Code = "WholeNodeOnly"
	// ReasonAutoscalingLabelRemoved: translation removed a node-label
	// requirement that node autoscalers read to choose what to scale up
	// (GKE's gke-accelerator, the instance type, Karpenter's labels).
	// Warning.
	ReasonAutoscalingLabelRemoved reason.Code = "AutoscalingLabelRemoved"
	// ReasonTopologyAlignmentLost: a NIC resource (EFA, RDMA) stays on its
	// device plugin while the pod's devices move to a claim, so the
	// kubelet's Topology Manager no longer aligns them. Warning.
	ReasonTopologyAlignmentLost reason.Code = "TopologyAlignmentLost"
)

// ReasonFabricPartitionUnmatched: the policy's partition rule (Fabric
// Manager's GPU partitions) cannot be met: the pod asks for a count no
// partition has, or for the devices in several requests; on a partitioned
// node the claim could never be prepared. KeepLegacy.
const ReasonFabricPartitionUnmatched reason.Code = "FabricPartitionUnmatched"

// Reason codes of the rest of the stack: what the pod's scheduler, Kueue
// and the namespace's quota accept (schedulers.go, output.go, quota.go).
const (
	// ReasonSchedulerSkipped: the policy lists the pod's scheduler with
	// output Skip (the built-in profile of schedulers that do not
	// allocate claims), or Kueue manages the pod and spec.kueue.output is
	// Skip. The pod asks for devices and stays on the device plugin:
	// KeepLegacy.
	ReasonSchedulerSkipped reason.Code = "SchedulerSkipped"
	// ReasonSingleAlternative: the output profile is ExactlyOnly, and a
	// request keeps one of its alternatives. Info.
	ReasonSingleAlternative reason.Code = "SingleAlternative"
	// ReasonNoSingleAlternative: the output profile is ExactlyOnly and no
	// single alternative is acceptable (decide: none lands where the pod
	// as submitted can; without a fleet, a request has several mandatory
	// alternatives). KeepLegacy.
	ReasonNoSingleAlternative reason.Code = "NoSingleAlternative"
	// ReasonClassNotCountedByScheduler: the scheduler accounts the legacy
	// resource only on classes whose name contains a string
	// (classNameContains; KAI-Scheduler's "gpu"), and the translation uses
	// another class. KeepLegacy.
	ReasonClassNotCountedByScheduler reason.Code = "ClassNotCountedByScheduler"
	// ReasonCapacityNotSupported: the scheduler's allocator ignores
	// consumable capacity (consumableCapacity: false; KAI-Scheduler), and
	// the translation requests capacities or a shared device. KeepLegacy.
	ReasonCapacityNotSupported reason.Code = "CapacityNotSupported"
	// ReasonKueueClassNotMapped: Kueue manages the pod and a class of its
	// claim is not in Kueue's deviceClassMappings. KeepLegacy.
	ReasonKueueClassNotMapped reason.Code = "KueueClassNotMapped"
	// ReasonQuotaCharge: what the claim would be charged against a
	// ResourceQuota that limits it, within what is left. Info.
	ReasonQuotaCharge reason.Code = "QuotaCharge"
	// ReasonQuotaWouldBlockClaim: the claim's charge is over what a
	// ResourceQuota has left, so the resourceclaim controller could not
	// create it and the pod would wait Pending (FailedResourceClaimCreation).
	// KeepLegacy.
	ReasonQuotaWouldBlockClaim reason.Code = "QuotaWouldBlockClaim"
)

// Reasons is the translator's catalog.
func Reasons() reason.Catalog { return reasons }

// Sections of the docs that explain reasons.
const (
	docModes       = "docs/tasks/install.md#modes"
	docNever       = "docs/concepts/translation.md#what-is-never-translated"
	docHow         = "docs/concepts/translation.md#how-a-pod-is-translated"
	docPolicy      = "docs/reference/policy.md#the-translation-policy"
	docStack       = "docs/reference/policy.md#schedulers-queues-and-quota"
	docCapacities  = "docs/reference/policy.md#capacities-of-a-device-hami"
	docShared      = "docs/reference/policy.md#shared-resources"
	docSharesNone  = "docs/concepts/shared-gpus.md#where-nothing-says-the-gpus-are-shared"
	docSharesMPS   = "docs/concepts/shared-gpus.md#mps"
	docSharesTwo   = "docs/concepts/shared-gpus.md#several-shares-in-one-container"
	docSharesWhole = "docs/concepts/shared-gpus.md#whole-gpus-where-gpus-are-shared"
	docPreemption  = "docs/reference/policy.md#preemption"
	docTolerations = "docs/reference/policy.md#implicit-tolerations"
	docRisks       = "docs/concepts/translation.md#risks-said-out-loud"
	docPartitions  = "docs/reference/policy.md#nvidia-dra-driver-v05"
	docAmbiguous   = "docs/concepts/translation.md#values-the-devices-cannot-tell-apart"
)

var reasons = reason.Catalog{
	// Skip: not claimbridge's business.
	ReasonTranslated:        reason.NewEntry(reason.SeverityInfo, reason.OutcomeTranslate, "nothing to do: the pod uses a ResourceClaimTemplate", docHow),
	ReasonOptedOut:          reason.NewEntry(reason.SeverityInfo, reason.OutcomeSkip, "nothing to do; remove the annotation claimbridge.io/skip to have the pod translated", docModes),
	ReasonMirrorPod:         reason.NewEntry(reason.SeverityInfo, reason.OutcomeSkip, "nothing to do: a mirror pod is the kubelet's copy of a static pod and cannot change", docNever),
	ReasonAlreadyTranslated: reason.NewEntry(reason.SeverityInfo, reason.OutcomeSkip, "nothing to do: the pod is translated already", docHow),
	ReasonNoLegacyResources: reason.NewEntry(reason.SeverityInfo, reason.OutcomeSkip, "nothing to do: the pod asks for no extended resource the policy maps", docHow),
	ReasonUnmappedResource:  reason.NewEntry(reason.SeverityInfo, "", "add a resources rule for the extended resource to the TranslationPolicy (or a profile that maps it)", docPolicy),

	// KeepLegacy: the request cannot be a claim.
	ReasonInvalidQuantity:      reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "ask for whole devices: extended resources take integer quantities", docHow),
	ReasonRequestLimitMismatch: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "set the device request equal to the limit (or give only the limit), as extended resources require", docHow),
	ReasonTooManyDevices:       reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "split the pod or ask for fewer devices per container: the request is over DRA's per-request maximum", docHow),
	ReasonTooManyRequests:      reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "use fewer containers with devices or fewer device kinds: the claim would be over DRA's request limit", docHow),
	ReasonTooManyAlternatives:  reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "narrow the node-affinity terms or In lists: they make more alternatives than firstAvailable allows", docHow),
	ReasonAlternativesDropped:  reason.NewEntry(reason.SeverityWarning, "", "narrow the node-affinity terms or fallbacks: lower-priority alternatives were dropped", docHow),
	ReasonInvalidSelector:      reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "fix the policy: a selector it generates does not compile (run claimbridge policy check)", docPolicy),

	// KEP-5004 and quota continuity.
	ReasonDeferToExtendedResource:       reason.NewEntry(reason.SeverityInfo, reason.OutcomeKeepLegacy, "nothing to do: a DeviceClass serves the resource through extendedResourceName (KEP-5004)", docPolicy),
	ReasonExtendedResourceMappedByClass: reason.NewEntry(reason.SeverityWarning, "", "nothing to do: a DeviceClass already maps this extended resource (KEP-5004)", docPolicy),
	ReasonQuotaNotCovered:               reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "add a ResourceQuota on the DeviceClass's devices (<class>.deviceclass.resource.k8s.io/devices) next to the legacy one", docStack),

	// Node labels and affinity.
	ReasonNodeLabelTranslated:     reason.NewEntry(reason.SeverityInfo, "", "nothing to do: the label became a device selector", docHow),
	ReasonNodeLabelImplied:        reason.NewEntry(reason.SeverityInfo, "", "nothing to do: the claim implies the label", docHow),
	ReasonNodeLabelDropped:        reason.NewEntry(reason.SeverityInfo, "", "nothing to do: no device attribute expresses the label, and the placement check compares where the pod lands without it (with no fleet to check against, the pod stays as submitted: NodeLabelUnchecked)", docHow),
	ReasonNodeLabelKept:           reason.NewEntry(reason.SeverityInfo, "", "nothing to do: the label stays on the pod", docHow),
	ReasonNodeLabelAmbiguous:      reason.NewEntry(reason.SeverityInfo, "", "nothing to do where the DRA nodes carry the label as the device-plugin nodes did (GKE sets its node-pool labels on every node): the device attribute cannot tell the label's values apart, so the label stays on the pod beside the selector", docAmbiguous),
	ReasonNodeLabelUntranslatable: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "add a nodeLabels rule for the label to the policy, or drop the label from the pod", docPolicy),
	ReasonAffinityNotTranslatable: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "rewrite the node affinity with In/NotIn/Exists on labels the policy maps, or move it to labels the DRA nodes carry", docHow),

	// Alternatives, alignment, init containers, companions.
	ReasonFallbackApplied:            reason.NewEntry(reason.SeverityInfo, "", "nothing to do: the policy's fallback adds alternatives", docPolicy),
	ReasonAlignmentApplied:           reason.NewEntry(reason.SeverityInfo, "", "nothing to do: the devices are aligned as the policy says", docPolicy),
	ReasonAlignmentNotApplied:        reason.NewEntry(reason.SeverityInfo, "", "check the policy's alignment rules if these devices should be aligned", docPolicy),
	ReasonInitContainerSharesDevices: reason.NewEntry(reason.SeverityInfo, "", "nothing to do: the init container uses the devices of a later container, as with the device plugin", docHow),
	ReasonInitContainerHoldsDevices:  reason.NewEntry(reason.SeverityInfo, "", "give the init container the same device count as a later app container, so that it can share theirs", docHow),
	ReasonCompanionNotAdded:          reason.NewEntry(reason.SeverityInfo, "", "check the companion rule's onlyWith families and the pod's CPU requests", docPolicy),

	// Never strand a pod.
	ReasonNodeNamePreset:            reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "let a scheduler place the pod (a node selector on kubernetes.io/hostname instead of spec.nodeName) to have it translated; bound at creation, it stays on the device plugin", docNever),
	ReasonSchedulerNotListed:        reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "if the pod's scheduler allocates DRA claims, add it to the policy's schedulers (the docs list which do); otherwise the pod stays legacy", docNever),
	ReasonUnmappedCompanionResource: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "map the companion resource in the policy (capacityOf; the hami profile maps HAMi's gpumem and gpucores), or drop it from the pod", docNever),
	ReasonCapacityNotTranslatable:   reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "ask for the device in the same app container as its capacities (HAMi's gpumem, gpucores), not in an init container", docCapacities),
	ReasonSharedDeviceNotMapped:     reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "say in the policy how the shared device is shared under DRA (resources[].sharing: ConsumableCapacity on devices that allow multiple allocations, or ClaimConfig), or keep these pods on device-plugin nodes", docShared),
	ReasonSharedDevicePerPod:        reason.NewEntry(reason.SeverityWarning, "", "nothing to do if a device per pod is what you want; otherwise share it with sharing: ConsumableCapacity", docShared),
	ReasonSharesUnavailable:         reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "publish the GPUs as consumable shares: NVIDIA DRA driver v0.5.0+ with its ConsumableShares gate and --consumable-shares=N (the device plugin's replicas; Helm values featureGates.ConsumableShares=true, consumableShares=N), on Kubernetes 1.36+ (DRAConsumableCapacity); offline, say so in the policy (consumableShares) and the platform (--platform, consumableShares); with --consumable-shares=memory, say in the policy how many claims share a GPU (memoryShares)", docSharesNone),
	ReasonSharedMPSNotMapped:        reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "keep MPS workloads on device-plugin nodes; to move them, select time-sliced GPUs instead (nvidia.com/gpu.sharing-strategy: time-slicing, or no sharing label) if MPS's per-client limits are not needed, or share one ResourceClaim with a GpuConfig of sharing strategy MPS among the pods of one namespace", docSharesMPS),
	ReasonSharesOnDistinctDevices:   reason.NewEntry(reason.SeverityWarning, "", "nothing to do if the container can use shares of several GPUs; ask for one share per container otherwise", docSharesTwo),
	ReasonWholeDeviceOnShares:       reason.NewEntry(reason.SeverityInfo, "", "nothing to do: a whole device stays whole where devices are shared", docSharesWhole),
	ReasonPreemptionLost:            reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "raise preemption.keepLegacyAbovePriority, or accept that a translated pod cannot preempt for devices in Kubernetes 1.37", docPreemption),
	ReasonImplicitToleration:        reason.NewEntry(reason.SeverityInfo, "", "nothing to do: the toleration admission would have added stays on the pod", docTolerations),
	ReasonCardTypeTranslated:        reason.NewEntry(reason.SeverityInfo, "", "nothing to do: the claim selects the card types the annotations admit, as HAMi's scheduler did", docCapacities),
	ReasonCardTypeNotTranslatable:   reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "map the annotations in the resource's rule (resources[].cardType, as the nvidia and hami profiles do for nvidia.com/gpu), write the card types in ASCII, or drop the annotations from the pod", docCapacities),

	// Risks of a translation, said out loud.
	ReasonWholeNodeOnly:           reason.NewEntry(reason.SeverityInfo, "", "ask for every chip of the node the pod runs on (its chipCount), or keep the pod on the device plugin: the TPU DRA driver refuses a claim for fewer (dra-driver-google-tpu cmd/tpu-dra-kubeletplugin/state.go, prepareDevices)", docRisks),
	ReasonMultiHostTPUSlice:       reason.NewEntry(reason.SeverityWarning, "", "check that the slice's pods land on the hosts of one slice (JobSet's exclusive-topology on cloud.google.com/gke-nodepool) and that the TPU DRA driver publishes the slice's topology on every host, or keep multi-host TPU workloads on the device plugin (claimbridge.io/skip)", docRisks),
	ReasonAutoscalingLabelRemoved: reason.NewEntry(reason.SeverityWarning, "", "keep the label on the pod where the DRA nodes still carry it (keepTranslatedNodeLabels: true), or keep a node of the group running so that the autoscaler need not scale it from zero", docRisks),
	ReasonTopologyAlignmentLost:   reason.NewEntry(reason.SeverityWarning, "", "move the NIC to its DRA driver too (map the resource to the NIC's DeviceClass; an alignment rule on resource.kubernetes.io/pcieRoot or numaNode ties it to the GPUs), or keep such pods on the device plugin (claimbridge.io/skip)", docRisks),

	ReasonFabricPartitionUnmatched: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "ask for a count the partitions come in (1, 2, 4 or 8 GPUs on an 8-GPU NVSwitch system), in one container; or keep the pod off partitioned nodes and drop the partition rule (the nvidia-fabric-manager profile) from the policy", docPartitions),

	// The rest of the stack: schedulers, Kueue, quota.
	ReasonSchedulerSkipped:           reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "nothing to do while the scheduler does not allocate DRA claims (the docs' schedulers table says why); list it with output: Full (or ExactlyOnly) once it does", docStack),
	ReasonSingleAlternative:          reason.NewEntry(reason.SeverityInfo, "", "nothing to do: the scheduler or Kueue takes one alternative, and this one was kept", docStack),
	ReasonNoSingleAlternative:        reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "the scheduler or Kueue takes no firstAvailable: narrow the pod's In lists, ORed terms or preferences to one choice, or run the placement check against the fleet (--fleet) so that claimbridge can pick one", docStack),
	ReasonClassNotCountedByScheduler: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "map the resource to a DeviceClass whose name the scheduler's accounting counts (KAI-Scheduler: a name containing \"gpu\"), or set the scheduler's classNameContains in the policy", docStack),
	ReasonCapacityNotSupported:       reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "keep these pods on the device plugin until the scheduler's allocator honours consumable capacity, or schedule them with kube-scheduler", docStack),
	ReasonKueueClassNotMapped:        reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "add the DeviceClass to Kueue's resources.deviceClassMappings and give claimbridge the mappings (spec.kueue.deviceClassMappings, or --kueue-config with Kueue's Configuration)", docStack),
	ReasonQuotaCharge:                reason.NewEntry(reason.SeverityInfo, "", "nothing to do: the claim fits what the namespace's quota has left", docStack),
	ReasonQuotaWouldBlockClaim:       reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "raise the namespace's ResourceQuota on the DeviceClass's devices (the row's charge says what one claim needs; firstAvailable is charged its largest alternative), or narrow the pod's alternatives", docStack),
}
