package fleetgen

import (
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// sharedFleet: GPUs shared by the NVIDIA DRA driver's consumable shares
// (its ConsumableShares feature, v0.5.0, --consumable-shares=4: the
// counterpart of the device plugin's time-slicing replicas 4) beside a GPU
// of a driver installation without them.
func sharedFleet() Fleet {
	f := Fleet{
		Name: "a100-shared",
		Description: "GPU sharing: a100-shared-0 has one A100 that the NVIDIA DRA driver publishes with 4 consumable shares " +
			"(ConsumableShares, --consumable-shares=4, as a node time-sliced 4 ways by the device plugin); a100-whole-0 has one A100 " +
			"published whole (a driver installation without consumable shares).",
		Classes: classes(ClassGPU, ClassMIG),
	}
	addSharedA100(&f, "a100-shared-0", 4)
	addSharedA100(&f, "a100-whole-0", 0)
	return f
}

// addSharedA100 adds an a2-highgpu-1g node with one A100, shared in n
// consumable shares (0: whole).
func addSharedA100(f *Fleet, name string, n int64) {
	node := node(name, "a2-highgpu-1g", "zone-a", "12", "85Gi", nil)
	node.Labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
	d := gpuDevice(name, a100, 0, pciePort{root: 0x00, numaNode: 0})
	if n > 0 {
		consumableShares(&d, n)
	}
	f.Nodes = append(f.Nodes, node)
	f.Slices = append(f.Slices, slice(name, DriverGPU, []resourceapi.Device{d}))
}

// consumableShares makes a GPU shared n ways as the NVIDIA DRA driver v0.5.0
// publishes it with --consumable-shares=n: it allows multiple allocations;
// shares is n (default request 1, 1..n step 1); memory is requested 0 by
// default, up to all of it in steps of 1Mi.
func consumableShares(d *resourceapi.Device, n int64) {
	d.AllowMultipleAllocations = ptr.To(true)
	mem := d.Capacity["memory"].Value
	d.Capacity["memory"] = resourceapi.DeviceCapacity{Value: mem, RequestPolicy: &resourceapi.CapacityRequestPolicy{
		Default:    resource.NewQuantity(0, resource.DecimalSI),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: resource.NewQuantity(0, resource.DecimalSI), Max: ptr.To(mem.DeepCopy()), Step: ptr.To(resource.MustParse("1Mi"))},
	}}
	d.Capacity["shares"] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(n, resource.DecimalSI), RequestPolicy: &resourceapi.CapacityRequestPolicy{
		Default:    resource.NewQuantity(1, resource.DecimalSI),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: resource.NewQuantity(1, resource.DecimalSI), Max: resource.NewQuantity(n, resource.DecimalSI), Step: resource.NewQuantity(1, resource.DecimalSI)},
	}}
}

// sharedCorpusFleets are the placement corpus's fleets of shared GPUs,
// labelled by GPU Feature Discovery as the device plugin's time-slicing
// leaves them (NVIDIA/k8s-device-plugin internal/lm/resource.go,
// baseLabeler): "shared" holds an A100 time-sliced 4 ways under
// nvidia.com/gpu (product ...-SHARED), a whole A100 and a 4x T4 pool
// time-sliced 4 ways under the renamed nvidia.com/gpu.shared
// (renameByDefault: the plain product); "renamed" the T4 pool and the whole
// A100 alone. The DRA driver publishes each shared GPU with 4 consumable
// shares.
func sharedCorpusFleets() []Fleet {
	shared := Fleet{
		Name: "shared",
		Description: "Time-sliced GPUs as GPU Feature Discovery labels them: ts-a100-0 has an A100-SXM4-40GB time-sliced 4 ways under nvidia.com/gpu " +
			"(product NVIDIA-A100-SXM4-40GB-SHARED), whole-a100-0 an A100-SXM4-40GB not shared, renamed-t4-0 four T4 time-sliced 4 ways under the " +
			"renamed nvidia.com/gpu.shared (renameByDefault: product Tesla-T4); the DRA driver publishes each shared GPU with 4 consumable shares.",
		Classes: classes(ClassGPU, ClassMIG),
	}
	addLabelledGPUs(&shared, "ts-a100-0", "a2-highgpu-1g", a100x40, 1, 4, false)
	addLabelledGPUs(&shared, "whole-a100-0", "a2-highgpu-1g", a100x40, 1, 0, false)
	addLabelledGPUs(&shared, "renamed-t4-0", "g4dn.12xlarge", t4, 4, 4, true)
	renamed := Fleet{
		Name: "renamed",
		Description: "A pool set aside for GPU shares beside a whole GPU: renamed-t4-0 has four T4 time-sliced 4 ways under the renamed " +
			"nvidia.com/gpu.shared (renameByDefault: product Tesla-T4), published by the DRA driver with 4 consumable shares each; " +
			"whole-a100-0 an A100-SXM4-40GB not shared.",
		Classes: classes(ClassGPU, ClassMIG),
	}
	addLabelledGPUs(&renamed, "renamed-t4-0", "g4dn.12xlarge", t4, 4, 4, true)
	addLabelledGPUs(&renamed, "whole-a100-0", "a2-highgpu-1g", a100x40, 1, 0, false)
	return []Fleet{shared, renamed}
}

// addLabelledGPUs adds a node with n GPUs of model m, shared in replicas
// consumable shares each (0: whole), labelled with GFD's product, replicas
// and sharing strategy; renamed: the device plugin offered the shared GPUs
// as nvidia.com/gpu.shared, so the product has no -SHARED.
func addLabelledGPUs(f *Fleet, name, instanceType string, m gpuModel, n int, replicas int64, renamed bool) {
	nd := node(name, instanceType, "zone-s", "48", "192Gi", nil)
	product, strategy := strings.ReplaceAll(m.productName, " ", "-"), "none"
	if replicas > 1 {
		strategy = "time-slicing"
		if !renamed {
			product += "-SHARED"
		}
	}
	for k, v := range map[string]string{
		"feature.node.kubernetes.io/pci-10de.present": "true",
		"nvidia.com/gpu.present":                      "true",
		"nvidia.com/gpu.product":                      product,
		"nvidia.com/gpu.count":                        strconv.Itoa(n),
		"nvidia.com/gpu.replicas":                     strconv.FormatInt(max(replicas, 1), 10),
		"nvidia.com/gpu.sharing-strategy":             strategy,
	} {
		nd.Labels[k] = v
	}
	var devices []resourceapi.Device
	for i := range n {
		d := gpuDevice(name, m, i, pciePort{root: 0x10 * (i + 1), numaNode: 0})
		if replicas > 1 {
			consumableShares(&d, replicas)
		}
		devices = append(devices, withBus([]resourceapi.Device{d}, i)...)
	}
	f.Nodes = append(f.Nodes, nd)
	f.Slices = append(f.Slices, slice(name, DriverGPU, devices))
}
