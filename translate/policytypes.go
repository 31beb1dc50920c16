package translate

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
)

// PolicyAPIVersion and PolicyKind identify a TranslationPolicy document.
const (
	PolicyAPIVersion = "claimbridge.io/v1alpha1"
	PolicyKind       = "TranslationPolicy"
)

// TranslationPolicy says how legacy device requests (extended resources and
// node labels) map to DRA device requests. It is read from YAML with
// [LoadPolicy]; unknown fields are rejected.
type TranslationPolicy struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   PolicyMetadata `json:"metadata,omitempty"`
	Spec       PolicySpec     `json:"spec"`
}

// PolicyMetadata names a policy. Only the name is used (in reasons and logs).
type PolicyMetadata struct {
	Name string `json:"name,omitempty"`
}

// PolicySpec holds the rules. Rules of the named built-in profiles come first,
// then the rules written here; for a resource name or label key that two rules
// map, the later rule wins.
type PolicySpec struct {
	// Profiles are built-in profiles whose rules are included, in this order.
	// Default: none. A policy file that names no profile and has no rules is
	// rejected; use [DefaultPolicy] for "all built-in profiles".
	Profiles []string `json:"profiles,omitempty"`

	// KeepTranslatedNodeLabels leaves node-label requirements in the pod after
	// they were turned into device selectors. Default false: they are removed,
	// because DRA nodes do not carry the labels of device plugins.
	KeepTranslatedNodeLabels bool `json:"keepTranslatedNodeLabels,omitempty"`

	// GFDFamilyScheme says which GPU Feature Discovery release labelled the
	// nodes, because nvidia.com/gpu.family changed meaning: "Current" (default)
	// labels compute capability 8.9 as ada-lovelace, "Legacy" labels every 8.x
	// as ampere.
	GFDFamilyScheme GFDFamilyScheme `json:"gfdFamilyScheme,omitempty"`

	// Resources map extended-resource names to device requests.
	Resources []ResourceRule `json:"resources,omitempty"`

	// NodeLabels map node-label keys to device attributes or capacities.
	NodeLabels []NodeLabelRule `json:"nodeLabels,omitempty"`

	// Alignment rules add matchAttribute constraints.
	Alignment []AlignmentRule `json:"alignment,omitempty"`

	// Fallbacks add prioritized alternatives after a matching one.
	Fallbacks []FallbackRule `json:"fallbacks,omitempty"`

	// Schedulers lists the schedulerName values of the schedulers that
	// allocate DRA claims in this cluster, each with the output its pods
	// get (SchedulerEntry: a plain name takes claimbridge's built-in
	// profile for it); a pod for any other scheduler is not translated
	// (SchedulerNotListed), because nothing would allocate its claim. An
	// empty schedulerName is "default-scheduler", as API defaulting makes
	// it. Default: [default-scheduler].
	//
	// As of Kubernetes 1.37 (sources in the README): Volcano ≥ v1.15
	// ("volcano") and KAI-Scheduler ("kai-scheduler") allocate claims, and
	// their built-in profiles are ExactlyOnly (Volcano's queue quota skips
	// firstAvailable; KAI's allocator runs without it, without consumable
	// capacity, and counts GPUs only on classes named "…gpu…");
	// scheduler-plugins and Koordinator run the upstream plugin but their
	// shipped RBAC cannot write claim status, and YuniKorn, kube-batch and
	// HAMi's scheduler extender do not allocate claims: their profiles are
	// Skip. None but default-scheduler is listed by default.
	Schedulers []SchedulerEntry `json:"schedulers,omitempty"`

	// Kueue says how pods that Kueue manages (label
	// kueue.x-k8s.io/queue-name) are translated. Default: ExactlyOnly, and
	// only to DeviceClasses that Kueue's deviceClassMappings list (none
	// known by default, so such pods stay as submitted).
	Kueue KueueRule `json:"kueue,omitempty"`

	// Deference says when a pod is left to KEP-5004 instead of translated.
	Deference DeferenceRule `json:"deference,omitempty"`

	// Preemption says what happens to pods that translation would keep from
	// preempting: in Kubernetes 1.37 a pod whose devices come from a claim
	// cannot preempt lower-priority pods to get them. Default: such pods are
	// translated with the warning PreemptionLost.
	Preemption PreemptionRule `json:"preemption,omitempty"`

	// ImplicitTolerations says that the cluster's admission adds, for each
	// extended resource a container requests, the toleration {key:
	// <resource>, operator: Exists, effect: NoSchedule}: the
	// ExtendedResourceToleration admission plugin does, and GKE does for
	// nvidia.com/gpu and google.com/tpu. When true, translation adds that
	// toleration for every extended resource it removes from the pod (none
	// when an equal or broader toleration is there), so the pod still
	// tolerates the taints of the nodes that have those devices. Default:
	// true when an included profile turns it on (gke, tpu), else false.
	ImplicitTolerations *bool `json:"implicitTolerations,omitempty"`

	// Placement is the rule of the placement check, which compares, over
	// the nodes that publish DRA devices, where a translated pod can land
	// with where the pod as submitted could: "Exact" (default) translates
	// only when the two sets of nodes are equal; "Subset" also when the
	// translation loses nodes but gains none; "Off" does not compare.
	Placement PlacementRule `json:"placement,omitempty"`
}

