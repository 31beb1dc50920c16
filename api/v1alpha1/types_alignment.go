package v1alpha1

// The policy's alignment and fallback rules: which devices of a pod must
// share an attribute, and which alternatives follow a matching request.

// AlignmentRule makes co-requested devices share an attribute.
type AlignmentRule struct {
	// Name identifies the rule in reasons. Required, DNS label.
	Name string `json:"name"`
	// Families: with one family, all devices of each request of that family
	// that asks for more than one device share the attribute; with several,
	// the rule applies when the pod requests devices of at least two of them,
	// and all those devices share the attribute. Required.
	Families []string `json:"families"`
	// Attribute is the fully qualified attribute, e.g.
	// "resource.kubernetes.io/pcieRoot". Required.
	Attribute string `json:"attribute"`
	// Mode is "Required" (only aligned devices), or "Preferred" (default):
	// an aligned alternative first, then the unaligned one.
	Mode AlignmentMode `json:"mode,omitempty"`
	// MaxCount, when set, applies the rule only if no involved request asks
	// for more devices than this (a pcieRoot is shared by one GPU and one
	// NIC, so aligning two GPUs with two NICs on one root cannot succeed).
	MaxCount int64 `json:"maxCount,omitempty"`
}

// AlignmentMode is Required or Preferred.
type AlignmentMode string

// Alignment modes.
const (
	AlignRequired  AlignmentMode = "Required"
	AlignPreferred AlignmentMode = "Preferred"
)

// PartitionRule says that devices of some families come in fixed
// partitions, and that a claim's devices must be exactly one of them: NVIDIA
// GPUs on NVSwitch systems whose Fabric Manager partitions them (the NVIDIA
// DRA driver's "FabricManagerPartitioning" gate, alpha in v0.5). The driver
// publishes on each partitioned GPU the id of the partition of each size it
// belongs to (gpu.nvidia.com/partition1 … partition8) and its module id
// (gpu.nvidia.com/gpuModuleID), and refuses to prepare a claim whose GPUs
// are not exactly one partition (dra-driver-nvidia-gpu
// cmd/gpu-kubelet-plugin/deviceinfo.go addFabricManagerAttributes,
// device_state.go resolveFabricPartition).
//
// A request of N devices of the families, N one of the
// [PartitionRule.Sizes], gets before each alternative a variant on
// partitioned devices, with a "matchAttribute" constraint on the attribute
// AttributePrefix followed by N (one partition of N), and the alternative
// itself keeps to devices without MemberAttribute (not partitioned). A pod
// whose devices of the families are not one request of one of the sizes
// stays as submitted (FabricPartitionUnmatched): its claim could never be
// prepared on a partitioned node.
type PartitionRule struct {
	// Name identifies the rule in reasons and names the variants.
	// Required, DNS label.
	Name string `json:"name"`
	// Families whose devices are partitioned. Required.
	Families []string `json:"families"`
	// AttributePrefix, followed by a partition size, is the attribute that
	// holds the id of the partition of that size a device belongs to
	// ("gpu.nvidia.com/partition" for partition2). Required.
	AttributePrefix string `json:"attributePrefix"`
	// MemberAttribute is published by every partitioned device
	// ("gpu.nvidia.com/gpuModuleID"): devices without it are not
	// partitioned and serve any count. Required.
	MemberAttribute string `json:"memberAttribute"`
	// Sizes the partitions come in (1, 2, 4, 8 on an 8-GPU NVSwitch
	// system). Required.
	Sizes []int64 `json:"sizes"`
}

// FallbackRule adds alternatives after an alternative that matches.
type FallbackRule struct {
	// Name identifies the rule in reasons. Required, DNS label.
	Name string `json:"name"`
	// Match selects the alternatives to extend.
	Match LegacyShape `json:"match"`
	// Alternatives are tried after the matched one, in order. Each is written
	// in the legacy vocabulary and translated with the same rules.
	Alternatives []LegacyShape `json:"alternatives"`
}

// LegacyShape describes a device request the legacy way.
type LegacyShape struct {
	// Resource is the extended resource name. In [FallbackRule.Match] it is
	// required; in an alternative the default is the matched one.
	Resource string `json:"resource,omitempty"`
	// NodeSelector: in [FallbackRule.Match], labels the alternative must
	// have been selected with; in an alternative, labels that replace those
	// of the match.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// CountMultiplier multiplies the container's device count (alternatives
	// only). Default 1.
	CountMultiplier int64 `json:"countMultiplier,omitempty"`
}
