package fleetgen

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The fleets of the placement corpus (feasibility/testdata/placement): machines chosen
// so that the legacy view of a node and the real node can disagree — GPU counts of 1, 2, 4, 6
// and 8, full GPUs next to MIG slices, EFA NICs, an unschedulable node, GKE node pools with
// their own labels and taints, TPU slices of several topologies.

var (
	l40s     = gpuModel{productName: "NVIDIA L40S", architecture: "Ada Lovelace", cc: "8.9.0", memory: "46068Mi", gfdFamily: "ada-lovelace"}
	a100x40  = gpuModel{productName: "NVIDIA A100-SXM4-40GB", architecture: "Ampere", cc: "8.0.0", memory: "40960Mi", gfdFamily: "ampere"}
	mig1g5gb = migProfile{name: "1g.5gb", id: 19, slices: 1, memory: "4864Mi", multiprocessors: 14, copyEngines: 1}
)

// CorpusPoolLabel names the pool of a node of the "mig" corpus fleet.
const CorpusPoolLabel = "claimbridge.example/pool"

// gkeNodePool is the label GKE puts on every node of a node pool.
const gkeNodePool = "cloud.google.com/gke-nodepool"

// Corpus returns the fleets of the placement corpus: "gpus" (DRA GPU machines of many shapes
// and one device-plugin node), "gke" (GKE node pools: GPUs, MIG partitions, TPU slices) and
// "mig" (A100 nodes partitioned with one MIG profile or two, with and without the MIG strategy
// label) and "amd" (MI300X nodes as the AMD DRA driver publishes them, whole GPUs and CPX
// partitions).
func Corpus() []Fleet {
	gpus := Fleet{
		Name: "gpus",
		Description: "DRA GPU machines of many shapes: two DGX H100 (8 GPUs + 8 RDMA NICs), an 8x A100-80GB " +
			"labelled by Karpenter, an A100-80GB with MIG (7x1g.10gb and 2x3g.40gb on two GPUs, 6 full GPUs), " +
			"three L4 nodes (1, 1 and 2 GPUs), a 4x L40S, an 8x H100 with 32 EFA interfaces as an extended " +
			"resource, a cordoned 2x L4, and an A100-40GB node served by the device plugin.",
		Classes: classes(ClassGPU, ClassMIG, ClassNIC, ClassCPU),
	}
	for i := range 2 {
		addDGXH100(&gpus, fmt.Sprintf("dgx-h100-%d", i), "")
	}
	addA100(&gpus, "a100-0", nil)
	gpus.Nodes[len(gpus.Nodes)-1].Labels["karpenter.k8s.aws/instance-gpu-name"] = "a100"
	addA100(&gpus, "a100-mig-0", []migLayout{{gpu: 0, profile: mig1g10gb, count: 7}, {gpu: 1, profile: mig3g40gb, count: 2}})
	for i, n := range []int{1, 1, 2} {
		addL4(&gpus, fmt.Sprintf("l4-%d", i), n)
	}
	addGPUs(&gpus, "l40s-0", "g6e-12xlarge", "zone-c", l40s, 4, nil)
	addGPUs(&gpus, "p5-0", "p5.48xlarge", "zone-e", h100, 8, corev1.ResourceList{"vpc.amazonaws.com/efa": resource.MustParse("32")})
	addL4(&gpus, "l4-cordoned-0", 2)
	gpus.Nodes[len(gpus.Nodes)-1].Spec.Unschedulable = true
	addLegacyA100(&gpus, "legacy-a100-0")

	gke := Fleet{
		Name: "gke",
		Description: "GKE node pools: 8x H100 (a3-highgpu-8g), 2x A100-40GB and 2x A100-40GB partitioned " +
			"into 1g.5gb MIG slices (a2-highgpu-2g), tainted nvidia.com/gpu=present:NoSchedule; TPU v5e " +
			"slices 2x4 and 2x2 and a TPU v6e 2x4, tainted google.com/tpu=present:NoSchedule; all labelled " +
			"as GKE labels them.",
		Classes: classes(ClassGPU, ClassMIG, ClassTPU),
	}
	addGKEGPU(&gke, "gke-h100-0", "a3-highgpu-8g", "nvidia-h100-80gb", h100, 8, nil)
	addGKEGPU(&gke, "gke-a100-0", "a2-highgpu-2g", "nvidia-tesla-a100", a100x40, 2, nil)
	addGKEGPU(&gke, "gke-a100-mig-0", "a2-highgpu-2g", "nvidia-tesla-a100", a100x40, 2, &mig1g5gb)
	addGKETPU(&gke, "gke-v5e-8-0", "ct5lp-hightpu-8t", "tpu-v5-lite-podslice", "v5lite", "2x4", 8)
	addGKETPU(&gke, "gke-v5e-4-0", "ct5lp-hightpu-4t", "tpu-v5-lite-podslice", "v5lite", "2x2", 4)
	addGKETPU(&gke, "gke-v6e-8-0", "ct6e-standard-8t", "tpu-v6e-slice", "v6e", "2x4", 8)
	a3 := Fleet{
		Name: "gke-a3",
		Description: "GKE's two H100 machine families: an A3 High node (a3-highgpu-8g, gke-accelerator " +
			"nvidia-h100-80gb) and an A3 Mega node (a3-megagpu-8g, nvidia-h100-mega-80gb), 8x H100 80GB HBM3 " +
			"each, which the devices cannot tell apart; tainted nvidia.com/gpu=present:NoSchedule.",
		Classes: classes(ClassGPU),
	}
	addGKEGPU(&a3, "gke-a3-high-0", "a3-highgpu-8g", "nvidia-h100-80gb", h100, 8, nil)
	addGKEGPU(&a3, "gke-a3-mega-0", "a3-megagpu-8g", "nvidia-h100-mega-80gb", h100, 8, nil)
	mig := Fleet{
		Name: "mig",
		Description: "A100-80GB nodes and the MIG strategy (issue 27, item 16), in pools (claimbridge.example/pool): " +
			"single - two nodes whose 8 GPUs are all 7x1g.10gb, one without a nvidia.com/mig.strategy label and " +
			"one labelled single; mixed - one of the same layout labelled mixed and one with 1g.10gb and 3g.40gb " +
			"GPUs (no label); full - one with 8 full GPUs.",
		Classes: classes(ClassGPU, ClassMIG),
	}
	uniform := func(l migProfile, count int) []migLayout {
		var out []migLayout
		for i := range a100Ports {
			out = append(out, migLayout{gpu: i, profile: l, count: count})
		}
		return out
	}
	labelled := func(pool, strategy string) {
		nd := mig.Nodes[len(mig.Nodes)-1]
		nd.Labels[CorpusPoolLabel] = pool
		if strategy != "" {
			nd.Labels["nvidia.com/mig.strategy"] = strategy
		}
	}
	addA100(&mig, "a100-1g-0", uniform(mig1g10gb, 7))
	labelled("single", "")
	addA100(&mig, "a100-1g-single-0", uniform(mig1g10gb, 7))
	labelled("single", "single")
	addA100(&mig, "a100-1g-mixed-0", uniform(mig1g10gb, 7))
	labelled("mixed", "mixed")
	two := uniform(mig1g10gb, 7)
	for i := 4; i < len(two); i++ {
		two[i] = migLayout{gpu: i, profile: mig3g40gb, count: 2}
	}
	addA100(&mig, "a100-1g-3g-0", two)
	labelled("mixed", "")
	addA100(&mig, "a100-full-0", nil)
	labelled("full", "")
	return append([]Fleet{gpus, gke, a3, mig, amdFleet()}, sharedCorpusFleets()...)
}

