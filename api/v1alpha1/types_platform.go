package v1alpha1

// PlatformKind identifies a Platform document (apiVersion
// claimbridge.io/v1alpha1).
const PlatformKind = "Platform"

// Platform says what claimbridge cannot see of the cluster it decides
// for: how each device family's DRA driver is (or will be) installed and
// run, and which autoscaler grows each node pool. It is read from YAML or
// JSON (`--platform FILE`): unknown and duplicate fields are rejected, and
// every error names the path of its field.
// A live webhook detects what it can of the same facts from the cluster
// itself; a fact the document gives wins over a detected one, and what
// neither says is the driver's own default or, where there is none,
// unknown — never guessed.
type Platform struct {
	// APIVersion is "claimbridge.io/v1alpha1". Required.
	APIVersion string `json:"apiVersion"`
	// Kind is "Platform". Required.
	Kind string `json:"kind"`
	// Metadata names the platform, as the reports show it.
	Metadata PolicyMetadata `json:"metadata,omitempty"`
	// Spec holds the platform's facts.
	Spec PlatformSpec `json:"spec"`
}

// PlatformSpec holds the platform's facts.
type PlatformSpec struct {
	// Presets name known install paths whose facts apply first, in this
	// order; the drivers and pools written here then add to them or
	// replace them, family by family and pool by pool. One of
	// "gpu-operator" (the NVIDIA GPU Operator's DRA mode, a GPUCluster),
	// "nvidia-dra-driver" (the standalone NVIDIA DRA driver chart,
	// dra-driver-nvidia-gpu), "eks-auto-mode" (Amazon EKS Auto Mode,
	// whose node image ships the NVIDIA DRA driver), "amd-gpu-operator"
	// (the AMD GPU Operator or the ROCm DRA driver's chart),
	// "tpu-dra-driver" (the Google TPU DRA driver) and "gke-managed"
	// (GKE's managed DRA drivers); the platform concepts page says what
	// each creates and maps, with its sources. Default: none.
	Presets []string `json:"presets,omitempty"`

	// Kubernetes is the cluster's version after the switch, "1.37" or
	// "1.37.2". Its DRA feature gates follow from it (DRAExtendedResource
	// serves a class's extendedResourceName from 1.36, on by default; it
	// is GA from 1.37). Default: 1.37, the release claimbridge is built
	// against.
	Kubernetes string `json:"kubernetes,omitempty"`

	// Drivers say, per device family of the policy, how its DRA driver is
	// installed and run.
	Drivers []DriverPlatform `json:"drivers,omitempty"`

	// Pools say which autoscaler grows each node pool, and whether it adds
	// nodes for pods whose devices come from claims.
	Pools []PoolPlatform `json:"pools,omitempty"`
}

// InstallPath is how a device family's DRA driver is installed.
type InstallPath string

// Install paths.
const (
	// InstallGPUOperator: the NVIDIA GPU Operator's DRA mode (a
	// GPUCluster). Its DeviceClasses map no extended resource.
	InstallGPUOperator InstallPath = "GPUOperator"
	// InstallNVIDIADRADriver: the standalone NVIDIA DRA driver chart
	// (dra-driver-nvidia-gpu). From v0.4.0, on resource.k8s.io/v1, its
	// gpu.nvidia.com class maps nvidia.com/gpu.
	InstallNVIDIADRADriver InstallPath = "NVIDIADRADriver"
	// InstallEKSAutoMode: Amazon EKS Auto Mode (1.36 and later), whose
	// node image runs the NVIDIA DRA driver.
	InstallEKSAutoMode InstallPath = "EKSAutoMode"
	// InstallAMDGPUOperator: the AMD GPU Operator, or the ROCm DRA driver's
	// own chart (k8s-gpu-dra-driver).
	InstallAMDGPUOperator InstallPath = "AMDGPUOperator"
	// InstallTPUDRADriver: the Google TPU DRA driver (dra-driver-google-tpu).
	InstallTPUDRADriver InstallPath = "TPUDRADriver"
	// InstallGKEManaged: GKE's managed DRA drivers.
	InstallGKEManaged InstallPath = "GKEManaged"
)

// InstallPaths lists the install paths a document may name.
func InstallPaths() []InstallPath {
	return []InstallPath{InstallGPUOperator, InstallNVIDIADRADriver, InstallEKSAutoMode, InstallAMDGPUOperator, InstallTPUDRADriver, InstallGKEManaged}
}

