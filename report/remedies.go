package report

import (
	"fmt"
	"strings"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/translate"
)

// remedies says, per reason code that keeps a pod legacy, what to do about
// it in one line. Infeasible is split by the verdict's code (feasibility
// reason codes) in verdictRemedies. %[1]s is the hardware kind of the rows.
var remedies = map[translate.ReasonCode]string{
	translate.ReasonUnmappedResource:              "add a resources rule for the extended resource to the TranslationPolicy (or a profile that maps it)",
	translate.ReasonInvalidQuantity:               "ask for whole devices: extended resources take integer quantities",
	translate.ReasonRequestLimitMismatch:          "set the device request equal to the limit (or give only the limit), as extended resources require",
	translate.ReasonTooManyDevices:                "split the pod or ask for fewer devices per container: the request is over DRA's per-request maximum",
	translate.ReasonTooManyRequests:               "use fewer containers with devices or fewer device kinds: the claim would be over DRA's request limit",
	translate.ReasonTooManyAlternatives:           "narrow the node-affinity terms or In lists: they make more alternatives than firstAvailable allows",
	translate.ReasonAlternativesDropped:           "narrow the node-affinity terms or fallbacks: lower-priority alternatives were dropped",
	translate.ReasonDeferToExtendedResource:       "nothing to do: a DeviceClass serves the resource through extendedResourceName (KEP-5004)",
	translate.ReasonExtendedResourceMappedByClass: "nothing to do: a DeviceClass already maps this extended resource (KEP-5004)",
	translate.ReasonQuotaNotCovered:               "add a ResourceQuota on the DeviceClass's devices (<class>.deviceclass.resource.k8s.io/devices) next to the legacy one",
	translate.ReasonNodeLabelUntranslatable:       "add a nodeLabels rule for the label to the policy, or drop the label from the pod",
	translate.ReasonAffinityNotTranslatable:       "rewrite the node affinity with In/NotIn/Exists on labels the policy maps, or move it to labels the DRA nodes carry",
	translate.ReasonCompanionNotAdded:             "check the companion rule's onlyWith families and the pod's CPU requests",
	translate.ReasonInvalidSelector:               "fix the policy: a selector it generates does not compile (run claimbridge policy check)",
	translate.ReasonInvalidPod:                    "fix the pod spec: it would not pass API validation",
	translate.ReasonInitContainerHoldsDevices:     "give the init container the same device count as a later app container, so that it can share theirs",
	translate.ReasonHasResourceClaims:             "nothing to do: the pod already uses ResourceClaims",
	translate.ReasonAlreadyTranslated:             "nothing to do: the pod is translated already",
	translate.ReasonNodeNamePreset:                "nothing to do: a pod bound at creation (spec.nodeName) keeps its device-plugin resources; let a scheduler place it to have it translated",
	translate.ReasonSchedulerNotListed:            "if the pod's scheduler allocates DRA claims, add it to the policy's schedulers (the README lists which do); otherwise the pod stays legacy",
	translate.ReasonUnmappedCompanionResource:     "map the companion resource in the policy (capacityOf; the hami profile maps HAMi's gpumem and gpucores), or drop it from the pod",
	translate.ReasonCapacityNotTranslatable:       "ask for the device in the same app container as its capacities (HAMi's gpumem, gpucores), not in an init container",
	translate.ReasonSharedDeviceNotMapped:         "say in the policy how the shared device is shared under DRA (resources[].sharing: ConsumableCapacity on devices that allow multiple allocations, or ClaimConfig), or keep these pods on device-plugin nodes",
	translate.ReasonPreemptionLost:                "raise preemption.keepLegacyAbovePriority, or accept that a translated pod cannot preempt for devices in Kubernetes 1.37",
	translate.ReasonSchedulerSkipped:              "nothing to do while the scheduler does not allocate DRA claims (the README's schedulers table says why); list it with output: Full (or ExactlyOnly) once it does",
	translate.ReasonNoSingleAlternative:           "the scheduler or Kueue takes no firstAvailable: narrow the pod's In lists, ORed terms or preferences to one choice, or run the placement check against the fleet (--fleet) so that claimbridge can pick one",
	translate.ReasonClassNotCountedByScheduler:    "map the resource to a DeviceClass whose name the scheduler's accounting counts (KAI-Scheduler: a name containing \"gpu\"), or set the scheduler's classNameContains in the policy",
	translate.ReasonCapacityNotSupported:          "keep these pods on the device plugin until the scheduler's allocator honours consumable capacity, or schedule them with kube-scheduler",
	translate.ReasonKueueClassNotMapped:           "add the DeviceClass to Kueue's resources.deviceClassMappings and give claimbridge the mappings (spec.kueue.deviceClassMappings, or --kueue-config with Kueue's Configuration)",
	translate.ReasonQuotaWouldBlockClaim:          "raise the namespace's ResourceQuota on the DeviceClass's devices (the row's charge says what one claim needs; firstAvailable is charged its largest alternative), or narrow the pod's alternatives",
	decide.ReasonPlacementDiffers:                 "make the pod's node labels and affinity mean the same on DRA nodes (label the DRA nodes as the device-plugin nodes were), or set placement: Subset in the policy",
	decide.ReasonPlacementUnknown:                 "rerun with a longer --timeout (--feasibility-timeout on the webhook): the placement check did not finish",
}

