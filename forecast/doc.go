// Package forecast answers, before a cluster switches from the device plugin
// to DRA in one day (NVIDIA GPU Operator 26.7 runs one stack or the other;
// GFD is not deployed in DRA mode), what the fleet will look like after the
// switch: for each node, from its legacy view (GFD, NFD and GKE labels, the
// extended resources it offers, the MIG strategy and per-profile labels,
// sharing replicas), the ResourceSlices the DRA drivers would publish for
// the same hardware, the DeviceClasses created with them, and the node as
// it will be. claimbridge then decides workloads against that fleet
// (claimbridge audit --forecast).
//
// # Promises
//
// [Forecast] is pure and deterministic: inventory in, a new inventory out
// (deep copies; the input is never modified), nodes in name order, map
// keys walked in sorted order. An error means the options are invalid; a
// node whose labels cannot be read or contradict each other gets notes and
// the attributes left out, never a failure. Nothing is invented: an
// attribute the labels do not tell is left out of the devices and named in
// [Driver].Unknown as the driver names it, standard attributes by their
// identifier (uuid, brand, pciBusID, pcieRoot, numaNode, parentUUID,
// memorySlice<i>, and whatever a node's labels lack).
//
// # The rules
//
// The vocabulary is the policy's: its node-label rules, read in the
// vocabulary's device direction ([translate.Policy.ForecastDevices]), turn
// a node's labels into the attributes and capacities of each device of a
// family, for every family and label the policy maps — the third direction
// of the table whose forward direction translates pods and whose backward
// direction is the placement check's legacy view. What a driver writes on
// its own is this package's (drivers.go, nvidia.go, tpu.go).
//
//   - Which devices: the node's extended resources that the policy maps
//     (allocatable, else capacity), each to the DeviceClass of its rule; the
//     class names the driver (the vendor charts' classes by name, others by
//     the driver their selector compares device.driver with). The node's
//     labels may move a resource to another class, as the translator does
//     (translate.Policy.LegacyResource): nvidia.com/gpu under
//     mig.strategy=single, or with GKE's gke-gpu-partition-size, is a MIG
//     device. mig.capable=true alone never makes a MIG device.
//   - NVIDIA (gpu.nvidia.com): one device per GPU the device plugin
//     offers, "gpu-<i>", type gpu. Under time-slicing or MPS the device
//     plugin offers each GPU replicas times (nvidia.com/gpu.replicas, GKE's
//     gke-max-shared-clients-per-gpu): allocatable / replicas GPUs, with a
//     note that the sharing moves to the claims (the policy's sharing rule:
//     a GpuConfig or consumable capacity). MIG (mixed strategy): N devices
//     of type mig for allocatable nvidia.com/mig-<profile>: N, profile in
//     the driver's spelling (GFD's mig-1g.5gb.me is 1g.5gb+me), capacities
//     from GFD's nvidia.com/mig-<profile>.{memory (MiB), multiprocessors,
//     engines.copy|decoder|encoder|jpeg|ofa}, the parent's attributes from
//     the labels of the MIG family; full GPUs for the nvidia.com/gpu left.
//     Single strategy: nvidia.com/gpu: N counts MIG devices of the profile
//     the product label names ("…-MIG-1g.10gb"; productName is the
//     parent's), capacities from nvidia.com/gpu.{memory, …}. MIG devices are
//     forecast as configured today (the driver's static MIG); which GPU
//     holds which (parentUUID) is unknown. MIG devices are named
//     "mig-<profile without dots>-<j>" (mig-1g10gb-me-0): the driver's own
//     names carry the parent GPU, profile ID and placement, which no label
//     tells; claims select by attributes, not names.
//   - productName: GFD writes the NVML name's spaces as dashes, and NVML
//     names have dashes of their own (NVIDIA A100-SXM4-40GB, NVIDIA H100
//     80GB HBM3), so the label does not tell which dashes were spaces. A
//     name known exactly — the vendor ground truth's and reference names
//     in translate (nvmlProductNames), and the productName values of the
//     policy's Map rules (GKE's accelerator table) — whose GFD form is the
//     label's is written as NVML spells it. Any other is written as the
//     label spells it (NVIDIA-T4), with a note: claimbridge's selectors
//     compare productName with spaces as dashes, so translated pods match
//     it either way; a hand-written selector on the exact NVML name may
//     not.
//   - architecture: from the GFD family (ampere → Ampere, ada-lovelace →
//     Ada Lovelace, hopper → Hopper, …: go-nvlib's names) and from the
//     compute capability (the GFDFamily rule ties the two); they must agree
//     (the Legacy scheme's ampere, 8.0–8.9, is settled by the compute
//     capability). cudaComputeCapability is compute.major.minor.0;
//     driverVersion the full driver version without leading zeros
//     (550.163.01 is 550.163.1); cudaDriverVersion the CUDA runtime version
//     (12.4 is 12.4.0); version components combine when the full label is
//     absent. memory is GFD's MiB as Mi (40960 MiB is 40Gi). brand is not
//     told by any label (NVML's brand differs by product and driver).
//   - GKE GPU nodes: cloud.google.com/gke-accelerator through the policy's
//     Map rule gives productName when it maps to one name (several that
//     are one up to spacing: the first, with a note; others: left out
//     unless another label settles it); the count is allocatable
//     nvidia.com/gpu; GKE sets no label for the rest.
//   - TPU (tpu.google.com): one chip per google.com/tpu, "tpu-<i>" with
//     index i (the driver names chips by their device file, accel<i> or
//     <i>, and numbers them in that order); accelerator, topology and chipCount from the labels the TPU
//     driver itself reads (GKE's or tpu.google.com/*, the policy's tpu
//     profile), tpuGen as the driver derives it from the accelerator, brand
//     Google; uuid unknown. The labels are read as the driver reads them:
//     tpu.google.com/* first, else GKE's alias, on any node (the policy
//     reads GKE's labels only on nodes with cloud.google.com/gke-nodepool).
//     A node whose accelerator label is missing or unknown, or whose
//     chip-count label differs from its google.com/tpu, is not forecast:
//     the driver would not start there.
//   - AMD (gpu.amd.com): one device per amd.com/gpu, "gpu-<i>" (the driver
//     names GPUs by DRM card and render index): a whole GPU, type amdgpu,
//     or, where the GPUs are partitioned (the labeller's
//     compute-memory-partition other than spx_*, or, without it, more
//     amd.com/gpu than the labeller counts GPUs), a partition, type
//     amdgpu-partition, and no whole GPU: the device plugin offers each
//     partition as one amd.com/gpu, the driver publishes a partitioned GPU
//     as its partitions only. productName, deviceID (0x74a1), memory and
//     partitionProfile from the node labeller's product-name, device-id,
//     vram and compute-memory-partition (the amd profile; vram is rounded
//     to whole GiB: written as that many Gi, with a note), computeUnits and
//     simdUnits from its cu-count and simd-count (a partition's, on a
//     partitioned node); driverVersion and driverVersionFull from its
//     driver-version as the driver writes the module's version (the first
//     three components; none for an empty one). A node whose version the
//     driver would publish as no semver (the apiserver refuses the whole
//     slice) is not forecast. The labeller's labels stay on the node.
//   - Not forecast (Driver.NotForecast, the node's resources stay): Intel
//     GPUs and Gaudi, RDMA NICs (rdma/*, shares of NIC pools), classes no
//     known driver serves (HAMi's): the vocabulary maps no label to those
//     drivers' attributes.
//   - A node whose allocatable holds a mapped extended resource at 0 (the
//     kubelet keeps a device plugin's resource there once the plugin has
//     left, until it restarts) has no device plugin for it: nothing is
//     replaced there, and no pod gets it today.
//
// # What the forecast does not know
//
// Each forecast slice names, in its claimbridge.io/unknown-attributes
// annotation, what its driver will publish that the devices leave out
// (qualified: gpu.nvidia.com/uuid, resource.kubernetes.io/pcieRoot). The
// checks read it (feasibility): a claim that no node serves, and that a
// node with such devices would serve without the selectors and
// constraints that read them, is Unknown (AttributesUnknown, naming them)
// in the verdict and the placement check, never NeverFits; its cutover
// result is Unjudged, with the attributes in its Why.
//
// # The nodes after the switch
//
// A node switches when it has a forecast accelerator, is not opted out
// (GPU Operator's nvidia.com/gpu.deploy.operands=false) and Options.Nodes
// (nil: all) selects it. A switched node loses the extended resources of
// its forecast drivers from capacity and allocatable, and (GFDLabelsDrop,
// the default) GPU Feature Discovery's labels where the NVIDIA driver
// switches ([GFDLabel]: nvidia.com/gpu.*, cuda.*, mig-*, mig.strategy,
// mig.capable, mps.*, vgpu.*, gfd.*; the GPU Operator's own gpu.present,
// gpu.deploy.*, gpu.workload.config and mig.config labels stay, as do NFD's
// and GKE's). Taints stay. A driver that already publishes ResourceSlices
// for a node is left as it is there. Every forecast slice is one pool per
// node and driver: name <node>-<driver>-forecast, pool named after the
// node, generation 1, one slice, devices in name order, attribute names as
// the driver writes them (its own without domain). The DeviceClasses are
// Options.Classes, or the forecast drivers' default ones. Pods, claims and
// taint rules are copied as they are.
//
// # Where it sits
//
// forecast imports translate (the vocabulary) and feasibility (the
// inventory type) of this module; internal/ and cmd/ use it (hack/layers
// checks the rule).
package forecast
