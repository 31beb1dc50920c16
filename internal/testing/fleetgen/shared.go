package fleetgen

import (
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