// DriverPlatform is how one device family's DRA driver is installed and
// run.
type DriverPlatform struct {
	// Family is the device family of the policy's resource rules the
	// driver serves ("nvidia-gpu", "amd-gpu", "google-tpu"). Required.
	Family string `json:"family"`

	// Install is how the driver is installed. Default: the preset's for
	// the family, else unknown.
	Install InstallPath `json:"install,omitempty"`

	// Release is the driver's (or its chart's) release, "v0.4.1" or
	// "26.7.0", which decides some facts of its install path (the release
	// from which a class maps an extended resource). Default: unknown.
	Release string `json:"release,omitempty"`

	// Classes are the DeviceClasses the install creates, each with the
	// extended resource it maps (extendedResourceName), if any. Listing
	// them replaces what the install path and release say. Default: the
	// install path's.
	Classes []PlatformClass `json:"classes,omitempty"`

	// ConsumableShares is the NVIDIA DRA driver's --consumable-shares
	// (Helm value consumableShares, behind its Alpha feature gate
	// ConsumableShares): "disabled", "memory", "unlimited" or a whole
	// number of shares per GPU. Default: "disabled", the driver's own
	// default — GPUs are then exclusive, and a workload that time-slices
	// them today cannot move.
	ConsumableShares string `json:"consumableShares,omitempty"`

	// DynamicMIG says whether the NVIDIA DRA driver runs with its
	// DynamicMIG feature gate. Default: off, the driver's default.
	DynamicMIG *bool `json:"dynamicMIG,omitempty"`
	// MPS says whether the NVIDIA DRA driver runs with its MPSSupport
	// feature gate. Default: off, the driver's default.
	MPS *bool `json:"mps,omitempty"`
}

// PlatformClass is a DeviceClass an install creates.
type PlatformClass struct {
	// Name of the DeviceClass. Required.
	Name string `json:"name"`
	// ExtendedResourceName is the extended resource the class maps
	// (KEP-5004): kube-scheduler then serves a pod that asks for it, as
	// submitted, from the class's devices. Default: none.
	ExtendedResourceName string `json:"extendedResourceName,omitempty"`
}

// AutoscalerKind is the autoscaler that grows a node pool.
type AutoscalerKind string

// Autoscalers.
const (
	// AutoscalerNone: the pool does not grow for pending pods.
	AutoscalerNone AutoscalerKind = "None"
	// AutoscalerKarpenter: Karpenter (its NodePool names the pool). It
	// provisions for pods with claims only with its DRA support on
	// (--ignore-dra-requests=false; the AWS provider's settings.enableDRA),
	// and then only from what it knows of an instance type before launch.
	AutoscalerKarpenter AutoscalerKind = "Karpenter"
	// AutoscalerClusterAutoscaler: the Cluster Autoscaler, which
	// provisions for claims with --enable-dynamic-resource-allocation, and
	// from zero only for providers that can tell a new node's devices
	// (clusterapi; not externalgrpc).
	AutoscalerClusterAutoscaler AutoscalerKind = "ClusterAutoscaler"
	// AutoscalerGKE: GKE's node-pool autoscaling, which never scales a
	// pool up from zero nodes for a pod with claims.
	AutoscalerGKE AutoscalerKind = "GKE"
)

// PoolPlatform is one node pool and its autoscaler.
type PoolPlatform struct {
	// Label is the node-label key whose value names the pool
	// ("karpenter.sh/nodepool", "cloud.google.com/gke-nodepool",
	// "eks.amazonaws.com/nodegroup"). Required.
	Label string `json:"label"`
	// Name is the label's value that names the pool. Default: every pool
	// of the label.
	Name string `json:"name,omitempty"`

	// Autoscaler is the autoscaler that grows the pool. Required.
	Autoscaler AutoscalerKind `json:"autoscaler"`

	// DRA says whether the autoscaler adds nodes for pods whose devices
	// come from claims: Karpenter with --ignore-dra-requests=false (AWS:
	// settings.enableDRA), the Cluster Autoscaler with
	// --enable-dynamic-resource-allocation. Default: false, both
	// autoscalers' default. Not for GKE or None.
	DRA *bool `json:"dra,omitempty"`

	// Release is the autoscaler's release ("1.14.0"). Default: unknown.
	Release string `json:"release,omitempty"`

	// Provider is the Cluster Autoscaler's cloud provider (--cloud-provider:
	// "clusterapi", "externalgrpc", "aws", "gce", …), which decides whether
	// it can scale a pool up from zero nodes for a pod with claims.
	// Default: unknown.
	Provider string `json:"provider,omitempty"`

	// MinNodes is the pool's minimum (GKE's --min-nodes, a node group's
	// minimum size): a pool at zero nodes grows for a pod with claims only
	// where the autoscaler can tell a new node's devices. Default: unknown.
	MinNodes *int32 `json:"minNodes,omitempty"`
}

// Presets a Platform may name (PlatformSpec.Presets).
const (
	PresetGPUOperator     = "gpu-operator"
	PresetNVIDIADRADriver = "nvidia-dra-driver"
	PresetEKSAutoMode     = "eks-auto-mode"
	PresetAMDGPUOperator  = "amd-gpu-operator"
	PresetTPUDRADriver    = "tpu-dra-driver"
	PresetGKEManaged      = "gke-managed"
)

// PlatformPresets lists the presets a Platform may name.
func PlatformPresets() []string {
	return []string{PresetGPUOperator, PresetNVIDIADRADriver, PresetEKSAutoMode, PresetAMDGPUOperator, PresetTPUDRADriver, PresetGKEManaged}
}
