// Package translate turns a Pod that asks for devices the legacy way
// (extended resources such as nvidia.com/gpu, node labels from GPU Feature
// Discovery, Node Feature Discovery or GKE) into a Pod that refers to a DRA
// ResourceClaimTemplate, following a TranslationPolicy.
//
// # Promises
//
// The package is pure and deterministic: typed API objects in, typed results
// out; no API client, no context, no logger, no clock, no global state (the
// compiled policy caches CEL compilations, which changes no result). Maps are
// walked in sorted order and every generated name is derived from content.
//
// An error from [Pod] or [LoadPolicy] means the input itself was invalid. A
// pod that cannot or should not be translated is a [Result] with
// OutcomeKeepLegacy or OutcomeSkip and the [reason.Reason]s; the pod is
// returned unchanged. Every generated CEL expression is built from escaped
// literals and compiled and cost-checked with the DRA CEL compiler as
// kube-apiserver does for a new object.
//
// # The pipeline
//
// [Pod] runs one translation through the stages below, in this order: run
// (translate.go) calls them in five groups, skipped (the skip checks),
// collect (the rest of 1, and 2), shape (3 to 11), check (12 to 14) and
// emit (15 to 17). Each stage may assume what the stages before it
// established; a stage that fails ends the translation with the pod
// unchanged (KeepLegacy unless said otherwise), and the reasons gathered so
// far, in pipeline order, are the Result's reasons.
//
//  1. Skip checks (translate.go): the pod opted out (claimbridge.io/skip), is
//     a mirror pod, carries claimbridge.io/template or already has a claim
//     named "claimbridge": Skip. Then scheduledWithClaims (scheduling.go): a
//     pod that asks for a mapped resource is translated only when a
//     scheduler that allocates claims places it: not bound at creation
//     (NodeNamePreset) and for one of the policy's schedulers
//     (SchedulerNotListed). resolveOutput (schedulers.go) then finds the
//     pod's output profile: its scheduler's entry, filled from the built-in
//     profiles (v1alpha1.BuiltinScheduler), made stricter by spec.kueue for
//     a pod Kueue manages (kueueManaged); output Skip (SchedulerSkipped)
//     keeps the pod. The pod asks for devices and stays on the device
//     plugin: KeepLegacy, not Skip.
//  2. collectUses (uses.go): one use per (container, mapped resource), init
//     containers first, resources in sorted order; device counts are whole,
//     non-negative, request equal to limit, at most one claim's worth; uses
//     of companion rules (onlyWith, e.g. CPUs) are set aside when their
//     quantity is whole with request equal to limit. No device use means
//     Skip. An unmapped extended resource in the domain of a mapped one the
//     pod asks for (UnmappedCompanionResource), a shared resource without a
//     sharing mode (shared.go, SharedDeviceNotMapped) and a capacityOf use
//     that cannot join its container's device use (capacity.go,
//     attachCapacities, CapacityNotTranslatable) keep the pod. collect then
//     records the device families of the uses; sharedProductIntent
//     (shared.go) keeps a pod that selects shared GPUs by GFD's or GKE's
//     labels (a -SHARED product, a sharing strategy, replicas above 1,
//     mps.capable), unless every use of the family is a share the policy
//     maps, before any label is converted; sharesAvailable (shares.go)
//     keeps a pod whose shares ask for devices nothing says are shared
//     (SharesUnavailable); cardTypes
//     (cardtype.go) reads HAMi's card-type annotations (nvidia.com/use-gputype,
//     nouse-gputype) of the rules with cardType into a selector every
//     alternative of their requests gets (CardTypeTranslated), and such
//     annotations for a resource whose rule does not read them keep the pod
//     (CardTypeNotTranslatable).
//  3. analyzeLabels (nodelabels.go: requiredKnown and mixedTerms,
//     preferredKnown, scenariosOf, oneFamilyVaries, with known, expand,
//     splits, contradicts, varyingFamilies and the convert memo):
//     nodeSelector and node affinity requirements that a label rule of one
//     of the pod's families knows become scenarios, one per future
//     alternative: preferred terms by weight first (optional), then the
//     required terms (ORed terms only when they differ in nothing the policy
//     does not map); In lists of rules with alternatives are split,
//     contradicting scenarios dropped, and scenarios that would vary several
//     families at once collapse to the common part. Assumes uses are
//     collected and valid and families known. A known label that cannot be
//     translated, or contradicting requirements, keep the pod; so do ORed
//     required terms that also differ in labels the policy does not map or
//     change several families (left in node affinity, their device labels
//     would match no DRA node), unless the placement rule accepts losing
//     nodes (Subset, Off). keepAmbiguous (ambiguous.go) then marks the
//     requirements on values that a Map rule's table maps to a common
//     attribute value (GKE's A3 High and A3 Mega): they stay on the pod
//     beside their selector (NodeLabelAmbiguous); in ORed terms that become
//     alternatives they keep the pod (AffinityNotTranslatable).
//  4. shareInitRequests (initcontainers.go): a non-restartable init
//     container points at the smallest use of the same resource that asks
//     for at least as many devices (an app container, a sidecar declared
//     after it, or an earlier init container that holds its own), as a
//     device plugin would hand devices on; otherwise it holds its own.
//  5. buildRequests (requests.go, with addAlt and alternative): one request
//     per use that owns its devices, one alternative per scenario
//     (deduplicated; a mandatory duplicate makes the kept one mandatory),
//     then applyFallbacks (fallbacks.go) inserts the policy's fallback
//     alternatives after each alternative they match; sharing uses then
//     resolve to their owner's request. Assumes init containers that share
//     point at their owner and scenarios are expanded, non-empty and free
//     of contradictions. A selector that cannot be built keeps the pod.
//     shares (shares.go) then makes the requests of shares ask for one share
//     of each device, on devices that publish the family's share capacity,
//     or keeps the pod (SharesUnavailable).
//  6. addCompanions (companions.go): a companion use gets a one-device
//     request when a family it accompanies is present and an alignment rule
//     ties the two; its family joins the pod's families.
//  7. align (alignment.go, with addVariants): alignment rules become
//     matchAttribute constraints; Required ones name whole requests,
//     Preferred ones add an optional aligned variant before each plain
//     alternative. Assumes every request, companions included, has all its
//     alternatives (scenarios and fallbacks). Then partition (partitions.go):
//     the policy's partition rules (Fabric Manager's GPU partitions, the
//     nvidia-fabric-manager profile) give each alternative of a request of
//     a partition size a variant on partitioned devices, tied to one
//     partition by matchAttribute, and keep the alternative itself off
//     them; another count, or the devices in several requests, keep the pod
//     (FabricPartitionUnmatched). Then exclusive (shares.go): where the
//     devices of a family are shared, a request for whole devices keeps to
//     devices one claim holds, with a variant that takes all the shares of
//     a shared one (WholeDeviceOnShares).
//  8. limitAlternatives (limits.go): each request keeps at most 8
//     alternatives, optional ones (preferences, fallbacks, variants) dropped
//     from the end; constraints whose variants are all gone are dropped.
//     More than 8 mandatory alternatives keep the pod.
//  9. singleAlternative (output.go): for the ExactlyOnly profile (Volcano,
//     KAI-Scheduler, Kueue take no firstAvailable) each request keeps one
//     alternative: the combination Input.Alternative, in the allocator's
//     order (Result.Combinations; decide tries them in turn). Constraints
//     on aligned variants become constraints on whole requests when the
//     variant is kept, and go when it is not. Assumes the alternatives are
//     final (within 8) and not named. Then keepDroppedPreferences
//     (nodelabels.go): preferred terms that no remaining alternative
//     expresses stay on the pod.
//  10. rewriteNodeConstraints (nodeconstraints.go): copies of the pod's
//     nodeSelector and node affinity without the translated requirements.
//     Assumes the set of translated requirements is final.
//  11. nameAll (naming.go, with uniqueName, altSlug, dnsLabel): deterministic
//     DNS-label names for requests and subrequests, derived from content.
//     Nothing is added or dropped after naming.
//  12. checkLimits (limits.go): the claim is within the API's limits
//     (requests, constraints, devices, selectors per request) and every
//     selector compiles within the CEL cost limit.
//  13. defer5004 (deference.go): when DeviceClasses already serve every
//     resource through extendedResourceName (KEP-5004) and translation adds
//     nothing (no selector or class from a label, no alternative, no
//     alignment across requests, no companion, no config, and no
//     node-label requirement removed, unless deference.preferExtendedResource)
//     the pod is left to the scheduler. Otherwise a mapped resource is noted
//     as removed, with the NodeResourcesFit scoring it no longer feeds.
//     Reads Input.Classes.
//  14. stackAccepts (output.go): the claim uses only classes the
//     scheduler's accounting counts (classNameContains, KAI's "gpu";
//     ClassNotCountedByScheduler), capacities only where its allocator
//     honours them (CapacityNotSupported), and for a Kueue-managed pod only
//     classes Kueue's deviceClassMappings list (KueueClassNotMapped). Then
//     quotaCovered (quota.go): the claim's charge (Result.Charge, as
//     kube-apiserver's claim evaluator computes it); a ResourceQuota that
//     limits a legacy resource the pod gives up must be matched by one that
//     limits the devices of every class it would get (QuotaNotCovered), and
//     the charge must be within what every unscoped quota has left
//     (QuotaWouldBlockClaim). Reads Input.Quotas and Input.Classes. Then
//     keepsPreemption (scheduling.go): unless preemption.draPreemption, a pod
//     that could preempt is warned (PreemptionLost) or, above
//     preemption.keepLegacyAbovePriority, kept.
//  15. template (template.go, with claimSpec and [TemplateName]): the claim
//     spec in request order, fully defaulted, named by the hash of its
//     encoding.
//  16. mutate (template.go): a copy of the pod whose containers refer to
//     their requests, without the translated resources (unless keepInPod)
//     and node-label requirements (unless keepTranslatedNodeLabels). Then
//     stripCapacities (capacity.go) removes the capacity resources that went
//     into the claim, and addImplicitTolerations (tolerations.go) adds,
//     offline, the tolerations the target cluster's ExtendedResourceToleration
//     plugin gives pods for the extended resources removed, when the cluster
//     runs it (Policy.RunsExtendedResourceToleration: the policy says so, or
//     says nothing and the pod requires a label only GKE nodes carry;
//     Result.ImplicitTolerations); never to a pod that has been through
//     admission already (Input.Admitted: the webhook's). Then sayRisks
//     (risks.go) warns of what the translation risks and no check decides:
//     a multi-host TPU slice translated per device (MultiHostTPUSlice), a
//     label node autoscalers read removed (AutoscalingLabelRemoved), a NIC
//     left on its device plugin (TopologyAlignmentLost).
//  17. summary (summary.go, with describeAlt, writeAlt, requestLabel): the
//     Translated reason that says what each container got.
//
// The types the stages pass on (use, request, alt, scenario, constraint)
// are in model.go; the translation struct in translate.go notes which stage
// writes each field.
//
// # Vocabulary and policy
//
// The TranslationPolicy API, its built-in profiles and the reading of
// Kueue's Configuration are package api/v1alpha1; policy.go loads a policy
// and profiles.go compiles one and looks its rules up. How a label and a
// device attribute correspond, both ways, is the vocabulary table in
// vocabulary.go, one entry per v1alpha1.Conversion (its header says what
// each direction serves), with the functions in the conversions*.go files
// and the legacy view in legacy.go; package celgen (translate/celgen)
// turns requirements into escaped, checked CEL. catalog.go declares the
// reason codes with their entries, reasons.go makes the reasons the stages
// report, and matchconditions.go the webhook's matchConditions.
//
// # Where it sits
//
// Below it: reason, podfacts (what a pod asks for, as Kubernetes reads it),
// api and api/v1alpha1. Above it: feasibility (inventory snapshots, the
// allocator, the placement check), decide (the one decision path), the
// forecast, the report, and the rest up to internal/ and cmd/.
// CONTRIBUTING.md's Layout table lists them and hack/layers checks the
// rules.
//
// # Imports
//
// Anything may import this package. Of this module it imports reason,
// podfacts, api, api/v1alpha1 and celgen; else the standard library, k8s.io/api,
// k8s.io/apimachinery and the DRA CEL compiler
// (k8s.io/dynamic-resource-allocation/cel with cel-go and the apiserver's
// CEL environment): no client, no context, no logger, no clock
// (purity_test.go checks this).
package translate
