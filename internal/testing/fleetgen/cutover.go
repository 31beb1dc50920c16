package fleetgen

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// beforeCutoverFleet: a GPU cluster the day before it switches from the
// device plugin to DRA: no ResourceSlice, no DeviceClass (no DRA driver
// runs yet), every GPU an extended resource, GPU Feature Discovery's labels
// on every GPU node.
func beforeCutoverFleet() Fleet {
	f := Fleet{
		Name: "before-cutover",
		Description: "A cluster before its switch to DRA: two 8x A100-SXM4-40GB nodes, one 8x H100 node, one A100-SXM4-80GB node with MIG " +
			"(mixed strategy: 7x 1g.10gb, 2x 3g.40gb, 6 full GPUs), one 4x T4 node time-sliced 4 ways, one A100 node opted out of the " +
			"GPU Operator (nvidia.com/gpu.deploy.operands=false) and a CPU node; device plugin and GPU Feature Discovery only, no ResourceSlice.",
	}
	for i := range 2 {
		addLegacyA100(&f, fmt.Sprintf("cutover-a100-%d", i))
	}
	addLegacyGPU(&f, "cutover-h100-0", "p5.48xlarge", map[string]string{
		"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.family": "hopper",
		"nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0", "nvidia.com/gpu.count": "8",
	}, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")})
	addLegacyGPU(&f, "cutover-a100-mig-0", "a2-ultragpu-8g", map[string]string{
		"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.memory": "81920", "nvidia.com/gpu.count": "8",
		"nvidia.com/mig.strategy":      "mixed",
		"nvidia.com/mig-1g.10gb.count": "7", "nvidia.com/mig-1g.10gb.memory": "9728", "nvidia.com/mig-1g.10gb.multiprocessors": "14",
		"nvidia.com/mig-3g.40gb.count": "2", "nvidia.com/mig-3g.40gb.memory": "40192", "nvidia.com/mig-3g.40gb.multiprocessors": "42",
	}, corev1.ResourceList{
		"nvidia.com/gpu":         resource.MustParse("6"),
		"nvidia.com/mig-1g.10gb": resource.MustParse("7"),
		"nvidia.com/mig-3g.40gb": resource.MustParse("2"),
	})
	addLegacyGPU(&f, "cutover-t4-shared-0", "g4dn.12xlarge", map[string]string{
		"nvidia.com/gpu.product": "Tesla-T4-SHARED", "nvidia.com/gpu.memory": "15360", "nvidia.com/gpu.family": "turing",
		"nvidia.com/gpu.compute.major": "7", "nvidia.com/gpu.compute.minor": "5", "nvidia.com/gpu.count": "4",
		"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing",
	}, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("16")})
	addLegacyA100(&f, "cutover-optout-0")
	f.Nodes[len(f.Nodes)-1].Labels["nvidia.com/gpu.deploy.operands"] = "false"
	f.Nodes = append(f.Nodes, node("cutover-cpu-0", "m6i.8xlarge", "zone-a", "32", "128Gi", nil))
	return f
}

// addLegacyGPU adds a device-plugin GPU node labelled like the A100 nodes
// of addLegacyA100, with labels and extended resources of its own.
func addLegacyGPU(f *Fleet, name, instanceType string, labels map[string]string, extended corev1.ResourceList) {
	addLegacyA100(f, name)
	n := f.Nodes[len(f.Nodes)-1]
	n.Labels["node.kubernetes.io/instance-type"] = instanceType
	n.Labels["nvidia.com/gpu.machine"] = instanceType
	for k, v := range labels {
		n.Labels[k] = v
	}
	delete(n.Status.Capacity, "nvidia.com/gpu")
	delete(n.Status.Allocatable, "nvidia.com/gpu")
	for k, v := range extended {
		n.Status.Capacity[k] = v
		n.Status.Allocatable[k] = v.DeepCopy()
	}
}
