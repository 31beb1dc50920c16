package forecast

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
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
// One device per GPU the device plugin offers (amd.com/gpu), "gpu-<i>": the
// driver names a GPU gpu-<card>-<render> from its DRM card and render
// indexes, which no label tells; claims select by attributes, not names.
// What the driver publishes for a full GPU
// (cmd/gpu-kubeletplugin/deviceinfo.go, AmdGpuInfo.GetDevice, at 08bc729c;
// docs/driver-attributes.md at 06dbe583):
//
//   - type "amdgpu" (consts.AmdGpuDeviceType);
//   - productName, deviceID and the memory capacity: from the node
//     labeller's product-name, device-id and vram, read through the
//     policy's vocabulary (the amd profile; vram is rounded to whole GiB,
//     which a note says);
//   - driverVersion (a version) and driverVersionFull (a string): the
//     kernel module's version (the labeller's amd.com/gpu.driver-version
//     reads the same file), the version trimmed to its first three
//     components (pkg/amdgpu SemverDriverVersion: "6.19.14.31400000" is
//     6.19.14); none when the module reports no version (the in-kernel
//     module; the label is then empty);
//   - partitionProfile: the compute and memory partition of a GPU that can
//     be partitioned (spx_nps1), which the labeller writes only with its
//     compute-memory-partition flag;
//   - numaNode (its own, an int) and the standard numaNode, pciBusID and
//     pcieRoot; computeUnits and simdUnits: not forecast (Unknown).
//
// Versions of the driver differ (its repository has no release tag): its
// first ones (2622427, 2025-10) also published family, cardIndex,
// renderIndex, pciAddr and driverSrcVersion, and published driverVersion
// untrimmed; later ones dropped those. The forecast makes the later ones'
// devices and names the difference in a caveat.

// Labels of AMD's node labeller (ROCm/k8s-device-plugin v1.31.0.10
// cmd/k8s-node-labeller) that only the AMD driver's own code reads here.
const (
	labelAMDDriverVersion = "amd.com/gpu.driver-version"
	labelAMDPartition     = "amd.com/gpu.compute-memory-partition"
)

// semverRe is kube-apiserver's test of a version attribute
// (k8s.io/kubernetes v1.37.2 pkg/apis/resource/validation, semverRe): a
// ResourceSlice with a version that fails it is rejected, all of it.
var semverRe = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?` +
	`(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$`)

// amd forecasts the AMD driver's GPUs on a node from its resources.
func (f *forecaster) amd(n *corev1.Node, rs []legacyResource) (devices []resourceapi.Device, notes, unknownList []string, notForecast string) {
	var count int64
	for _, r := range rs {
		if r.devType != "" && r.devType != typeAMDGPU {
			notes = append(notes, fmt.Sprintf("%s: served by DeviceClass %s, whose devices the forecast does not make", r.name, r.rule.DeviceClassName))
			continue
		}
		count += r.count
	}
	if count == 0 {
		return nil, notes, nil, ""
	}
	if p := n.Labels[labelAMDPartition]; p != "" && !strings.HasPrefix(p, "spx_") {
		return nil, notes, nil, fmt.Sprintf("the GPUs are partitioned (%s=%s): the device plugin's amd.com/gpu are partitions, which the driver "+
			"publishes as devices of type amdgpu-partition; the forecast does not make them", labelAMDPartition, p)
	}
	fa := f.p.ForecastDevices(rs[0].rule.Family, n.Labels)
	notes = append(notes, fa.Notes...)
	attrs := local(DriverAMD, fa.Attributes)
	attrs["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To(typeAMDGPU)}
	if p := n.Labels[labelAMDPartition]; p != "" {
		attrs["partitionProfile"] = resourceapi.DeviceAttribute{StringValue: ptr.To(p)}
	}
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
