package fleetgen

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// gpuModel is what NVML reports for one GPU model.
type gpuModel struct {
	productName  string // raw NVML name, with spaces
	architecture string
	cc           string // cudaComputeCapability
	memory       string // total memory as NVML reports it, MiB
	gfdFamily    string
}

var (
	h100 = gpuModel{productName: "NVIDIA H100 80GB HBM3", architecture: "Hopper", cc: "9.0.0", memory: "81559Mi", gfdFamily: "hopper"}
	a100 = gpuModel{productName: "NVIDIA A100-SXM4-80GB", architecture: "Ampere", cc: "8.0.0", memory: "81920Mi", gfdFamily: "ampere"}
	l4   = gpuModel{productName: "NVIDIA L4", architecture: "Ada Lovelace", cc: "8.9.0", memory: "23034Mi", gfdFamily: "ada-lovelace"}
)

// pciePort places one GPU (and its paired NIC) behind a PCIe root.
type pciePort struct {
	root     int // root bus number: pcieRoot is pci0000:<root>
	numaNode int64
}

// gpuBus is the bus of the GPU behind the root, nicBus that of the NIC.
func (p pciePort) pcieRoot() string { return fmt.Sprintf("pci0000:%02x", p.root) }
func (p pciePort) gpuBus() string   { return fmt.Sprintf("0000:%02x:00.0", p.root+6) }
func (p pciePort) nicBus() int      { return p.root + 3 }

// dgxPorts mirrors a DGX H100: eight PCIe switches, four per CPU socket.
var dgxPorts = []pciePort{
	{0x15, 0}, {0x3e, 0}, {0x4d, 0}, {0x5c, 0},
	{0x97, 1}, {0xbe, 1}, {0xcc, 1}, {0xda, 1},
}

// gpuDevice returns a full GPU device named gpu-<minor> the way dra-driver-nvidia-gpu publishes it.
func gpuDevice(nodeName string, m gpuModel, minor int, port pciePort) resourceapi.Device {
	return resourceapi.Device{
		Name: fmt.Sprintf("gpu-%d", minor),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type":                  str("gpu"),
			"uuid":                  str("GPU-" + uuid(nodeName, "gpu", strconv.Itoa(minor))),
			"productName":           str(m.productName),
			"brand":                 str("Nvidia"),
			"architecture":          str(m.architecture),
			"cudaComputeCapability": ver(m.cc),
			"driverVersion":         ver(nvidiaDriverVersion),
			"cudaDriverVersion":     ver(cudaDriverVersion),
			AttrPCIBusID:            str(port.gpuBus()),
			AttrPCIeRoot:            str(port.pcieRoot()),
			AttrNUMANode:            num(port.numaNode),
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"memory": capacity(m.memory),
		},
	}
}

// migProfile describes one A100-80GB MIG profile (nvidia-smi mig -lgip).
type migProfile struct {
	name                                              string // go-nvlib MigProfileInfo.String()
	id                                                int
	slices                                            int // memory slices occupied
	memory                                            string
	multiprocessors, copyEngines, decoders, jpeg, ofa int64
}

var (
	mig1g10gb = migProfile{name: "1g.10gb", id: 19, slices: 1, memory: "9728Mi", multiprocessors: 14, copyEngines: 1}
	mig3g40gb = migProfile{name: "3g.40gb", id: 9, slices: 4, memory: "40192Mi", multiprocessors: 42, copyEngines: 3, decoders: 2}
	mig7g80gb = migProfile{name: "7g.80gb", id: 0, slices: 8, memory: "80640Mi", multiprocessors: 98, copyEngines: 7, decoders: 5, jpeg: 1, ofa: 1}
)

// migLayout partitions one GPU into count instances of one profile, placed side by side.
type migLayout struct {
	gpu     int
	profile migProfile
	count   int
}

// migDevices returns the MIG devices of one partitioned GPU, named
// gpu-<parentMinor>-mig-<profile without dots>-<profileID>-<placementStart>.
func migDevices(nodeName string, m gpuModel, l migLayout, port pciePort) []resourceapi.Device {
	var out []resourceapi.Device
	parent := "GPU-" + uuid(nodeName, "gpu", strconv.Itoa(l.gpu))
	for i := range l.count {
		start := i * l.profile.slices
		if l.profile.slices == 1 {
			start = i
		}
		name := fmt.Sprintf("gpu-%d-mig-%s-%d-%d", l.gpu, strings.ReplaceAll(l.profile.name, ".", ""), l.profile.id, start)
		d := resourceapi.Device{
			Name: name,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"type":                  str("mig"),
				"uuid":                  str("MIG-" + uuid(nodeName, name)),
				"parentUUID":            str(parent),
				"profile":               str(l.profile.name),
				"productName":           str(m.productName),
				"brand":                 str("Nvidia"),
				"architecture":          str(m.architecture),
				"cudaComputeCapability": ver(m.cc),
				"driverVersion":         ver(nvidiaDriverVersion),
				"cudaDriverVersion":     ver(cudaDriverVersion),
				AttrPCIBusID:            str(port.gpuBus()),
				AttrPCIeRoot:            str(port.pcieRoot()),
				AttrNUMANode:            num(port.numaNode),
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"multiprocessors": capacity(strconv.FormatInt(l.profile.multiprocessors, 10)),
				"copyEngines":     capacity(strconv.FormatInt(l.profile.copyEngines, 10)),
				"decoders":        capacity(strconv.FormatInt(l.profile.decoders, 10)),
				"encoders":        capacity("0"),
				"jpegEngines":     capacity(strconv.FormatInt(l.profile.jpeg, 10)),
				"ofaEngines":      capacity(strconv.FormatInt(l.profile.ofa, 10)),
				"memory":          capacity(l.profile.memory),
			},
		}
		for s := start; s < start+l.profile.slices; s++ {
			d.Capacity[resourceapi.QualifiedName(fmt.Sprintf("memorySlice%d", s))] = capacity("1")
		}
		out = append(out, d)
	}
	return out
}

