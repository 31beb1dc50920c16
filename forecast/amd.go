package forecast

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// The AMD GPU DRA driver (gpu.amd.com, ROCm/k8s-gpu-dra-driver) as the
// forecast makes it. The AMD GPU Operator v1.5 deploys it
// (DeviceConfig spec.draDriver.enable, image rocm/k8s-gpu-dra-driver:latest
// by default) in place of the device plugin — the operator refuses both on
// one DeviceConfig (ROCm/gpu-operator v1.5.1
// internal/validator/specValidators.go, ValidateDRADriverSpec) — with the
// DeviceClass gpu.amd.com (device.driver == 'gpu.amd.com', no
// extendedResourceName). Its node labeller runs on with either.
//
// One device per amd.com/gpu the device plugin offers, "gpu-<i>": the
// driver names a device gpu-<card>-<render> from its DRM card and render
// indexes, which no label tells; claims select by attributes, not names.
// The device plugin (resource_naming_strategy single, its default) offers
// a GPU whole, or each partition of a partitioned GPU as one amd.com/gpu
// (ROCm/k8s-device-plugin docs/user-guide/configuration.md: 8 MI300X in
// CPX/NPS4 are amd.com/gpu: 64); the driver publishes a GPU in SPX mode (or
// one that cannot be partitioned) whole and a partitioned GPU as its
// partitions only, never both (cmd/gpu-kubeletplugin/discovery.go,
// enumerateAllPossibleDevices, at 08bc729c: the PCI device's own entry is
// a partition when its compute partition is not spx). What the driver
// publishes for a whole GPU and for a partition alike
// (cmd/gpu-kubeletplugin/deviceinfo.go, AmdGpuInfo.GetDevice and
// AmdPartitionInfo.GetDevice, at 08bc729c; docs/driver-attributes.md at
// 06dbe583):
//
//   - type "amdgpu", or "amdgpu-partition" (consts.AmdGpuDeviceType,
//     AmdPartitionDeviceType) on a node whose GPUs are partitioned: the
//     labeller's compute-memory-partition is not spx_*, or, without it,
//     the node offers more amd.com/gpu than the labeller counts GPUs
//     (amdPartitioned);
//   - productName, deviceID (a partition carries its GPU's), memory and
//     partitionProfile: from the node labeller's product-name, device-id,
//     vram and compute-memory-partition (written only with its flag of that
//     name), read through the policy's vocabulary (the amd profile; vram is
//     rounded to whole GiB, which a note says); on a partitioned node the
//     labeller's vram is a partition's, as the driver's memory is;
//   - computeUnits and simdUnits: the labeller's cu-count and simd-count,
//     which read the same KFD node's simd_count and simd_per_cu as the
//     driver (its TopologyInfo; a partition's own on a partitioned node),
//     as counts (BinarySI, as the driver writes them);
//   - driverVersion (a version) and driverVersionFull (a string): the
//     kernel module's version (the labeller's amd.com/gpu.driver-version
//     reads the same file), the version trimmed to its first three
//     components (pkg/amdgpu SemverDriverVersion: "6.19.14.31400000" is
//     6.19.14); none when the module reports no version (the in-kernel
//     module; the label is then empty);
//   - numaNode (its own, an int) and the standard numaNode, pciBusID and
//     pcieRoot (a partition's are its GPU's): not forecast (Unknown).
//
// Versions of the driver differ (its repository has no release tag): its
// first ones (2622427, 2025-10) also published family, cardIndex,
// renderIndex, pciAddr and driverSrcVersion, published driverVersion
// untrimmed, and published the KFD's unique_id as deviceID (parentDeviceID
// and parentPciAddr on a partition); later ones dropped those. The forecast
// makes the later ones' devices and names the difference in a caveat.

// Labels of AMD's node labeller (ROCm/k8s-device-plugin v1.31.0.10
// cmd/k8s-node-labeller) that only the AMD driver's own code reads here.
const (
	labelAMDDriverVersion = "amd.com/gpu.driver-version"
	labelAMDPartition     = "amd.com/gpu.compute-memory-partition"
	// The count labels of the GPUs' product name and device ID: the
	// labeller reads both from files of the PCI device, which a
	// partition's platform device (amdgpu_xcp_*) does not have, so they
	// count GPUs, not partitions (main.go, product-name and device-id).
	labelAMDProductCount = "beta.amd.com/gpu.product-name."
	labelAMDDeviceCount  = "beta.amd.com/gpu.device-id."
)

// The labeller's compute units and SIMD units of the node's GPUs (or
// partitions), when they all agree; the beta twins are the same.
var (
	labelsAMDComputeUnits = []string{"amd.com/gpu.cu-count", "beta.amd.com/gpu.cu-count"}
	labelsAMDSIMDUnits    = []string{"amd.com/gpu.simd-count", "beta.amd.com/gpu.simd-count"}
)