// addGPUs adds a node with n full GPUs of one model, two per PCIe root and half per NUMA node.
func addGPUs(f *Fleet, name, instanceType, zone string, m gpuModel, n int, extra corev1.ResourceList) {
	nd := node(name, instanceType, zone, "192", "2048Gi", extra)
	nd.Labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
	var devices []resourceapi.Device
	for i := range n {
		port := pciePort{root: 0x10 * (i/2 + 1), numaNode: int64(i * 2 / max(n, 1))}
		devices = append(devices, withBus([]resourceapi.Device{gpuDevice(name, m, i, port)}, i)...)
	}
	f.Nodes = append(f.Nodes, nd)
	f.Slices = append(f.Slices, slice(name, DriverGPU, devices))
}

// addGKEGPU adds a GKE GPU node: GKE's accelerator labels and taint; with mig, every GPU is
// partitioned into slices of that profile and the node says so (gke-gpu-partition-size).
func addGKEGPU(f *Fleet, name, machine, accelerator string, m gpuModel, n int, mig *migProfile) {
	nd := node(name, machine, "zone-g", "208", "1872Gi", nil)
	for k, v := range map[string]string{
		gkeNodePool:                               name[:len(name)-2] + "-pool",
		"cloud.google.com/gke-accelerator":        accelerator,
		"cloud.google.com/gke-accelerator-count":  strconv.Itoa(n),
		"cloud.google.com/gke-gpu":                "true",
		"cloud.google.com/machine-family":         machine[:2],
		"node.kubernetes.io/instance-type":        machine,
		"cloud.google.com/gke-gpu-driver-version": "latest",
	} {
		nd.Labels[k] = v
	}
	nd.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
	var devices []resourceapi.Device
	for i := range n {
		port := pciePort{root: 0x10 * (i + 1), numaNode: int64(i * 2 / max(n, 1))}
		if mig != nil {
			devices = append(devices, withBus(migDevices(name, m, migLayout{gpu: i, profile: *mig, count: 7}, port), i)...)
			continue
		}
		devices = append(devices, withBus([]resourceapi.Device{gpuDevice(name, m, i, port)}, i)...)
	}
	if mig != nil {
		nd.Labels["cloud.google.com/gke-gpu-partition-size"] = mig.name
	}
	f.Nodes = append(f.Nodes, nd)
	f.Slices = append(f.Slices, slice(name, DriverGPU, devices))
}

// addGKETPU adds a single-host GKE TPU slice of n chips.
func addGKETPU(f *Fleet, name, machine, accelerator, gen, topology string, n int) {
	nd := node(name, machine, "zone-t", "224", "192Gi", nil)
	for k, v := range map[string]string{
		gkeNodePool:                              name[:len(name)-2] + "-pool",
		"cloud.google.com/gke-tpu-accelerator":   accelerator,
		"cloud.google.com/gke-tpu-topology":      topology,
		"cloud.google.com/gke-accelerator-count": strconv.Itoa(n),
		"node.kubernetes.io/instance-type":       machine,
	} {
		nd.Labels[k] = v
	}
	nd.Spec.Taints = []corev1.Taint{{Key: "google.com/tpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
	var devices []resourceapi.Device
	for i := range n {
		devices = append(devices, resourceapi.Device{
			Name: fmt.Sprintf("tpu-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"index":       num(int64(i)),
				"uuid":        str(uuid(name, "tpu", strconv.Itoa(i))),
				"tpuGen":      str(gen),
				"brand":       str("Google"),
				"accelerator": str(accelerator),
				"chipCount":   num(int64(n)),
				"topology":    str(topology),
			},
		})
	}
	f.Nodes = append(f.Nodes, nd)
	f.Slices = append(f.Slices, slice(name, DriverTPU, devices))
}
