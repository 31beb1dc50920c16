package fleetgen

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// HAMi's DRA driver (Project-HAMi/k8s-dra-driver, cmd/hami-kubelet-plugin) and the class its
// chart installs (chart/hami-dra-driver/templates/deviceclass-hami-gpu.yaml).
const (
	DriverHAMi = "hami-core-gpu.project-hami.io"
	ClassHAMi  = "hami-core-gpu.project-hami.io"
)

var t4 = gpuModel{productName: "Tesla T4", architecture: "Turing", cc: "7.5.0", memory: "15360Mi", gfdFamily: "turing"}

// hamiFleet: two GPU nodes whose GPUs HAMi's DRA driver publishes for sharing by memory and
// cores. Not part of "mixed": its class maps nvidia.com/gpu (KEP-5004), which would change how
// the other fleets' pods are served.
func hamiFleet() Fleet {
	f := Fleet{
		Name: "hami-t4",
		Description: "Two nodes with NVIDIA T4 GPUs (one on hami-t4-0, two on hami-t4-1) published by HAMi's DRA driver " +
			"(hami-core-gpu.project-hami.io): devices that allow multiple allocations, with the consumable capacities " +
			"memory (bytes, step 1Mi) and cores (percent); the DeviceClass maps nvidia.com/gpu as the driver's chart does.",
		Classes: []*resourceapi.DeviceClass{hamiClass()},
	}
	for i, gpus := range []int{1, 2} {
		addHAMiT4(&f, fmt.Sprintf("hami-t4-%d", i), gpus)
	}
	return f
}

func hamiClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "DeviceClass"},
		ObjectMeta: metav1.ObjectMeta{Name: ClassHAMi},
		Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: `device.driver == 'hami-core-gpu.project-hami.io' && device.attributes['hami-core-gpu.project-hami.io'].type == 'hami-gpu'`,
			}}},
			ExtendedResourceName: ptr.To("nvidia.com/gpu"),
		},
	}
}

// addHAMiT4 adds an n1-standard-8 node with T4 GPUs.
func addHAMiT4(f *Fleet, name string, gpus int) {
	n := node(name, "n1-standard-8", "zone-e", "8", "30Gi", nil)
	n.Labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
	var devices []resourceapi.Device
	for i := range gpus {
		devices = append(devices, hamiDevice(name, t4, i, pciePort{root: 0x00 + i*0x10, numaNode: 0}))
	}
	f.Nodes = append(f.Nodes, n)
	f.Slices = append(f.Slices, slice(name, DriverHAMi, devices))
}

// hamiDevice is one GPU the way HAMi's driver publishes it (hami_core.go, GetDevice):
// hami-gpu-<minor>, the raw NVML product name, memory in bytes and cores in percent, both
// consumable with the whole GPU as the default request.
func hamiDevice(nodeName string, m gpuModel, minor int, port pciePort) resourceapi.Device {
	mem := resource.MustParse(m.memory)
	return resourceapi.Device{
		Name: fmt.Sprintf("hami-gpu-%d", minor),
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type":                  str("hami-gpu"),
			"uuid":                  str("GPU-" + uuid(nodeName, "hami-gpu", strconv.Itoa(minor))),
			"minor":                 num(int64(minor)),
			"productName":           str(m.productName),
			"brand":                 str("Nvidia"),
			"architecture":          str(m.architecture),
			"cudaComputeCapability": ver(m.cc),
			"driverVersion":         ver(nvidiaDriverVersion),
			"cudaDriverVersion":     ver(cudaDriverVersion),
			"pcieBusID":             str(port.gpuBus()),
			AttrPCIeRoot:            str(port.pcieRoot()),
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			"cores": {
				Value: *resource.NewQuantity(100, resource.DecimalSI),
				RequestPolicy: &resourceapi.CapacityRequestPolicy{
					Default: resource.NewQuantity(100, resource.DecimalSI),
					ValidRange: &resourceapi.CapacityRequestPolicyRange{
						Min:  resource.NewQuantity(0, resource.DecimalSI),
						Max:  resource.NewQuantity(100, resource.DecimalSI),
						Step: resource.NewQuantity(1, resource.DecimalSI),
					},
				},
			},
			"memory": {
				Value: mem,
				RequestPolicy: &resourceapi.CapacityRequestPolicy{
					Default: ptr.To(mem.DeepCopy()),
					ValidRange: &resourceapi.CapacityRequestPolicyRange{
						Min:  resource.NewQuantity(1<<20, resource.BinarySI),
						Max:  ptr.To(mem.DeepCopy()),
						Step: resource.NewQuantity(1<<20, resource.BinarySI),
					},
				},
			},
		},
		AllowMultipleAllocations: ptr.To(true),
	}
}

// gkeL4Fleet: GPU nodes as GKE makes them, tainted nvidia.com/gpu=present:NoSchedule, so that
// only pods with the toleration GKE's admission gives GPU pods land there.
func gkeL4Fleet() Fleet {
	f := Fleet{
		Name: "gke-l4",
		Description: "Two GKE g2-standard-8 nodes with one NVIDIA L4 each, labelled cloud.google.com/gke-accelerator=nvidia-l4 " +
			"and tainted nvidia.com/gpu=present:NoSchedule like GKE GPU node pools.",
		Classes: classes(ClassGPU, ClassMIG),
	}
	for i := range 2 {
		name := fmt.Sprintf("gke-l4-%d", i)
		addL4(&f, name, 1)
		n := f.Nodes[len(f.Nodes)-1]
		n.Labels["cloud.google.com/gke-accelerator"] = "nvidia-l4"
		n.Labels["cloud.google.com/gke-gpu"] = "true"
		n.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
	}
	return f
}