// nicDevice returns a ConnectX-7 RDMA NIC the way dranet publishes it; the name is the
// normalized PCI address.
func nicDevice(nodeName string, i int, port pciePort) resourceapi.Device {
	bus := port.nicBus()
	pciAddress := fmt.Sprintf("0000:%02x:00.0", bus)
	return resourceapi.Device{
		Name: fmt.Sprintf("pci-0000-%02x-00-0", bus),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"dra.net/ifName":        str(fmt.Sprintf("enp%ds0np0", bus)),
			"dra.net/pciAddress":    str(pciAddress),
			"dra.net/mac":           str(mac(nodeName, "nic", strconv.Itoa(i))),
			"dra.net/mtu":           num(9000),
			"dra.net/encapsulation": str("ether"),
			"dra.net/state":         str("up"),
			"dra.net/type":          str("device"),
			"dra.net/pciVendor":     str("Mellanox Technologies"),
			"dra.net/pciDevice":     str("MT2910 Family [ConnectX-7]"),
			"dra.net/numaNode":      num(port.numaNode),
			"dra.net/sriov":         boolean(false),
			"dra.net/virtual":       boolean(false),
			"dra.net/rdma":          boolean(true),
			"dra.net/rdmaDevice":    str(fmt.Sprintf("mlx5_%d", i)),
			AttrPCIeRoot:            str(port.pcieRoot()),
			AttrNUMANode:            num(port.numaNode),
		},
	}
}

// cpuDevices returns dra-driver-cpu's NUMA-grouped devices cpudevnuma000, … with consumable
// dra.cpu/cpu capacity.
func cpuDevices(numaNodes int, cpusPerNUMA int64, socketOf func(numa int) int64) []resourceapi.Device {
	var out []resourceapi.Device
	for n := range numaNodes {
		out = append(out, resourceapi.Device{
			Name: fmt.Sprintf("cpudevnuma%03d", n),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				AttrNUMANode:         num(int64(n)),
				"dra.cpu/socketID":   num(socketOf(n)),
				"dra.cpu/numCPUs":    num(cpusPerNUMA),
				"dra.cpu/smtEnabled": boolean(true),
				"dra.cpu/numaNodeID": num(int64(n)),
				"dra.net/numaNode":   num(int64(n)),
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"dra.cpu/cpu": {Value: *resource.NewQuantity(cpusPerNUMA, resource.DecimalSI)},
			},
			AllowMultipleAllocations: ptr.To(true),
		})
	}
	return out
}

// addDGXH100 adds a DGX H100: 8 H100 + 8 ConnectX-7 + 2 NUMA-grouped CPU devices.
// shape, if set, becomes the SyntheticShapeLabel.
func addDGXH100(f *Fleet, name, shape string) {
	n := node(name, "dgx-h100", "zone-a", "224", "2063Gi", nil)
	n.Labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
	n.Labels["feature.node.kubernetes.io/pci-15b3.present"] = "true"
	if shape != "" {
		n.Labels[SyntheticShapeLabel] = shape
	}
	var gpus, nics []resourceapi.Device
	for i, port := range dgxPorts {
		gpus = append(gpus, gpuDevice(name, h100, i, port))
		nics = append(nics, nicDevice(name, i, port))
	}
	f.Nodes = append(f.Nodes, n)
	f.Slices = append(f.Slices,
		slice(name, DriverGPU, gpus),
		slice(name, DriverNIC, nics),
		slice(name, DriverCPU, cpuDevices(2, 112, func(numa int) int64 { return int64(numa) })),
	)
}

// a100Ports: an HGX A100 board, four GPUs per socket, one PCIe switch per GPU pair.
var a100Ports = []pciePort{
	{0x07, 0}, {0x07, 0}, {0x46, 0}, {0x46, 0},
	{0x85, 1}, {0x85, 1}, {0xc5, 1}, {0xc5, 1},
}

