package forecast

import (
	"maps"
	"slices"

	"github.com/claimbridge/claimbridge/cutover"
)

// Caveats of a one-day switch from the device plugin to DRA that no row of
// the forecast shows, each with the source a platform team can check.
var Caveats = []cutover.Caveat{
	{
		Text: "GPU Feature Discovery is not deployed in the GPU Operator's DRA mode: the nvidia.com/gpu.*, nvidia.com/cuda.* and nvidia.com/mig.* node labels go away (or go stale where they were written once). " +
			"Whatever reads them — node selectors in manifests claimbridge does not see, dashboards and alerts grouped by GPU model, node remediation and autoscaling rules — must read the DRA driver's device attributes instead.",
		Source: "NVIDIA GPU Operator v26.7.0: the DRA stack (GPUCluster) replaces the ClusterPolicy stack, GFD included",
	},
	{
		Text: "The device-plugin stack and the DRA stack cannot run in one cluster: every node the operator manages switches at once. " +
			"Nodes labelled nvidia.com/gpu.deploy.operands=false are left alone by the operator.",
		Source: "NVIDIA GPU Operator v26.7.0, controllers/clusterpolicy_controller.go (\"allow both CRs to co-exist\" is a TODO)",
	},
	{
		Text:   "Preemption: kube-scheduler cannot preempt pods to free DRA devices in Kubernetes 1.37, so a GPU pod that moves to a claim can no longer preempt lower-priority GPU pods (pods served through extendedResourceName classes included).",
		Source: "KEP-5690 (DRA preemption, gate DRAPreemption, targeted at 1.38)",
	},
	{
		Text: "Time-sliced GPUs are forecast as the platform's NVIDIA DRA driver publishes them: with its defaults (--consumable-shares=disabled) each pod that shares a GPU today takes a whole one; consumable shares take driver v0.5.0 or later with its ConsumableShares feature gate (alpha, off by default) and --consumable-shares=N (Helm values featureGates.ConsumableShares, consumableShares), " +
			"one N per driver installation (nodes shared differently need an installation each), on Kubernetes with DRAConsumableCapacity (beta since 1.36); in its memory mode a claim that asks for no memory takes all of the GPU's. Shares have no memory or fault isolation, as with time-slicing, and the scheduler fills one GPU's shares before the next. " +
			"MPS has no counterpart across pods: the driver runs MPS per claim and refuses it on shared GPUs, so workloads that select MPS stay as submitted (SharedMPSNotMapped). Dynamic MIG is alpha too.",
		Source: "kubernetes-sigs/dra-driver-nvidia-gpu v0.5.0 feature gates (ConsumableShares, MPSSupport, DynamicMIG) and consumable_shares.go; KEP-5075",
	},
	{
		Text:   "Quota: ResourceQuota on requests.nvidia.com/gpu no longer counts translated pods; their claims are charged <class>.deviceclass.resource.k8s.io/devices when the claim is created (over quota, the pod stays Pending with FailedResourceClaimCreation).",
		Source: "Kubernetes 1.37 ResourceQuota for DRA; pkg/controller/resourceclaim/controller.go",
	},
	{
		Text:   "Queues: Kueue admits DRA workloads only with every DeviceClass listed in resources.deviceClassMappings and rejects templates with firstAvailable; Volcano and KAI-Scheduler skip queue quota for some request shapes.",
		Source: "Kueue v0.19 DRA integration; Volcano docs/user-guide/how_to_enable_dra.md; KAI-Scheduler pkg/common/resources/dra.go",
	},
	{
		Text:   "Scoring: a claim does not feed NodeResourcesFit's bin-packing the way nvidia.com/gpu did; pods served through an extendedResourceName class still do.",
		Source: "kube-scheduler 1.37 NodeResourcesFit and BalancedAllocation",
	},
}

// driverCaveats are the caveats of one driver's switch, shown when the
// forecast switches nodes to it.
var driverCaveats = map[string][]cutover.Caveat{
	DriverAMD: {
		{
			Text: "AMD GPUs switch with the AMD GPU Operator v1.5 (DeviceConfig spec.draDriver.enable: true with spec.devicePlugin.enableDevicePlugin: false; the operator refuses both on one DeviceConfig, so the switch goes DeviceConfig by DeviceConfig). " +
				"Its DRA driver image defaults to rocm/k8s-gpu-dra-driver:latest, which names no version: pin one. Its DeviceClass gpu.amd.com maps no extended resource, so a pod that still asks for amd.com/gpu after the switch stays Pending.",
			Source: "ROCm/gpu-operator v1.5.1: docs/dra/dra-driver.md, internal/validator/specValidators.go (ValidateDRADriverSpec), helm-charts-k8s/templates/dra-driver-deviceclass.yaml",
		},
		{
			Text: "The AMD DRA driver publishes the kernel module's version as the version attribute driverVersion. A version that is not semver 2.0 is refused by the apiserver with the whole ResourceSlice: the node's GPUs are not served at all. " +
				"Later versions of the driver keep the first three components of an out-of-tree module's version (6.19.14.31400000 is 6.19.14, the whole of it in driverVersionFull) and publish none for the in-kernel module; its first versions published the version as it is. " +
				"The forecast reads the version from the node labeller's amd.com/gpu.driver-version and does not forecast a node whose version would be refused.",
			Source: "ROCm/k8s-gpu-dra-driver pkg/amdgpu (SemverDriverVersion, GetDriverVersion), cmd/gpu-kubeletplugin/deviceinfo.go; Kubernetes 1.37 pkg/apis/resource/validation (semverRe)",
		},
		{
			Text: "The AMD DRA driver's attributes changed between its versions (its repository tags none): the first ones published family, cardIndex, renderIndex, pciAddr and driverSrcVersion, and the KFD's unique_id as deviceID (parentPciAddr and parentDeviceID on a partition); later ones productName, deviceID (the PCI device ID, 0x74a1, a partition its GPU's), driverVersion, driverVersionFull, partitionProfile and numaNode. " +
				"The forecast makes the later ones' devices; selectors written for the first ones' attributes (family, parentDeviceID) match nothing there. The node labeller keeps writing its labels (amd.com/gpu.family among them) beside the DRA driver, so node selectors on them keep working.",
			Source: "ROCm/k8s-gpu-dra-driver cmd/gpu-kubeletplugin/deviceinfo.go (2622427 and 08bc729c), docs/driver-attributes.md; ROCm/gpu-operator v1.5.1 (the node labeller follows spec.devicePlugin.enableNodeLabeller alone)",
		},
	},
}

// caveatsFor are the caveats of a forecast that switches nodes to the
// drivers: the general ones, then each driver's, in driver order.
func caveatsFor(drivers map[string]bool) []cutover.Caveat {
	out := slices.Clone(Caveats)
	for _, d := range slices.Sorted(maps.Keys(drivers)) {
		out = append(out, driverCaveats[d]...)
	}
	return out
}