// DefaultScheduler is the schedulerName of kube-scheduler, the default of
// PolicySpec.Schedulers.
const DefaultScheduler = "default-scheduler"

// PreemptionRule says which pods stay legacy because translation would keep
// them from preempting.
type PreemptionRule struct {
	// KeepLegacyAbovePriority, when set, keeps a pod as submitted
	// (PreemptionLost) when its spec.priority is greater than this value
	// and its preemptionPolicy is not Never; a pod whose priority is not
	// resolved (a priorityClassName without spec.priority, as in a
	// manifest) counts as above. Unset (default): such pods are translated
	// with the warning PreemptionLost, because most GPU workloads are not
	// scheduled by preemption and keeping them all legacy would stop the
	// migration.
	KeepLegacyAbovePriority *int32 `json:"keepLegacyAbovePriority,omitempty"`

	// DRAPreemption says that the cluster's scheduler preempts for devices
	// of claims (KEP-5690, feature gate DRAPreemption of kube-scheduler):
	// then translation costs no pod its preemption, so there is no
	// PreemptionLost warning and KeepLegacyAbovePriority is not applied.
	// Default false: Kubernetes 1.37 has no such gate (its
	// DynamicResources plugin implements no PreFilterExtensions), and the
	// KEP, off by default where it lands, excludes pods of a PodGroup.
	DRAPreemption bool `json:"draPreemption,omitempty"`
}

// PlacementRule says when a translation's placement is acceptable.
type PlacementRule string

// Placement rules.
const (
	PlacementExact  PlacementRule = "Exact"
	PlacementSubset PlacementRule = "Subset"
	PlacementOff    PlacementRule = "Off"
)

// GFDFamilyScheme selects how nvidia.com/gpu.family values map to compute capabilities.
type GFDFamilyScheme string

// GFD family schemes.
const (
	GFDFamilyCurrent GFDFamilyScheme = "Current"
	GFDFamilyLegacy  GFDFamilyScheme = "Legacy"
)