// addA100 adds an 8x A100-SXM4-80GB node; the GPUs named in mig are partitioned.
func addA100(f *Fleet, name string, mig []migLayout) {
	n := node(name, "a2-ultragpu-8g", "zone-b", "96", "1360Gi", nil)
	n.Labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
	migOf := map[int]migLayout{}
	for _, l := range mig {
		migOf[l.gpu] = l
	}
	var devices []resourceapi.Device
	for i, port := range a100Ports {
		// Keep bus IDs distinct for the two GPUs behind one switch.
		p := port
		if l, ok := migOf[i]; ok {
			devices = append(devices, withBus(migDevices(name, a100, l, p), i)...)
			continue
		}
		devices = append(devices, withBus([]resourceapi.Device{gpuDevice(name, a100, i, p)}, i)...)
	}
	f.Nodes = append(f.Nodes, n)
	f.Slices = append(f.Slices, slice(name, DriverGPU, devices))
}

// withBus gives the odd GPU behind a shared switch the next bus number.
func withBus(devices []resourceapi.Device, minor int) []resourceapi.Device {
	if minor%2 == 0 {
		return devices
	}
	for _, d := range devices {
		old := *d.Attributes[AttrPCIBusID].StringValue
		var bus int
		_, _ = fmt.Sscanf(old, "0000:%02x:00.0", &bus)
		d.Attributes[AttrPCIBusID] = str(fmt.Sprintf("0000:%02x:00.0", bus+1))
	}
	return devices
}

// addL4 adds a G2 node with one or two L4 GPUs, each on its own root.
func addL4(f *Fleet, name string, gpus int) {
	cpu, mem := "8", "32Gi"
	if gpus > 1 {
		cpu, mem = "24", "96Gi"
	}
	n := node(name, fmt.Sprintf("g2-standard-%s", cpu), "zone-c", cpu, mem, nil)
	n.Labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
	var devices []resourceapi.Device
	for i := range gpus {
		devices = append(devices, gpuDevice(name, l4, i, pciePort{root: 0x00 + i*0x10, numaNode: 0}))
	}
	f.Nodes = append(f.Nodes, n)
	f.Slices = append(f.Slices, slice(name, DriverGPU, devices))
}

// addTPU adds a ct5lp-hightpu-8t node: 8 TPU v5e chips, topology 2x4.
func addTPU(f *Fleet, name string) {
	n := node(name, "ct5lp-hightpu-8t", "zone-d", "224", "192Gi", nil)
	n.Labels["cloud.google.com/gke-tpu-accelerator"] = "tpu-v5-lite-podslice"
	n.Labels["cloud.google.com/gke-tpu-topology"] = "2x4"
	n.Labels["cloud.google.com/gke-accelerator-count"] = "8"
	n.Spec.Taints = []corev1.Taint{{Key: "google.com/tpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
	var devices []resourceapi.Device
	for i := range 8 {
		devices = append(devices, resourceapi.Device{
			Name: fmt.Sprintf("tpu-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"index":       num(int64(i)),
				"uuid":        str(uuid(name, "tpu", strconv.Itoa(i))),
				"tpuGen":      str("v5lite"),
				"brand":       str("Google"),
				"accelerator": str("tpu-v5-lite-podslice"),
				"chipCount":   num(8),
				"topology":    str("2x4"),
			},
		})
	}
	f.Nodes = append(f.Nodes, n)
	f.Slices = append(f.Slices, slice(name, DriverTPU, devices))
}

// addLegacyA100 adds an 8x A100-SXM4-40GB node served by the device plugin and labelled by
// GPU Feature Discovery (and NFD with deviceLabelFields [vendor], as the GPU Operator sets it).
func addLegacyA100(f *Fleet, name string) {
	n := node(name, "a2-highgpu-8g", "zone-b", "96", "680Gi", corev1.ResourceList{
		"nvidia.com/gpu": resource.MustParse("8"),
	})
	for k, v := range map[string]string{
		"feature.node.kubernetes.io/pci-10de.present": "true",
		"nvidia.com/gpu.present":                      "true",
		"nvidia.com/gpu.product":                      "NVIDIA-A100-SXM4-40GB",
		"nvidia.com/gpu.memory":                       "40960",
		"nvidia.com/gpu.count":                        "8",
		"nvidia.com/gpu.family":                       "ampere",
		"nvidia.com/gpu.compute.major":                "8",
		"nvidia.com/gpu.compute.minor":                "0",
		"nvidia.com/gpu.machine":                      "a2-highgpu-8g",
		"nvidia.com/gpu.replicas":                     "1",
		"nvidia.com/gpu.sharing-strategy":             "none",
		"nvidia.com/mig.capable":                      "true",
		"nvidia.com/mig.strategy":                     "none",
		"nvidia.com/cuda.driver-version.full":         nvidiaDriverVersionFull,
		"nvidia.com/cuda.driver-version.major":        "580",
		"nvidia.com/cuda.driver-version.minor":        "65",
		"nvidia.com/cuda.driver-version.revision":     "06",
		"nvidia.com/cuda.runtime-version.full":        "13.0",
		"nvidia.com/cuda.runtime-version.major":       "13",
		"nvidia.com/cuda.runtime-version.minor":       "0",
	} {
		n.Labels[k] = v
	}
	f.Nodes = append(f.Nodes, n)
}
