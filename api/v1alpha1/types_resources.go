package v1alpha1

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
)

// The policy's resource rules: which extended resources become which
// device requests, and how shares and capacities carry over.

// ResourceRule maps one extended-resource name (or a family of names) to a
// DeviceClass.
type ResourceRule struct {
	// Name is the extended resource, e.g. "nvidia.com/gpu", or a pattern with
	// one trailing "*", e.g. "nvidia.com/mig-*"; the text matched by "*" is
	// the suffix that SuffixAttribute compares against. Required.
	Name string `json:"name"`

	// Family groups resources of one kind of device. Node-label rules,
	// alignment rules and fallbacks refer to families. Required (except for
	// CapacityOf rules, which take their rule's), DNS label.
	Family string `json:"family,omitempty"`

	// DeviceClassName is the DeviceClass of the generated request. Required
	// (except for CapacityOf rules, which take their rule's).
	DeviceClassName string `json:"deviceClassName,omitempty"`

	// RequestName is the short name used in generated request names
	// ("<container>-<requestName>"). Default: the part of the resource name
	// after "/", made a DNS label.
	RequestName string `json:"requestName,omitempty"`

	// SuffixAttribute is the device attribute ("<domain>/<name>") that must
	// equal the suffix matched by a pattern name. Only for patterns; without
	// it the suffix does not narrow the devices.
	SuffixAttribute string `json:"suffixAttribute,omitempty"`

	// SuffixConversion says how the suffix is spelled as the attribute's
	// value, when the resource name spells it otherwise. Default
	// SuffixAsIs. SuffixGFDMIGProfile: the device plugin writes a MIG
	// profile's "+" as "." (resource names allow no "+"), so
	// nvidia.com/mig-1g.10gb.me selects profile "1g.10gb+me", as the NVIDIA
	// DRA driver publishes it. Only with SuffixAttribute.
	SuffixConversion SuffixConversion `json:"suffixConversion,omitempty"`

	// Selectors are extra requirements on device attributes, ANDed.
	Selectors []AttributeRequirement `json:"selectors,omitempty"`

	// WholeNodeCount names the Int attribute ("<domain>/<name>") by which
	// each device publishes how many devices of its driver its node has,
	// for a driver that prepares only claims that take every one of them.
	// The pod's count N of the resource then becomes the selector
	// attribute == N: the allocator, the placement check and the forecast
	// take only nodes of exactly N devices, and where the fleet has none
	// the pod stays as submitted (WholeNodeOnly says why). The Google TPU
	// DRA driver: tpu.google.com/chipCount (its kubelet plugin refuses a
	// claim for fewer chips than the node has, prepareDevices in
	// cmd/tpu-dra-kubeletplugin/state.go); the tpu profile sets it.
	WholeNodeCount string `json:"wholeNodeCount,omitempty"`

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
	// [ResourceRule.Unit], becomes the capacity request named by
	// [ResourceRule.Capacity] on each device of the request that the
	// container's quantity of CapacityOf makes (DRA consumable capacity;
	// the devices must allow multiple allocations for others to share
	// them). HAMi's nvidia.com/gpumem is a capacity of nvidia.com/gpu.
	// [ResourceRule.Family] and DeviceClassName are those of the CapacityOf
	// rule and must not be set. A container that asks for this resource
	// without CapacityOf stays as submitted.
	CapacityOf string `json:"capacityOf,omitempty"`

	// Unit is the capacity one unit of the resource stands for (CapacityOf
	// rules only), e.g. "1Mi" for HAMi's gpumem, which counts MiB while the
	// driver's memory capacity is in bytes. Default "1".
	Unit *resource.Quantity `json:"unit,omitempty"`

	// AbsentValue is the capacity requested (CapacityOf rules only) when the
	// container asks for another capacity of the same device but not for
	// this one. Unset: the device's default applies (its request policy's
	// default, often all of it). HAMi gives a container that sets gpumem but
	// not gpucores no share of the cores, so the hami profile sets "0".
	AbsentValue *resource.Quantity `json:"absentValue,omitempty"`

	// Shared marks the resource as a share of a device rather than a
	// device: GPU time-slicing or MPS replicas (nvidia.com/gpu.shared), the
	// RDMA shared device plugin's "rdma/*" resources. A shared resource is
	// never made an exclusive device: without [ResourceRule.Sharing] the
	// pod stays as submitted (SharedDeviceNotMapped).
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

	// CardType names the pod annotations by which the device plugin's
	// scheduler restricts which devices of the resource a pod may get, by
	// the device's type (HAMi's nvidia.com/use-gputype and
	// nouse-gputype). Translation turns them into a selector on every
	// request of the resource, and the placement check's legacy view counts
	// only the devices they admit. Default: unset, the annotations are not
	// read (a pod that carries HAMi's annotations for a resource of the
	// annotation's domain then stays as submitted, CardTypeNotTranslatable).
	// Device-count rules only.
	CardType *CardTypeRule `json:"cardType,omitempty"`
}

