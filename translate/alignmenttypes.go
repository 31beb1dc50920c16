package translate

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
