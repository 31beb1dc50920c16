package decide

import (
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// Reason codes of the decision itself (translation and feasibility have theirs).
const (
	// ReasonFeasible: the fleet can serve the translation (FitsNow or FitsWhenFree).
	ReasonFeasible reason.Code = "Feasible"
	// ReasonInfeasible: it cannot (NeverFits) or that is not known (Unknown).
	ReasonInfeasible reason.Code = "Infeasible"
	// ReasonPlacementProven: the translation lands exactly where the legacy pod could.
	ReasonPlacementProven reason.Code = "PlacementProven"
	// ReasonPlacementDiffers: it would land on other nodes; the pod stays
	// legacy (reported as Info when the policy's placement: Subset accepts it).
	ReasonPlacementDiffers reason.Code = "PlacementDiffers"
	// ReasonPlacementUnknown: the comparison could not finish; the pod stays legacy.
	ReasonPlacementUnknown reason.Code = "PlacementUnknown"
	// ReasonPlacementNotChecked: the policy turned the placement check off.
	ReasonPlacementNotChecked reason.Code = "PlacementNotChecked"
	// ReasonSingleAlternativeRejected: for a pod whose scheduler or queue
	// takes no firstAvailable, one single-alternative translation that was
	// tried and why it was not kept.
	ReasonSingleAlternativeRejected reason.Code = "SingleAlternativeRejected"
	// ReasonDRABusyLegacyFree: DRA can serve the translation only once
	// devices free up (in use, or held by pods just admitted), and a
	// device-plugin node runs the pod as submitted now: it stays legacy
	// (whenDRABusy: KeepLegacy, the default). Info: the pod runs, nothing
	// is wrong.
	ReasonDRABusyLegacyFree reason.Code = "DRABusyLegacyFree"
	// ReasonImplicitTolerationsOff: offline, no DRA node can take the
	// translation, and one could with the tolerations that the
	// ExtendedResourceToleration admission plugin gives pods requesting
	// its extended resources (the nodes are tainted for them, as GKE
	// taints GPU and TPU nodes), which the policy says the target cluster
	// does not run. Info: the pod stays as submitted.
	ReasonImplicitTolerationsOff reason.Code = "ImplicitTolerationsOff"
	// ReasonImplicitTolerationsUnknown: offline, neither the policy
	// (implicitTolerations unset) nor the pod (no label only GKE nodes
	// carry) says whether the target cluster runs the
	// ExtendedResourceToleration admission plugin, and the translation
	// carries no toleration for the extended resources it removed: right
	// where the plugin does not run, Pending on the tainted nodes of a
	// cluster where it does (GKE). Without a fleet for any translation that
	// removes one; with a fleet when the plugin's tolerations would let the
	// translation onto the nodes with its devices. Warning.
	ReasonImplicitTolerationsUnknown reason.Code = "ImplicitTolerationsUnknown"
	// ReasonDRABusyWaiting: the translation will wait for DRA devices to
	// free up; with whenDRABusy: Wait even though the device plugin has
	// room now. The pod is translated.
	ReasonDRABusyWaiting reason.Code = "DRABusyWaiting"
	// ReasonAutoscalerIgnoresClaims: the pod may run in a pool whose
	// autoscaler adds no node for a pod whose devices come from a claim
	// (Karpenter's default; the policy's autoscaling rule). In the webhook,
	// DRA can serve it only once devices free up and the pool's nodes run
	// it as submitted: it stays as submitted, which the device plugin runs
	// now or the autoscaler adds a node for, whatever whenDRABusy says. In the cutover forecast, the workload has
	// more pods than the pool serves after the switch, and the autoscaler
	// that grows the pool for them today will not (autoscaling lost).
	// Warning: the migration of such pods waits on a decision about the
	// autoscaler.
	ReasonAutoscalerIgnoresClaims reason.Code = "AutoscalerIgnoresClaims"
)

// Reasons is the catalog of every code a decision can carry: translation's,
// the verdict's (feasibility) and the decision's own.
func Reasons() reason.Catalog { return catalog }

// Sections of the docs that explain reasons.
const (
	docPlacement = "docs/concepts/placement.md#the-placement-check"
	docVerdict   = "docs/concepts/placement.md#the-verdict"
	docBusy      = "docs/concepts/dra-busy.md#when-dra-is-busy"
	docHow       = "docs/concepts/translation.md#how-a-pod-is-translated"
	docStack     = "docs/reference/policy.md#schedulers-queues-and-quota"
	docOperators = "docs/reference/workloads.md#operators-that-size-from-the-device-limit"
	docTolerate  = "docs/reference/policy.md#implicit-tolerations"
	docMultiHost = "docs/reference/workloads.md#multi-host-tpu-slices"
	docAutoscale = "docs/concepts/dra-busy.md#autoscaled-pools"
	docKinds     = "docs/reference/workloads.md#devices-only-a-device-plugin-serves"
	docKServe    = "docs/reference/workloads.md#node-selectors-an-operator-adds"
)

var catalog = translate.Reasons().With(feasibility.Reasons(), reason.Catalog{
	ReasonFeasible:            reason.NewEntry(reason.SeverityInfo, reason.OutcomeTranslate, "nothing to do: the fleet can serve the translation", docVerdict),
	ReasonInfeasible:          reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "see the verdict's code: the fleet cannot serve the translation, or that is not known", docVerdict),
	ReasonPlacementProven:     reason.NewEntry(reason.SeverityInfo, "", "nothing to do: the translation lands where the pod as submitted would", docPlacement),
	ReasonPlacementDiffers:    reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "make the pod's node labels and affinity mean the same on DRA nodes (label the DRA nodes as the device-plugin nodes were), or set placement: Subset in the policy", docPlacement),
	ReasonPlacementUnknown:    reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "rerun with a longer --timeout (--feasibility-timeout on the webhook): the placement check did not finish", docPlacement),
	ReasonPlacementNotChecked: reason.NewEntry(reason.SeverityInfo, "", "set placement: Exact (the default) to have translations checked against the fleet", docPlacement),
	ReasonDRABusyLegacyFree:   reason.NewEntry(reason.SeverityInfo, reason.OutcomeKeepLegacy, "nothing to do: the pod runs now on the device plugin; free or add DRA devices to have such pods translated, or set whenDRABusy: Wait (label claimbridge.io/when-dra-busy=Wait on the namespace) to have them wait for DRA", docBusy),
	ReasonDRABusyWaiting:      reason.NewEntry(reason.SeverityWarning, "", "free or add DRA devices, or set whenDRABusy: KeepLegacy to keep such pods on the device plugin while it has room", docBusy),
	ReasonAutoscalerIgnoresClaims: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy,
		"set autoscaling.draAware: true in the policy if the pool's autoscaler adds nodes for pods with claims (Karpenter with --ignore-dra-requests=false and a cloud provider that describes its instance types' devices; Cluster Autoscaler 1.35 or later for a node group with a live node); else keep DRA capacity in the pool for every replica: it will not grow for them", docAutoscale),
	ReasonNodeLabelUnchecked:        reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy, "run with --fleet (the nodes and their ResourceSlices) so that the placement check compares where the pod lands without the label, set keepTranslatedNodeLabels where the DRA nodes still carry it, or drop the label if the device count says as much", docHow),
	ReasonSingleAlternativeRejected: reason.NewEntry(reason.SeverityInfo, "", "nothing to do: another alternative was tried in its place", docStack),
	ReasonOperatorReadsLimit: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy,
		"keep the workload on the device plugin, or for a custom resource let the webhook translate the pods its operator makes (they carry the count already); the docs' operator table says which operator reads what", docOperators),
	ReasonMultiHostTPUEnvironment: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy,
		"keep multi-host TPU Jobs and Ray TPU groups on the device plugin until the platform gives the slice's environment to pods whose TPUs come from a claim, or set TPU_WORKER_ID and TPU_WORKER_HOSTNAMES in the TPU containers yourself", docMultiHost),
	ReasonVirtLauncherDevices: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy,
		"keep the VM's gpus and hostDevices on their device plugin, or move the VM to KubeVirt's own DRA support (claimName and requestName in place of deviceName, with the VM's resourceClaims) where its DRA driver publishes the devices' PCI addresses", docKinds),
	ReasonHAMiMIGMode: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy,
		"keep the pod on HAMi's device plugin, or ask for a MIG profile by name (nvidia.com/mig-<profile>, which the nvidia profile maps to mig.nvidia.com) where the NVIDIA DRA driver serves MIG devices; dropping the annotation asks for a HAMi-core share instead", docKinds),
	ReasonKServeAcceleratorPinned: reason.NewEntry(reason.SeverityInfo, "",
		"nothing to do: the translation carries the node selector KServe would have added", docKServe),
	ReasonSharedByReservationPod: reason.NewEntry(reason.SeverityWarning, reason.OutcomeKeepLegacy,
		"keep nodes with the device plugin for KAI-Scheduler's GPU sharing, or move these pods to whole GPUs or to DRA consumable shares before a switch that removes it: its reservation pods ask the device plugin for nvidia.com/gpu", docKinds),
	ReasonImplicitTolerationsOff: reason.NewEntry(reason.SeverityInfo, "",
		"if the target cluster runs ExtendedResourceToleration (GKE does), say so in the policy: name the gke or tpu profile (--profile nvidia,gke,tpu) or set implicitTolerations: true; if it does not, tolerate the taint in the pod to have it go there", docTolerate),
	ReasonImplicitTolerationsUnknown: reason.NewEntry(reason.SeverityWarning, "",
		"say in the policy whether the target cluster runs ExtendedResourceToleration: implicitTolerations: true (GKE; or name the gke and tpu profiles, --profile nvidia,gke,tpu) adds the toleration to translations, implicitTolerations: false says it does not", docTolerate),
})
