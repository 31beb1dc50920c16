package forecast

import (
	"regexp"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/platform"
)

// What the forecast knows of the DRA drivers: their names, the DeviceClasses
// their charts install, the attributes and capacities they publish, and why
// the others are not forecast. The vocabulary (translate's policy) says what
// a node's labels mean; this file says what a driver writes on its own.

// Driver names.
const (
	DriverNVIDIA = "gpu.nvidia.com"
	DriverTPU    = "tpu.google.com"
	// DriverAMD is the AMD GPU DRA driver's (ROCm/k8s-gpu-dra-driver
	// pkg/consts DriverName).
	DriverAMD = "gpu.amd.com"
)

// Device types of the NVIDIA driver (its "type" attribute), and the AMD
// driver's full GPU and partition (consts AmdGpuDeviceType,
// AmdPartitionDeviceType).
const (
	typeGPU          = "gpu"
	typeMIG          = "mig"
	typeAMDGPU       = "amdgpu"
	typeAMDPartition = "amdgpu-partition"
)

// defaultClasses are the DeviceClasses each forecast driver's chart
// installs, as the repository's fleets write them (examples/fleets); which
// extended resource each maps is the platform's (object). The NVIDIA chart's vfio and ComputeDomain
// classes serve devices the forecast does not make. The AMD class is the
// AMD GPU Operator's (ROCm/gpu-operator v1.5.1
// helm-charts-k8s/templates/dra-driver-deviceclass.yaml,
// draDriver.deviceClass.create, default true).
var defaultClasses = map[string][]classSpec{
	DriverNVIDIA: {
		{name: "gpu.nvidia.com", expr: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`},
		{name: "mig.nvidia.com", expr: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "mig"`},
	},
	DriverTPU: {
		{name: "tpu.google.com", expr: `device.driver == "tpu.google.com"`},
	},
	DriverAMD: {
		{name: "gpu.amd.com", expr: `device.driver == 'gpu.amd.com'`},
	},
}

type classSpec struct{ name, expr string }

// object is the class as the platform's install creates it: with the
// extendedResourceName the platform says it maps, where kube-scheduler
// serves one at the platform's release.
func (c classSpec) object(plat *platform.Platform) *resourceapi.DeviceClass {
	out := &resourceapi.DeviceClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "DeviceClass"},
		ObjectMeta: metav1.ObjectMeta{Name: c.name},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: c.expr},
		}}},
	}
	if r := plat.Maps(c.name); r != "" {
		out.Spec.ExtendedResourceName = &r
	}
	return out
}

// knownClasses says which driver, and which of its device types, the
// DeviceClasses of the vendor charts select.
var knownClasses = map[string]struct{ driver, devType string }{
	"gpu.nvidia.com":      {DriverNVIDIA, typeGPU},
	"mig.nvidia.com":      {DriverNVIDIA, typeMIG},
	"vfio.gpu.nvidia.com": {DriverNVIDIA, "vfio"},
	"tpu.google.com":      {DriverTPU, ""},
	"gpu.amd.com":         {DriverAMD, ""}, // whole GPUs and partitions
	"gpu.intel.com":       {"gpu.intel.com", ""},
	"gpu-vfio.intel.com":  {"gpu.intel.com", ""},
	"gaudi.intel.com":     {"gaudi.intel.com", ""},
	"qat.intel.com":       {"qat.intel.com", ""},
	"dra.cpu":             {"dra.cpu", ""},
	// The rdma profile's class for dranet (dranet ships none).
	"dranet-rdma": {"dra.net", ""},
}

var (
	driverExpr = regexp.MustCompile(`device\.driver\s*==\s*["']([^"']+)["']`)
	typeExpr   = regexp.MustCompile(`\.type\s*==\s*["']([^"']+)["']`)
)

// classDriver is the driver (and device type) a DeviceClass selects: the
// vendor charts' classes by name, any other class by the driver its
// selectors compare device.driver with. ok is false when neither tells.
func classDriver(name string, classes []*resourceapi.DeviceClass) (driver, devType string, ok bool) {
	for _, c := range classes {
		if c.Name != name {
			continue
		}
		for _, s := range c.Spec.Selectors {
			if s.CEL == nil {
				continue
			}
			if m := driverExpr.FindStringSubmatch(s.CEL.Expression); m != nil {
				driver = m[1]
			}
			if m := typeExpr.FindStringSubmatch(s.CEL.Expression); m != nil {
				devType = m[1]
			}
		}
		if driver != "" {
			return driver, devType, true
		}
	}
	if k, ok := knownClasses[name]; ok {
		return k.driver, k.devType, true
	}
	return "", "", false
}

// notForecast says why the devices of drivers the forecast does not make
// are not forecast.
var notForecast = map[string]string{
	"gpu.intel.com": "Intel GPUs: the vocabulary maps no node label to the Intel driver's attributes (model, family, " +
		"pciId, memory), nor tells its device names (PCI addresses)",
	"gaudi.intel.com": "Intel Gaudi: the vocabulary maps no node label to the driver's attributes (model, serial), " +
		"nor tells its device names (PCI addresses)",
	"qat.intel.com": "Intel QAT: the vocabulary maps no node label to the driver's attributes",
	"dra.net": "RDMA NICs: the RDMA shared device plugin's resources are shares of NIC pools, not NICs, and the " +
		"vocabulary maps no node label to dranet's attributes (ifName, pciAddress, rdma); the NICs cannot be counted",
	"dra.cpu": "CPUs: dra-driver-cpu's devices (NUMA nodes, sockets or CPUs) are not told by the node's labels",
}

// Attributes and capacities each device type publishes, as the driver
// writes them (its own without the domain, the standard ones qualified):
// what a forecast device lacks of them is Unknown. Sources: reference
// dra.md §3.2, §3.3, the vendor ground truth (internal/testing/vendortruth)
// and, for AMD, the driver's source (amd.go).
var (
	nvidiaGPUAttributes = []string{"architecture", "brand", "cudaComputeCapability", "cudaDriverVersion", "driverVersion",
		stdNUMANode, stdPCIBusID, stdPCIeRoot, "productName", "type", "uuid"}
	nvidiaGPUCapacity   = []string{"memory"}
	nvidiaMIGAttributes = append(slices.Clone(nvidiaGPUAttributes), "parentUUID", "profile")
	// memorySlice<i> is one capacity per memory slice the MIG device
	// occupies: its placement, which no label tells.
	nvidiaMIGCapacity = []string{"copyEngines", "decoders", "encoders", "jpegEngines", "memory", "memorySlice<i>",
		"multiprocessors", "ofaEngines"}
	tpuAttributes = []string{"accelerator", "brand", "chipCount", "index", "tpuGen", "uuid"}
	// The AMD driver's full GPU and partition alike: numaNode is its own
	// (int, unqualified) beside the standard one; partitionProfile only on
	// GPUs that can be partitioned (always on a partition); driverVersion
	// and driverVersionFull only where the kernel module reports a version.
	amdGPUAttributes = []string{"deviceID", "driverVersion", "driverVersionFull", "numaNode", "partitionProfile", "productName",
		stdNUMANode, stdPCIBusID, stdPCIeRoot, "type"}
	amdGPUCapacity = []string{"computeUnits", "memory", "simdUnits"}
)

// Standard attributes (k8s.io/dynamic-resource-allocation/deviceattribute).
const (
	stdNUMANode = "resource.kubernetes.io/numaNode"
	stdPCIBusID = "resource.kubernetes.io/pciBusID"
	stdPCIeRoot = "resource.kubernetes.io/pcieRoot"
)