// semverRe is kube-apiserver's test of a version attribute
// (k8s.io/kubernetes v1.37.2 pkg/apis/resource/validation, semverRe): a
// ResourceSlice with a version that fails it is rejected, all of it.
var semverRe = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?` +
	`(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$`)

// amd forecasts the AMD driver's GPUs, or their partitions, on a node
// from its resources.
func (f *forecaster) amd(n *corev1.Node, rs []legacyResource) (devices []resourceapi.Device, notes, unknownList []string, notForecast string) {
	var all int64
	for _, r := range rs {
		all += r.count
	}
	partitioned, why := amdPartitioned(n.Labels, all)
	devType := typeAMDGPU
	if partitioned {
		devType = typeAMDPartition
	}
	var count int64
	for _, r := range rs {
		if r.devType != "" && r.devType != devType {
			notes = append(notes, fmt.Sprintf("%s: served by DeviceClass %s, which selects devices of type %s; the node's are %s", r.name, r.rule.DeviceClassName, r.devType, devType))
			continue
		}
		count += r.count
	}
	if count == 0 {
		return nil, notes, nil, ""
	}
	if partitioned {
		notes = append(notes, why)
	}
	fa := f.p.ForecastDevices(rs[0].rule.Family, n.Labels)
	notes = append(notes, fa.Notes...)
	attrs := local(DriverAMD, fa.Attributes)
	attrs["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To(devType)}
	version, noVersion, why := amdDriverVersion(n.Labels)
	switch {
	case why != "":
		return nil, notes, nil, why
	case version != "":
		attrs["driverVersion"] = resourceapi.DeviceAttribute{VersionValue: ptr.To(version)}
		attrs["driverVersionFull"] = resourceapi.DeviceAttribute{StringValue: ptr.To(n.Labels[labelAMDDriverVersion])}
		if full := n.Labels[labelAMDDriverVersion]; full != version {
			notes = append(notes, fmt.Sprintf("driverVersion: the module's version %s is not semver; the driver publishes its first three components, %s "+
				"(and all of it as driverVersionFull): its first versions published it whole, which the apiserver rejects with the whole ResourceSlice", full, version))
		}
	}
	capacity := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
	for k, q := range fa.Capacity {
		capacity[localName(DriverAMD, k)] = resourceapi.DeviceCapacity{Value: q}
	}
	if v, ok := amdUnits(n.Labels, labelsAMDComputeUnits); ok {
		capacity["computeUnits"] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(v, resource.BinarySI)}
	}
	if v, ok := amdUnits(n.Labels, labelsAMDSIMDUnits); ok {
		capacity["simdUnits"] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(v, resource.BinarySI)}
	}
	set := map[string]bool{}
	for i := range count {
		d := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: cloneAttrs(attrs), Capacity: cloneCapacity(capacity)}
		devices = append(devices, d)
		for _, u := range unknown(d, amdGPUAttributes, amdGPUCapacity) {
			set[u] = true
		}
	}
	for u := range set {
		if noVersion && (u == "driverVersion" || u == "driverVersionFull") {
			continue // the driver publishes none: not unknown, absent
		}
		unknownList = append(unknownList, u)
	}
	return devices, notes, sortedSet(unknownList), ""
}

// amdPartitioned says whether the node's count amd.com/gpu are partitions,
// which the driver publishes as devices of type amdgpu-partition, and
// why: the labeller's compute-memory-partition names a mode other than
// spx_* (the whole GPU), or, without it, the node offers more amd.com/gpu
// than the labeller's count labels count GPUs.
func amdPartitioned(labels map[string]string, count int64) (bool, string) {
	if p, ok := labels[labelAMDPartition]; ok && p != "" {
		if strings.HasPrefix(p, "spx_") {
			return false, ""
		}
		return true, fmt.Sprintf("type: the GPUs are partitioned (%s=%s): the device plugin's %d amd.com/gpu are partitions, "+
			"which the driver publishes as devices of type amdgpu-partition, without the whole GPUs", labelAMDPartition, p, count)
	}
	for _, prefix := range []string{labelAMDProductCount, labelAMDDeviceCount} {
		var gpus int64
		for k, v := range labels {
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
				gpus += n
			}
		}
		if gpus > 0 && count > gpus {
			return true, fmt.Sprintf("type: the node offers %d amd.com/gpu and the labeller counts %d GPUs (%s*): the GPUs are partitioned, "+
				"which the driver publishes as devices of type amdgpu-partition, without the whole GPUs; their partition mode is not told", count, gpus, prefix)
		}
		if gpus > 0 {
			return false, ""
		}
	}
	return false, ""
}

// amdUnits reads a count the labeller writes under the first of keys the
// node has.
func amdUnits(labels map[string]string, keys []string) (int64, bool) {
	for _, k := range keys {
		if v, ok := labels[k]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil && n >= 0
		}
	}
	return 0, false
}

// amdDriverVersion is the driverVersion the AMD driver publishes, read from
// the labeller's amd.com/gpu.driver-version (the module's version file, as
// the driver reads it): its first three components (SemverDriverVersion).
// none is true when the label is there and empty: the module reports no
// version, and the driver publishes no driverVersion. why says, when the
// version it would publish is no semver, that the apiserver rejects the
// driver's ResourceSlice. Without the label, nothing is known.
func amdDriverVersion(labels map[string]string) (version string, none bool, why string) {
	full, ok := labels[labelAMDDriverVersion]
	switch {
	case !ok:
		return "", false, ""
	case full == "":
		return "", true, ""
	}
	parts := strings.Split(full, ".")
	if len(parts) > 3 {
		parts = parts[:3]
	}
	version = strings.Join(parts, ".")
	if !semverRe.MatchString(version) || len(version) > resourceapi.DeviceAttributeMaxValueLength {
		return "", false, fmt.Sprintf("the driver would publish driverVersion %q (%s=%s), which is not semver 2.0: the apiserver rejects the whole ResourceSlice, "+
			"so no GPU of the node would be served by DRA", version, labelAMDDriverVersion, full)
	}
	return version, false, ""
}
