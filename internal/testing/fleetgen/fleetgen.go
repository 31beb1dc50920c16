// Package fleetgen builds deterministic device inventories ("fleets"): Nodes, DeviceClasses and
// ResourceSlices with the attributes the real DRA drivers publish (NVIDIA gpu.nvidia.com, dranet
// dra.net, dra-driver-cpu dra.cpu, Google tpu.google.com) and device-plugin nodes labelled by GPU
// Feature Discovery.
//
// The fleets shipped under examples/fleets are the output of [Shipped] written by [Write]
// (see hack/genfleet); a test fails when the committed files drift from the generator.
// [Synthetic] builds large fleets for benchmarks. Everything is pure and deterministic: the same
// input always yields byte-identical output, identifiers (UUIDs, MAC addresses) are derived from
// names, never from randomness or time.
package fleetgen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Driver names.
const (
	DriverGPU = "gpu.nvidia.com"
	DriverNIC = "dra.net"
	DriverCPU = "dra.cpu"
	DriverTPU = "tpu.google.com"
)

// DeviceClass names, as installed by the vendor charts (dranet ships no class; ours is
// "dranet-rdma").
const (
	ClassGPU = "gpu.nvidia.com"
	ClassMIG = "mig.nvidia.com"
	ClassNIC = "dranet-rdma"
	ClassCPU = "dra.cpu"
	ClassTPU = "tpu.google.com"
)

// Standard attribute names (k8s.io/dynamic-resource-allocation/deviceattribute).
const (
	AttrPCIeRoot = "resource.kubernetes.io/pcieRoot"
	AttrPCIBusID = "resource.kubernetes.io/pciBusID"
	AttrNUMANode = "resource.kubernetes.io/numaNode"
)

// Versions published by the NVIDIA driver on every fleet.
const (
	nvidiaDriverVersion     = "580.65.6"
	nvidiaDriverVersionFull = "580.65.06"
	cudaDriverVersion       = "13.0.0"
)

// Fleet is one inventory: the objects a cluster would list.
type Fleet struct {
	// Name is the directory name under examples/fleets.
	Name string
	// Description is written as a comment at the top of every file.
	Description string
	Nodes       []*corev1.Node
	Slices      []*resourceapi.ResourceSlice
	Classes     []*resourceapi.DeviceClass
	Claims      []*resourceapi.ResourceClaim
	TaintRules  []*resourceapi.DeviceTaintRule
}