// ResourceRule maps one extended-resource name (or a family of names) to a
// DeviceClass.
type ResourceRule struct {
	// Name is the extended resource, e.g. "nvidia.com/gpu", or a pattern with
	// one trailing "*", e.g. "nvidia.com/mig-*"; the text matched by "*" is
	// the suffix that SuffixAttribute compares against. Required.
	Name string `json:"name"`

	// Family groups resources of one kind of device. Node-label rules,
	// alignment rules and fallbacks refer to families. Required (except for
	// capacityOf rules, which take their rule's), DNS label.
	Family string `json:"family,omitempty"`

	// DeviceClassName is the DeviceClass of the generated request. Required
	// (except for capacityOf rules, which take their rule's).
	DeviceClassName string `json:"deviceClassName,omitempty"`

	// RequestName is the short name used in generated request names
	// ("<container>-<requestName>"). Default: the part of Name after "/",
	// made a DNS label.
	RequestName string `json:"requestName,omitempty"`

	// SuffixAttribute is the device attribute ("<domain>/<name>") that must
	// equal the suffix matched by a pattern Name. Only for patterns; without
	// it the suffix does not narrow the devices.
	SuffixAttribute string `json:"suffixAttribute,omitempty"`

	// Selectors are extra requirements on device attributes, ANDed.
	Selectors []AttributeRequirement `json:"selectors,omitempty"`

	// Config is opaque driver configuration attached to the generated requests.
	Config []OpaqueConfig `json:"config,omitempty"`

	// Capacity, when set, turns the container's quantity into a capacity
	// request on one device instead of a device count; the quantity must be
	// a whole number. Used for CPUs from dra.cpu. With CapacityOf it names
	// the capacity requested on each device. The name is matched exactly
	// against the devices' capacity names as the driver publishes them:
	// "<domain>/<name>" (dra.cpu/cpu) or "<name>" (HAMi's memory, cores).
	Capacity string `json:"capacity,omitempty"`

	// CapacityOf makes the rule a capacity of the devices of another
	// resource rule: the container's quantity of this resource, times
	// Unit, becomes the capacity request named by Capacity on each device
	// of the request that the container's quantity of CapacityOf makes
	// (DRA consumable capacity; the devices must allow multiple
	// allocations for others to share them). HAMi's nvidia.com/gpumem is a
	// capacity of nvidia.com/gpu. Family and DeviceClassName are those of
	// the CapacityOf rule and must not be set. A container that asks for
	// this resource without CapacityOf stays as submitted.
	CapacityOf string `json:"capacityOf,omitempty"`

	// Unit is the capacity one unit of the resource stands for (capacityOf
	// rules only), e.g. "1Mi" for HAMi's gpumem, which counts MiB while the
	// driver's memory capacity is in bytes. Default "1".
	Unit *resource.Quantity `json:"unit,omitempty"`

	// AbsentValue is the capacity requested (capacityOf rules only) when the
	// container asks for another capacity of the same device but not for
	// this one. Unset: the device's default applies (its request policy's
	// default, often all of it). HAMi gives a container that sets gpumem but
	// not gpucores no share of the cores, so the hami profile sets 0.
	AbsentValue *resource.Quantity `json:"absentValue,omitempty"`

	// Shared marks the resource as a share of a device rather than a
	// device: GPU time-slicing or MPS replicas (nvidia.com/gpu.shared), the
	// RDMA shared device plugin's rdma/* resources. A shared resource is
	// never made an exclusive device: without Sharing the pod stays as
	// submitted (SharedDeviceNotMapped).
	Shared bool `json:"shared,omitempty"`

	// Sharing says how a shared resource is translated (shared rules only).
	Sharing *SharingRule `json:"sharing,omitempty"`

	// KeepInPod leaves the legacy resource in the container (dra-driver-cpu
	// needs the pod to keep its cpu requests). Only together with OnlyWith,
	// which makes the rule a companion of other devices.
	KeepInPod bool `json:"keepInPod,omitempty"`

	// OnlyWith makes the rule a companion: it is applied only when the pod
	// also gets a request of one of these families and an alignment rule ties
	// the two. A companion never makes a pod translatable on its own.
	OnlyWith []string `json:"onlyWith,omitempty"`
}

// SharingRule says how a shared resource carries its sharing over to DRA.
type SharingRule struct {
	// Mode is ConsumableCapacity or ClaimConfig. Required.
	Mode SharingMode `json:"mode"`
	// CapacityRequests are fixed capacity requests on the device, for
	// ConsumableCapacity, e.g. {shares: "1"} for the NVIDIA driver's
	// consumable shares. Keys are capacity names as the driver publishes
	// them ("<name>" in the driver's domain, or "<domain>/<name>"). Empty:
	// the device's default request.
	CapacityRequests map[string]resource.Quantity `json:"capacityRequests,omitempty"`
}