// CardTypeRule reads HAMi's card-type annotations (Project-HAMi/HAMi
// pkg/device/devices.go, CheckType): each is a comma-separated list of
// types, an entry matches a device whose type contains it, ignoring case
// (empty entries and empty annotations are ignored); a device qualifies
// when it matches an entry of [CardTypeRule.Use] (if set) and none of
// NoUse.
type CardTypeRule struct {
	// Use is the annotation listing the types the pod may use, e.g.
	// "nvidia.com/use-gputype". Required.
	Use string `json:"use"`
	// NoUse is the annotation listing the types the pod must not use, e.g.
	// "nvidia.com/nouse-gputype". Optional.
	NoUse string `json:"noUse,omitempty"`
	// Attribute is the string device attribute ("<domain>/<name>") that
	// holds the card's type, e.g. "gpu.nvidia.com/productName". Required.
	Attribute string `json:"attribute"`
	// Prefix: the type is the attribute's value preceded by the prefix and
	// "-" unless the value starts with the prefix. HAMi names an NVIDIA
	// card by its NVML name so ("NVIDIA-Tesla T4", "NVIDIA A100-SXM4-40GB";
	// pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go):
	// "NVIDIA". Default: none, the type is the attribute's value.
	Prefix string `json:"prefix,omitempty"`
}

// SharingRule says how a shared resource carries its sharing over to DRA.
type SharingRule struct {
	// Mode is SharingConsumableShares, SharingConsumableCapacity or
	// SharingClaimConfig. Required.
	Mode SharingMode `json:"mode"`
	// CapacityRequests are fixed capacity requests on the device, for
	// SharingConsumableCapacity, e.g. "{shares: 1}" for the NVIDIA driver's
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
	// [SharingRule.CapacityRequests]; pods' claims share a device as
	// replicas did. The request gets the selector
	// "device.allowMultipleAllocations", so an exclusive device never serves
	// it. For the NVIDIA driver this needs its "ConsumableShares" feature
	// gate (alpha, off by default).
	SharingConsumableCapacity SharingMode = "ConsumableCapacity"
	// SharingClaimConfig: the request gets the rule's [ResourceRule.Config]
	// (for example a GpuConfig with TimeSlicing or MPS). The NVIDIA driver
	// shares a GPU so configured only among the containers and pods of one
	// claim, and every pod gets a claim of its own from the template: each
	// pod gets a GPU of its own (warning SharedDevicePerPod).
	SharingClaimConfig SharingMode = "ClaimConfig"
	// SharingConsumableShares: each share the container asks for becomes
	// one share of a device of the family's share capacity
	// (PolicySpec.ShareCapacities: the NVIDIA driver's shares), on a device
	// that publishes it, where the fleet's devices (or, without a fleet,
	// the policy's consumableShares) say the devices are shared; elsewhere
	// the pod stays as submitted (SharesUnavailable). A pod that selects
	// the family's shared GPUs by node label (a "-SHARED" product, GFD's or
	// GKE's time-slicing labels) asks for shares with the family's plain
	// resource too; one that selects MPS stays as submitted
	// (SharedMPSNotMapped). Where devices of the family are shared, a
	// request for whole devices asks for all of a device's shares. The
	// nvidia profile's nvidia.com/gpu.shared.
	SharingConsumableShares SharingMode = "ConsumableShares"
)

