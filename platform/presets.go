package platform

import "github.com/claimbridge/claimbridge/api/v1alpha1"

// The install paths as their vendors ship them. Each fact names where it
// was read; docs/concepts/platform.md lists them for operators.

// preset is what one install path says of the drivers it installs.
type preset struct {
	install v1alpha1.InstallPath
	// from names the source of the preset's facts.
	from    string
	drivers []presetDriver
}

type presetDriver struct {
	family  string
	classes []v1alpha1.PlatformClass
	// mapsUnknown: whether the classes map an extended resource is not
	// known for this install path.
	mapsUnknown bool
	wholeNode   bool
}

var presets = map[string]preset{
	// The GPU Operator's DRA mode (a GPUCluster, v26.7): its classes set no
	// extendedResourceName (NVIDIA/gpu-operator internal/state,
	// testdata/golden/gpucluster-dra-driver-full-spec.yaml; gpu-operator#2859
	// asks for it), and its driver runs with the driver's defaults.
	v1alpha1.PresetGPUOperator: {install: v1alpha1.InstallGPUOperator, from: "preset gpu-operator (NVIDIA GPU Operator DRA mode, v26.7)",
		drivers: []presetDriver{{family: "nvidia-gpu", classes: []v1alpha1.PlatformClass{{Name: "gpu.nvidia.com"}, {Name: "mig.nvidia.com"}}}}},
	// The standalone chart (kubernetes-sigs/dra-driver-nvidia-gpu,
	// deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-gpu.yaml):
	// from v0.4.0, on resource.k8s.io/v1, gpu.nvidia.com maps nvidia.com/gpu.
	v1alpha1.PresetNVIDIADRADriver: {install: v1alpha1.InstallNVIDIADRADriver, from: "preset nvidia-dra-driver (the dra-driver-nvidia-gpu chart, v0.4.0 and later)",
		drivers: []presetDriver{{family: "nvidia-gpu", classes: []v1alpha1.PlatformClass{{Name: "gpu.nvidia.com", ExtendedResourceName: "nvidia.com/gpu"}, {Name: "mig.nvidia.com"}}}}},
	// EKS Auto Mode (1.36 and later) runs the NVIDIA DRA driver from its
	// node image; whether its class maps nvidia.com/gpu is not published.
	v1alpha1.PresetEKSAutoMode: {install: v1alpha1.InstallEKSAutoMode, from: "preset eks-auto-mode (Amazon EKS Auto Mode, 1.36 and later)",
		drivers: []presetDriver{{family: "nvidia-gpu", classes: []v1alpha1.PlatformClass{{Name: "gpu.nvidia.com"}, {Name: "mig.nvidia.com"}}, mapsUnknown: true}}},
	// The AMD GPU Operator and the ROCm DRA driver's chart
	// (ROCm/k8s-gpu-dra-driver): gpu.amd.com maps nothing in any release
	// (PR #73, on main only, makes it map amd.com/gpu).
	v1alpha1.PresetAMDGPUOperator: {install: v1alpha1.InstallAMDGPUOperator, from: "preset amd-gpu-operator (AMD GPU Operator, ROCm k8s-gpu-dra-driver releases)",
		drivers: []presetDriver{{family: "amd-gpu", classes: []v1alpha1.PlatformClass{{Name: "gpu.amd.com"}}}}},
	// The Google TPU DRA driver (kubernetes-sigs/dra-driver-google-tpu): class
	// tpu.google.com maps nothing, and the driver prepares only claims for
	// every chip of the node (cmd/tpu-dra-kubeletplugin/state.go,
	// prepareDevices).
	v1alpha1.PresetTPUDRADriver: {install: v1alpha1.InstallTPUDRADriver, from: "preset tpu-dra-driver (dra-driver-google-tpu)",
		drivers: []presetDriver{{family: "google-tpu", classes: []v1alpha1.PlatformClass{{Name: "tpu.google.com"}}, wholeNode: true}}},
	// GKE's managed DRA drivers: the TPU driver's rule holds; whether the
	// GPU class maps nvidia.com/gpu is not published.
	v1alpha1.PresetGKEManaged: {install: v1alpha1.InstallGKEManaged, from: "preset gke-managed (GKE managed DRA drivers)",
		drivers: []presetDriver{
			{family: "nvidia-gpu", classes: []v1alpha1.PlatformClass{{Name: "gpu.nvidia.com"}}, mapsUnknown: true},
			{family: "google-tpu", classes: []v1alpha1.PlatformClass{{Name: "tpu.google.com"}}, wholeNode: true},
		}},
}

// defaults are the drivers' own facts, where nothing else says: the
// classes each driver's chart creates without a mapping (the GPU
// Operator's, the AMD chart's, the TPU driver's), exclusive GPUs
// (--consumable-shares=disabled, the NVIDIA driver's default), DynamicMIG
// and MPS off (Alpha gates, off by default), and the TPU driver's rule.
func defaults() []Driver {
	def := func(what string) Fact { return fact("", Default, what) }
	nvidia := Driver{Family: "nvidia-gpu", Install: unknown("no install path detected or declared"), Release: unknown("no release detected or declared"),
		Classes: []Class{
			{Name: "gpu.nvidia.com", Fact: def("the NVIDIA DRA driver's class, mapping no extended resource (the GPU Operator's DRA mode)")},
			{Name: "mig.nvidia.com", Fact: def("the NVIDIA DRA driver's class for MIG devices")},
		},
		Shares:     fact(v1alpha1.SharesDisabled, Default, "the NVIDIA DRA driver's default (--consumable-shares=disabled)"),
		DynamicMIG: boolFact(false, Default, "the NVIDIA DRA driver's DynamicMIG gate, Alpha, off by default"),
		MPS:        boolFact(false, Default, "the NVIDIA DRA driver's MPSSupport gate, Alpha, off by default"),
		WholeNode:  boolFact(false, Default, "the NVIDIA DRA driver prepares any count of GPUs"),
	}
	tpu := Driver{Family: "google-tpu", Install: unknown("no install path detected or declared"), Release: unknown("no release detected or declared"),
		Classes:   []Class{{Name: "tpu.google.com", Fact: def("the TPU DRA driver's class, mapping no extended resource")}},
		Shares:    unknown("the TPU driver shares no chip"),
		WholeNode: boolFact(true, Default, "the TPU DRA driver prepares only claims for all chips of a node (dra-driver-google-tpu cmd/tpu-dra-kubeletplugin/state.go, prepareDevices)"),
	}
	amd := Driver{Family: "amd-gpu", Install: unknown("no install path detected or declared"), Release: unknown("no release detected or declared"),
		Classes:   []Class{{Name: "gpu.amd.com", Fact: def("the AMD DRA driver's class, mapping no extended resource in any release")}},
		Shares:    unknown("the AMD driver publishes no consumable shares"),
		WholeNode: boolFact(false, Default, "the AMD DRA driver prepares any count of GPUs"),
	}
	return []Driver{amd, tpu, nvidia}
}