// SharingMode names how a shared resource is translated.
type SharingMode string

// Sharing modes.
const (
	// SharingConsumableCapacity: the request goes to devices that allow
	// multiple allocations (DRA consumable capacity, KEP-5075), with
	// CapacityRequests; pods' claims share a device as replicas did. The
	// request gets the selector device.allowMultipleAllocations, so an
	// exclusive device never serves it. For the NVIDIA driver this needs its
	// ConsumableShares feature (alpha, off by default).
	SharingConsumableCapacity SharingMode = "ConsumableCapacity"
	// SharingClaimConfig: the request gets the rule's Config (for example a
	// GpuConfig with TimeSlicing or MPS). The NVIDIA driver shares a GPU so
	// configured only among the containers and pods of one claim, and every
	// pod gets a claim of its own from the template: each pod gets a GPU of
	// its own (warning SharedDevicePerPod).
	SharingClaimConfig SharingMode = "ClaimConfig"
)

// AttributeRequirement is a typed requirement on one device attribute. It is
// turned into CEL by claimbridge; no user-written CEL is accepted.
type AttributeRequirement struct {
	// Attribute is "<domain>/<name>", e.g. "gpu.intel.com/driver". Required.
	Attribute string `json:"attribute"`
	// Type of the attribute: String (default), Int, Bool or Version.
	Type AttributeType `json:"type,omitempty"`
	// Operator: In (default), NotIn, Exists, DoesNotExist, Gt, Lt.
	Operator string `json:"operator,omitempty"`
	// Values compared against; one or more for In/NotIn, exactly one for
	// Gt/Lt, none for Exists/DoesNotExist.
	Values []string `json:"values,omitempty"`
}

func (a *AttributeRequirement) typeOrDefault() AttributeType {
	if a.Type == "" {
		return AttrString
	}
	return a.Type
}

// AttributeType is the type of a device attribute value.
type AttributeType string

// Attribute types.
const (
	AttrString  AttributeType = "String"
	AttrInt     AttributeType = "Int"
	AttrBool    AttributeType = "Bool"
	AttrVersion AttributeType = "Version"
)

// OpaqueConfig is driver configuration passed through to the claim.
type OpaqueConfig struct {
	// Driver the configuration is for. Required.
	Driver string `json:"driver"`
	// Parameters, any JSON object, at most 10Ki. Required.
	Parameters runtime.RawExtension `json:"parameters"`
}

// NodeLabelRule maps one node-label key to a requirement on devices.
type NodeLabelRule struct {
	// Key is the label key, or a pattern with one "*", e.g.
	// "feature.node.kubernetes.io/pci-*.present". Required.
	Key string `json:"key"`

	// Families whose requests get the selector. Required.
	Families []string `json:"families"`

	// Conversion names how a label value becomes a selector (see
	// [Conversion]). Required.
	Conversion Conversion `json:"conversion"`

	// Attribute is the device attribute "<domain>/<name>" the conversion
	// compares against. Required unless the conversion is Capacity-based,
	// Implied, PCIPresent or MIGStrategy.
	Attribute string `json:"attribute,omitempty"`

	// Capacity is the device capacity "<domain>/<name>" for MiB.
	Capacity string `json:"capacity,omitempty"`

	// Values maps label values to attribute values for Map and PCIPresent
	// (PCI vendor ID → driver names).
	Values map[string][]string `json:"values,omitempty"`

	// MIGDeviceClassName is the DeviceClass a request moves to when the label
	// says the device is a MIG slice (MIGProfile, MIGStrategy, GFDProduct with
	// a "-MIG-<profile>" value).
	MIGDeviceClassName string `json:"migDeviceClassName,omitempty"`

	// MIGProfileAttribute is the attribute holding the MIG profile.
	MIGProfileAttribute string `json:"migProfileAttribute,omitempty"`

	// Alternatives turns an In list into prioritized alternatives, in list
	// order, instead of one selector. Default false.
	Alternatives bool `json:"alternatives,omitempty"`

	// OnlyOnNodesWithLabel, when set, says the label exists only on nodes
	// that carry this label key too (GKE's labels on GKE nodes, which all
	// carry cloud.google.com/gke-nodepool): the placement check's legacy
	// view derives it only there.
	OnlyOnNodesWithLabel string `json:"onlyOnNodesWithLabel,omitempty"`
}

