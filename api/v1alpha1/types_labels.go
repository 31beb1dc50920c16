package v1alpha1

// The policy's node-label rules: which node-label keys become which
// requirements on device attributes, and how their values convert
// (vocabulary.go holds both directions of every conversion).

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
	// compares against. Required for the conversions that compare an
	// attribute: ConvString, ConvInt, ConvBool, ConvGFDProduct,
	// ConvGFDFamily, ConvVersion, ConvVersionMajor, ConvVersionMinor,
	// ConvVersionPatch, ConvMap and ConvHexID.
	Attribute string `json:"attribute,omitempty"`

	// Capacity is the device capacity "<domain>/<name>" the conversion
	// compares against. Required for the conversions that compare a
	// capacity: ConvMiB and ConvRoundedGiB (a size in bytes), ConvReplicas
	// and ConvSharingStrategy (the capacity that counts a device's shares).
	Capacity string `json:"capacity,omitempty"`

	// Values maps label values to attribute values for ConvMap, and PCI
	// vendor IDs to driver names for ConvPCIPresent; required for both.
	Values map[string][]string `json:"values,omitempty"`

	// MIGDeviceClassName is the DeviceClass a request moves to when the label
	// says the device is a MIG slice (ConvMIGProfile, ConvMIGStrategy,
	// ConvGFDProduct with a "-MIG-<profile>" value). Required for
	// ConvMIGProfile and ConvMIGStrategy; with ConvGFDProduct, set together
	// with MIGProfileAttribute or not at all.
	MIGDeviceClassName string `json:"migDeviceClassName,omitempty"`

	// MIGProfileAttribute is the attribute holding the MIG profile. Required
	// for ConvMIGProfile.
	MIGProfileAttribute string `json:"migProfileAttribute,omitempty"`

	// Alternatives turns an "In" list into prioritized alternatives, in list
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
	// ConvInt compares the value with an int attribute ("Gt" and "Lt"
	// allowed).
	ConvInt Conversion = "Int"
	// ConvBool compares "true"/"false" with a bool attribute.
	ConvBool Conversion = "Bool"
	// ConvGFDProduct compares a GPU Feature Discovery product label
	// (spaces as dashes, optional "-MIG-<profile>" or "-SHARED" suffix) with
	// the productName attribute.
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
	// ConvMap maps label values to attribute values through
	// [NodeLabelRule.Values].
	ConvMap Conversion = "Map"
	// ConvMIGProfile says the device is a MIG slice of the given profile.
	ConvMIGProfile Conversion = "MIGProfile"
	// ConvMIGStrategy: "single" means the legacy GPU resource is a MIG slice.
	ConvMIGStrategy Conversion = "MIGStrategy"
	// ConvPCIPresent: an NFD PCI presence label, satisfied when a request's
	// driver is one that [NodeLabelRule.Values] lists for the vendor ID in
	// the key.
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
	// ConvReplicas: the replicas the device plugin advertises per GPU
	// (nvidia.com/gpu.replicas): N > 1 is a device shared N ways, whose
	// [NodeLabelRule.Capacity] (the share capacity, "<domain>/<name>") is
	// N; 1 or 0 a device that is not shared (one that does not allow
	// multiple allocations).
	ConvReplicas Conversion = "Replicas"
	// ConvSharingStrategy: the device plugin's sharing strategy
	// (nvidia.com/gpu.sharing-strategy): "time-slicing" is a device shared
	// through [NodeLabelRule.Capacity], "none" one that is not shared;
	// "mps" has no device counterpart.
	ConvSharingStrategy Conversion = "SharingStrategy"
	// ConvHexID compares a hexadecimal ID written without "0x" (AMD's node
	// labeller's device-id: 74a1) with a string attribute that has it (the
	// AMD DRA driver's deviceID: 0x74a1).
	ConvHexID Conversion = "HexID"
	// ConvRoundedGiB compares a size in whole GiB, rounded to the nearest,
	// with a G (AMD's node labeller's vram: 192G) with a byte capacity.
	ConvRoundedGiB Conversion = "RoundedGiB"
)

// conversions lists every Conversion a rule may name, with what the rule
// must then name beside it: "attribute" (the device attribute it compares),
// "capacity" (the capacity it compares) or "" (neither).
var conversions = []struct {
	conversion Conversion
	reads      string
}{
	{ConvString, "attribute"},
	{ConvInt, "attribute"},
	{ConvBool, "attribute"},
	{ConvGFDProduct, "attribute"},
	{ConvMiB, "capacity"},
	{ConvGFDFamily, "attribute"},
	{ConvVersionMajor, "attribute"},
	{ConvVersionMinor, "attribute"},
	{ConvVersionPatch, "attribute"},
	{ConvVersion, "attribute"},
	{ConvMap, "attribute"},
	{ConvMIGProfile, ""},
	{ConvMIGStrategy, ""},
	{ConvPCIPresent, ""},
	{ConvImplied, ""},
	{ConvPresent, ""},
	{ConvCount, ""},
	{ConvReplicas, "capacity"},
	{ConvSharingStrategy, "capacity"},
	{ConvHexID, "attribute"},
	{ConvRoundedGiB, "capacity"},
}

// Conversions lists the conversions a node-label rule may name.
func Conversions() []Conversion {
	out := make([]Conversion, len(conversions))
	for i, c := range conversions {
		out[i] = c.conversion
	}
	return out
}

// Reads is what a rule of the conversion must name: "attribute" (the
// device attribute it compares), "capacity" (the capacity it compares) or
// "" (neither, or an unknown conversion).
func (c Conversion) Reads() string {
	for _, e := range conversions {
		if e.conversion == c {
			return e.reads
		}
	}
	return ""
}