// Shipped returns the fleets under examples/fleets, in a fixed order; "mixed" is the union of
// the fleets before it (same nodes, same slices) with their DeviceClasses; "hami-t4",
// "gke-l4" and "before-cutover" come after it and are not part of it.
func Shipped() []Fleet {
	fleets := []Fleet{
		{
			Name:        "dgx-h100",
			Description: "Two DGX H100 nodes: 8 H100 GPUs and 8 RDMA NICs each, GPU i and NIC i on one PCIe root, GPUs 0-3 on NUMA node 0, two dra.cpu NUMA devices.",
			Classes:     classes(ClassGPU, ClassMIG, ClassNIC, ClassCPU),
		},
		{
			Name:        "a100-mig",
			Description: "Two A100-SXM4-80GB nodes with MIG: on a100-mig-0 GPU 0 is 7x1g.10gb and GPU 1 is 2x3g.40gb, on a100-mig-1 GPU 0 is 2x3g.40gb and GPU 1 is 1x7g.80gb; all other GPUs are full GPUs.",
			Classes:     classes(ClassGPU, ClassMIG),
		},
		{
			Name:        "l4-inference",
			Description: "Four inference nodes with one or two NVIDIA L4 GPUs.",
			Classes:     classes(ClassGPU, ClassMIG),
		},
		{
			Name:        "tpu-v5e",
			Description: "Two TPU v5e nodes with 8 chips each (topology 2x4), tainted google.com/tpu=present:NoSchedule like GKE.",
			Classes:     classes(ClassTPU),
		},
		{
			Name:        "legacy-gfd",
			Description: "Two A100-SXM4-40GB nodes served by the NVIDIA device plugin (nvidia.com/gpu: 8) and labelled by GPU Feature Discovery and NFD; no ResourceSlices. The NVIDIA DeviceClasses exist cluster-wide.",
			Classes:     classes(ClassGPU, ClassMIG),
		},
	}
	for i := range 2 {
		addDGXH100(&fleets[0], fmt.Sprintf("dgx-h100-%d", i), "")
	}
	addA100(&fleets[1], "a100-mig-0", []migLayout{{gpu: 0, profile: mig1g10gb, count: 7}, {gpu: 1, profile: mig3g40gb, count: 2}})
	addA100(&fleets[1], "a100-mig-1", []migLayout{{gpu: 0, profile: mig3g40gb, count: 2}, {gpu: 1, profile: mig7g80gb, count: 1}})
	for i, gpus := range []int{1, 1, 2, 2} {
		addL4(&fleets[2], fmt.Sprintf("l4-inference-%d", i), gpus)
	}
	for i := range 2 {
		addTPU(&fleets[3], fmt.Sprintf("tpu-v5e-%d", i))
	}
	for i := range 2 {
		addLegacyA100(&fleets[4], fmt.Sprintf("legacy-gfd-%d", i))
	}

	mixed := Fleet{
		Name:        "mixed",
		Description: "All shipped fleets in one cluster: dgx-h100, a100-mig, l4-inference, tpu-v5e and legacy-gfd.",
		Classes:     classes(ClassGPU, ClassMIG, ClassNIC, ClassCPU, ClassTPU),
	}
	for _, f := range fleets {
		mixed.Nodes = append(mixed.Nodes, f.Nodes...)
		mixed.Slices = append(mixed.Slices, f.Slices...)
	}
	return append(fleets, mixed, hamiFleet(), gkeL4Fleet(), beforeCutoverFleet(), sharedFleet())
}

// Synthetic returns a fleet of n DRA nodes named node-00000, node-00001, … cycling through four
// shapes: a DGX H100 (8 GPUs + 8 NICs + 2 CPU devices), an A100 node with MIG, an L4 node with
// two GPUs and an A100 node with 8 full GPUs. Every node carries the label
// claimbridge.example/shape=<dgx-h100|a100-mig|l4|a100>.
func Synthetic(n int) Fleet {
	f := Fleet{
		Name:        fmt.Sprintf("synthetic-%d", n),
		Description: fmt.Sprintf("%d synthetic nodes cycling through DGX H100, A100 with MIG, 2x L4 and 8x A100.", n),
		Classes:     classes(ClassGPU, ClassMIG, ClassNIC, ClassCPU, ClassTPU),
	}
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		switch i % 4 {
		case 0:
			addDGXH100(&f, name, "dgx-h100")
		case 1:
			addA100(&f, name, []migLayout{{gpu: 0, profile: mig1g10gb, count: 7}, {gpu: 1, profile: mig3g40gb, count: 2}})
			f.Nodes[len(f.Nodes)-1].Labels[SyntheticShapeLabel] = "a100-mig"
		case 2:
			addL4(&f, name, 2)
			f.Nodes[len(f.Nodes)-1].Labels[SyntheticShapeLabel] = "l4"
		case 3:
			addA100(&f, name, nil)
			f.Nodes[len(f.Nodes)-1].Labels[SyntheticShapeLabel] = "a100"
		}
	}
	return f
}

// SyntheticShapeLabel is the node label naming the shape of a synthetic node.
const SyntheticShapeLabel = "claimbridge.example/shape"

// AllocateAll returns one allocated ResourceClaim per node that uses every device of the
// given driver on that node, the way a running workload would; used to build busy fleets.
// Claims live in namespace "busy" and are named busy-<node>-<driver-with-dashes>.
func AllocateAll(f Fleet, driver, class string) []*resourceapi.ResourceClaim {
	var claims []*resourceapi.ResourceClaim
	for _, s := range f.Slices {
		if s.Spec.Driver != driver || s.Spec.NodeName == nil || len(s.Spec.Devices) == 0 {
			continue
		}
		node := *s.Spec.NodeName
		claim := &resourceapi.ResourceClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "busy", Name: dnsName("busy-" + node + "-" + driver)},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name:    "all",
				Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeAll},
			}}}},
		}
		alloc := &resourceapi.AllocationResult{NodeSelector: nodeNameSelector(node)}
		for _, d := range s.Spec.Devices {
			alloc.Devices.Results = append(alloc.Devices.Results, resourceapi.DeviceRequestAllocationResult{
				Request: "all", Driver: driver, Pool: s.Spec.Pool.Name, Device: d.Name,
			})
		}
		claim.Status.Allocation = alloc
		claims = append(claims, claim)
	}
	return claims
}