// Conversion names how a label value becomes a device requirement.
type Conversion string

// Conversions.
const (
	// ConvString compares the value with a string attribute.
	ConvString Conversion = "String"
	// ConvInt compares the value with an int attribute (Gt/Lt allowed).
	ConvInt Conversion = "Int"
	// ConvBool compares "true"/"false" with a bool attribute.
	ConvBool Conversion = "Bool"
	// ConvGFDProduct compares a GPU Feature Discovery product label
	// (spaces as dashes, optional -MIG-<profile> or -SHARED suffix) with the
	// productName attribute.
	ConvGFDProduct Conversion = "GFDProduct"
	// ConvMiB compares a MiB number with a byte capacity.
	ConvMiB Conversion = "MiB"
	// ConvGFDFamily maps an architecture family to a compute capability range.
	ConvGFDFamily Conversion = "GFDFamily"
	// ConvVersionMajor, ConvVersionMinor and ConvVersionPatch compare one
	// component of a version attribute.
	ConvVersionMajor Conversion = "VersionMajor"
	ConvVersionMinor Conversion = "VersionMinor"
	ConvVersionPatch Conversion = "VersionPatch"
	// ConvVersion compares a full dotted version (leading zeros dropped).
	ConvVersion Conversion = "Version"
	// ConvMap maps label values to attribute values through Values.
	ConvMap Conversion = "Map"
	// ConvMIGProfile says the device is a MIG slice of the given profile.
	ConvMIGProfile Conversion = "MIGProfile"
	// ConvMIGStrategy: "single" means the legacy GPU resource is a MIG slice.
	ConvMIGStrategy Conversion = "MIGStrategy"
	// ConvPCIPresent: an NFD PCI presence label, satisfied when a request's
	// driver is one that Values lists for the vendor ID in the key.
	ConvPCIPresent Conversion = "PCIPresent"
	// ConvPresent: the label says the node has devices of the family
	// ("true"); a request for such a device implies it, so it is removed
	// without a selector.
	ConvPresent Conversion = "Present"
	// ConvImplied is the former name of ConvPresent, still accepted.
	ConvImplied Conversion = "Implied"
	// ConvCount: the label is the number of physical devices of the families
	// on the node (nvidia.com/gpu.count). No device attribute holds it: the
	// label is removed without a selector, and the placement check tells
	// whether that changes where the pod can land.
	ConvCount Conversion = "Count"
)

var conversions = []Conversion{ConvString, ConvInt, ConvBool, ConvGFDProduct, ConvMiB, ConvGFDFamily,
	ConvVersionMajor, ConvVersionMinor, ConvVersionPatch, ConvVersion, ConvMap, ConvMIGProfile,
	ConvMIGStrategy, ConvPCIPresent, ConvImplied, ConvPresent, ConvCount}

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
	// Mode: Required, or Preferred (default): an aligned alternative first,
	// then the unaligned one.
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
	// Resource is the extended resource name. In Match it is required; in an
	// alternative the default is the matched one.
	Resource string `json:"resource,omitempty"`
	// NodeSelector: in Match, labels the alternative must have been selected
	// with; in an alternative, labels that replace those of Match.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// CountMultiplier multiplies the container's device count (alternatives
	// only). Default 1.
	CountMultiplier int64 `json:"countMultiplier,omitempty"`
}
