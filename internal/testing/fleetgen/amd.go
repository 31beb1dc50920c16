package fleetgen

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
)

// The AMD GPU DRA driver (ROCm/k8s-gpu-dra-driver) as AMD published its
// devices: each device here carries the attributes and capacities of one
// of internal/testing/vendortruth's dra-devices-amd-*.json (a whole MI300X
// in SPX/NPS1, a partition of one in CPX/NPS1; PROVENANCE.txt says where
// each value comes from), which a feasibility test holds equal: fleetgen
// imports nothing of the module. Names follow the driver's
// gpu-<card>-<render>, eight DRM nodes per GPU (AMD's whole GPU gpu-56-184
// is the eighth GPU's name here, its partition gpu-4-132 the fifth
// partition of the first); PCI bus IDs are numbered per GPU, AMD's
// (0003:00:04.0, 0002:00:01.0) among them.

// The AMD driver and the DeviceClass the AMD GPU Operator creates
// (ROCm/gpu-operator helm-charts-k8s/templates/dra-driver-deviceclass.yaml).
const (
	DriverAMD = "gpu.amd.com"
	ClassAMD  = "gpu.amd.com"
)

// amdPartitionsPerGPU: an MI300X in CPX mode is 8 partitions.
const amdPartitionsPerGPU = 8

func amdFleet() Fleet {
	f := Fleet{
		Name: "amd",
		Description: "AMD Instinct MI300X nodes of 8 GPUs as the AMD DRA driver publishes them: mi300x-0 in SPX/NPS1 " +
			"(8 whole GPUs, type amdgpu), mi300x-cpx-0 in CPX/NPS1 (64 partitions, type amdgpu-partition, and no whole GPU); " +
			"each device as AMD published one (internal/testing/vendortruth).",
		Classes: classes(ClassAMD),
	}
	addMI300X(&f, "mi300x-0", false)
	addMI300X(&f, "mi300x-cpx-0", true)
	return f
}

// addMI300X adds a node of 8 MI300X, whole or each in 8 partitions.
func addMI300X(f *Fleet, name string, cpx bool) {
	n := node(name, "Standard_ND96isr_MI300X_v5", "zone-a", "96", "1850Gi", nil)
	var devices []resourceapi.Device
	for gpu := range 8 {
		if !cpx {
			devices = append(devices, mi300x(8*gpu, fmt.Sprintf("0003:00:%02x.0", gpu+1)))
			continue
		}
		for p := range amdPartitionsPerGPU {
			devices = append(devices, mi300xCPX(8*gpu+p, fmt.Sprintf("0002:00:%02x.0", gpu+1)))
		}
	}
	f.Nodes = append(f.Nodes, n)
	f.Slices = append(f.Slices, slice(name, DriverAMD, devices))
}

// mi300x is a whole MI300X in SPX/NPS1 with DRM card index card
// (vendortruth's dra-devices-amd-mi300x.json).
func mi300x(card int, busID string) resourceapi.Device {
	d := amdDevice(card, busID, "pci0003:00", "6.12.12")
	d.Attributes["type"] = str("amdgpu")
	d.Attributes["partitionProfile"] = str("spx_nps1")
	d.Capacity["computeUnits"], d.Capacity["simdUnits"], d.Capacity["memory"] = capacity("304"), capacity("1216"), capacity("196592Mi")
	return d
}

// mi300xCPX is a partition of an MI300X in CPX/NPS1 with DRM card index
// card (vendortruth's dra-devices-amd-mi300x-cpx.json): it carries its
// GPU's deviceID, productName and PCI bus ID.
func mi300xCPX(card int, busID string) resourceapi.Device {
	d := amdDevice(card, busID, "pci0002:00", "6.14.14")
	d.Attributes["type"] = str("amdgpu-partition")
	d.Attributes["partitionProfile"] = str("cpx_nps1")
	d.Capacity["computeUnits"], d.Capacity["simdUnits"], d.Capacity["memory"] = capacity("38"), capacity("152"), capacity("24574Mi")
	return d
}

// amdDevice holds what a whole MI300X and its partitions publish alike.
func amdDevice(card int, busID, root, version string) resourceapi.Device {
	return resourceapi.Device{
		Name: fmt.Sprintf("gpu-%d-%d", card, 128+card),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"productName":       str("AMD_Instinct_MI300X_OAM"),
			"deviceID":          str("0x74a1"),
			"driverVersion":     ver(version),
			"driverVersionFull": str(version),
			AttrPCIBusID:        str(busID),
			AttrPCIeRoot:        str(root),
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{},
	}
}