// verdictRemedies split Infeasible by the verdict's code.
var verdictRemedies = map[feasibility.ReasonCode]string{
	feasibility.ReasonNoCandidateNodes:    "no DRA node passes the pod's node selector, affinity and taints — label or untaint DRA nodes for %[1]s, or add tolerations",
	feasibility.ReasonDeviceClassNotFound: "install the DeviceClass the policy maps %[1]s to (the DRA driver's chart ships it), or point the policy at the class you have",
	feasibility.ReasonInvalidClaim:        "the translated claim is invalid: check the policy's rules for %[1]s (claimbridge explain shows the claim)",
	feasibility.ReasonAllocatorError:      "the allocator failed on the claim for %[1]s: check the DeviceClass selectors and the driver's attributes",
	feasibility.ReasonDeadlineExceeded:    "rerun with a longer --timeout (--feasibility-timeout on the webhook): the check for %[1]s did not finish",
	feasibility.ReasonInventoryNotSynced:  "wait for the webhook's inventory to sync, then look again",
	feasibility.ReasonBusy:                "raise --feasibility-max-searches or give the webhook more CPU: checks found no free slot in time",
	feasibility.ReasonDevicesInUse:        "free DRA devices for %[1]s or add some: the fleet has them, all in use",
}

// remedy is the one-line remedy of a blocking reason for rows of one
// hardware kind.
func remedy(code translate.ReasonCode, verdictCode, hardware string, fleet *FleetSummary) string {
	hw := hardware
	if hw == "" {
		hw = "these devices"
	}
	if code != decide.ReasonInfeasible {
		if r, ok := remedies[code]; ok {
			return r
		}
		return "see the reasons of the rows (claimbridge explain shows the whole decision)"
	}
	if verdictCode == string(feasibility.ReasonNoMatchingDevices) || verdictCode == "" {
		if nodes := devicePluginNodes(fleet, hardware); nodes != "" {
			return fmt.Sprintf("no DRA node publishes %s — move the device-plugin nodes that have it (%s) to the DRA driver first", hw, nodes)
		}
		return fmt.Sprintf("no DRA node publishes %s — add DRA nodes with it, or relax the node labels the pods ask for", hw)
	}
	if r, ok := verdictRemedies[feasibility.ReasonCode(verdictCode)]; ok {
		return fmt.Sprintf(r, hw)
	}
	return "see the reasons of the rows (claimbridge explain shows the whole decision)"
}

// devicePluginNodes names the device-plugin nodes of a hardware kind.
func devicePluginNodes(fleet *FleetSummary, hardware string) string {
	if fleet == nil || hardware == "" {
		return ""
	}
	var names []string
	n := 0
	for _, g := range fleet.Groups {
		if g.Via == ViaDevicePlugin && g.Kind == hardware {
			names = append(names, g.Names...)
			n += g.Nodes
		}
	}
	if n == 0 {
		return ""
	}
	if n > len(names) {
		return fmt.Sprintf("%s and %d more", strings.Join(names, ", "), n-len(names))
	}
	return strings.Join(names, ", ")
}