// AttributeRequirement is a typed requirement on one device attribute. It is
// turned into CEL by claimbridge; no user-written CEL is accepted.
type AttributeRequirement struct {
	// Attribute is "<domain>/<name>", e.g. "gpu.intel.com/driver". Required.
	Attribute string `json:"attribute"`
	// Type of the attribute: "String" (default), "Int", "Bool" or "Version".
	Type AttributeType `json:"type,omitempty"`
	// Operator: "In" (default), "NotIn", "Exists", "DoesNotExist", "Gt" or
	// "Lt" (these two with type "Int" or "Version").
	Operator string `json:"operator,omitempty"`
	// Values compared against: one or more for "In" and "NotIn", exactly
	// one for "Gt" and "Lt", none for "Exists" and "DoesNotExist"; each a
	// value of the type (a string: at most 64 characters).
	Values []string `json:"values,omitempty"`
}

// ValueType is the type of the requirement's values: Type, String when
// unset.
func (a *AttributeRequirement) ValueType() AttributeType {
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

// CheckValue says why v is not a value of type t (String when t is unset):
// an integer, a boolean, a version N[.N[.N]], or a valid UTF-8 string of at
// most 64 characters, the limit of a device attribute.
func (t AttributeType) CheckValue(v string) error {
	switch t {
	case AttrInt:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return errors.New("not an integer")
		}
	case AttrBool:
		if _, err := strconv.ParseBool(v); err != nil {
			return errors.New("not a boolean")
		}
	case AttrVersion:
		_, _, _, err := ParseVersion(v)
		return err
	default:
		if len(v) > 64 {
			return errors.New("longer than 64 characters, the limit of a device attribute")
		}
		if !utf8.ValidString(v) {
			return errors.New("not valid UTF-8")
		}
	}
	return nil
}

// ParseVersion reads a value of type Version: "1", "1.2" or "1.2.3" (leading zeros dropped, as the
// NVIDIA driver normalises "550.107.02" to "550.107.2").
func ParseVersion(v string) (major, minor, patch int64, err error) {
	parts := strings.Split(v, ".")
	if len(parts) == 0 || len(parts) > 3 {
		return 0, 0, 0, errors.New("not a version of the form N[.N[.N]]")
	}
	nums := make([]int64, 3)
	for i, p := range parts {
		n, perr := strconv.ParseInt(p, 10, 64)
		if perr != nil || n < 0 {
			return 0, 0, 0, errors.New("not a version of the form N[.N[.N]]")
		}
		nums[i] = n
	}
	return nums[0], nums[1], nums[2], nil
}

// OpaqueConfig is driver configuration passed through to the claim.
type OpaqueConfig struct {
	// Driver the configuration is for. Required.
	Driver string `json:"driver"`
	// Parameters, any JSON object, at most 10Ki. Required.
	Parameters runtime.RawExtension `json:"parameters"`
}

// SuffixConversion turns the suffix of a pattern resource name into the
// value of the rule's [ResourceRule.SuffixAttribute].
type SuffixConversion string

// Suffix conversions.
const (
	// SuffixAsIs: the attribute's value is the suffix.
	SuffixAsIs SuffixConversion = "AsIs"
	// SuffixGFDMIGProfile: the suffix is a MIG profile as the device plugin
	// and GFD spell it (1g.10gb.me), the attribute as the NVIDIA DRA driver
	// does (1g.10gb+me).
	SuffixGFDMIGProfile SuffixConversion = "GFDMIGProfile"
)

// suffixConversions are the values a policy may name.
var suffixConversions = []SuffixConversion{SuffixAsIs, SuffixGFDMIGProfile}