func nodeNameSelector(node string) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}
}

// dnsName replaces dots by dashes.
func dnsName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '.' {
			b[i] = '-'
		}
	}
	return string(b)
}

// classes returns the DeviceClasses with the given names, as the vendor charts define them.
// extendedResourceName is deliberately left unset: the shipped fleets model clusters where the
// legacy resource names are not mapped by KEP-5004.
func classes(names ...string) []*resourceapi.DeviceClass {
	selectors := map[string]string{
		ClassGPU: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`,
		ClassMIG: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "mig"`,
		ClassNIC: `device.driver == "dra.net" && device.attributes["dra.net"].rdma == true`,
		ClassCPU: `device.driver == "dra.cpu"`,
		ClassTPU: `device.driver == "tpu.google.com"`,
		ClassAMD: `device.driver == 'gpu.amd.com'`,
	}
	var out []*resourceapi.DeviceClass
	for _, name := range names {
		out = append(out, &resourceapi.DeviceClass{
			TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "DeviceClass"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
				CEL: &resourceapi.CELDeviceSelector{Expression: selectors[name]},
			}}},
		})
	}
	return out
}

// node returns a Ready-less Node with the usual well-known labels and the given capacity.
func node(name, instanceType, zone string, cpu, memory string, extra corev1.ResourceList) *corev1.Node {
	// Every kubelet reports its root filesystem as ephemeral-storage; a
	// node without it would refuse every pod that requests some.
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(cpu),
		corev1.ResourceMemory:           resource.MustParse(memory),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("200Gi"),
	}
	for k, v := range extra {
		capacity[k] = v
	}
	allocatable := capacity.DeepCopy()
	// The kubelet reserves a little CPU and memory.
	cpuQ := capacity[corev1.ResourceCPU]
	cpuQ.Sub(resource.MustParse("500m"))
	allocatable[corev1.ResourceCPU] = cpuQ
	memQ := capacity[corev1.ResourceMemory]
	memQ.Sub(resource.MustParse("4Gi"))
	allocatable[corev1.ResourceMemory] = memQ
	// and keeps the default eviction threshold (nodefs.available 10%) of
	// the disk.
	allocatable[corev1.ResourceEphemeralStorage] = resource.MustParse("180Gi")
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"kubernetes.io/hostname":           name,
				"kubernetes.io/os":                 "linux",
				"kubernetes.io/arch":               "amd64",
				"node.kubernetes.io/instance-type": instanceType,
				"topology.kubernetes.io/zone":      zone,
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: allocatable},
	}
}

func slice(nodeName, driver string, devices []resourceapi.Device) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-" + driver},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			Pool:     resourceapi.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(nodeName),
			Devices:  devices,
		},
	}
}

// uuid derives a stable UUID-shaped identifier from the given parts.
func uuid(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	s := hex.EncodeToString(h.Sum(nil))
	return s[0:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:32]
}

func mac(parts ...string) string {
	s := uuid(parts...)
	// Locally administered, unicast.
	return "02:" + s[0:2] + ":" + s[2:4] + ":" + s[4:6] + ":" + s[6:8] + ":" + s[9:11]
}

func str(s string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{StringValue: ptr.To(s)}
}
func ver(s string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{VersionValue: ptr.To(s)}
}
func num(i int64) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{IntValue: ptr.To(i)}
}
func boolean(b bool) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{BoolValue: ptr.To(b)}
}

func capacity(q string) resourceapi.DeviceCapacity {
	return resourceapi.DeviceCapacity{Value: resource.MustParse(q)}
}
