package forecast

// Caveats of a one-day switch from the device plugin to DRA that no row of
// the forecast shows, each with the source a platform team can check.
var Caveats = []Caveat{
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
		Text: "Time-sliced GPUs are forecast as the NVIDIA DRA driver's consumable shares, as many per GPU as the device plugin's replicas: that takes driver v0.5.0 or later with its ConsumableShares feature gate (alpha, off by default) and --consumable-shares=N, " +
			"one N per driver installation (nodes shared differently need an installation each), on Kubernetes with DRAConsumableCapacity (beta since 1.36). Shares have no memory or fault isolation, as with time-slicing, and the scheduler fills one GPU's shares before the next. " +
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
