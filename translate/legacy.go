package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// The legacy view reads the vocabulary backwards: from the devices a DRA
// node publishes, what the device plugins and GPU Feature Discovery, Node
// Feature Discovery or GKE would have shown on that node — the labels and
// the extended resources. The placement proof compares where a legacy pod
// could land on that view with where its translation lands on the real node.
//
// Each conversion of the vocabulary (vocabulary.go) has its forward
// direction (a label requirement becomes a device selector) and its
// backward one (device attributes become a label value), so a label added
// to a profile serves both. This file holds what the legacy view reads.

// LegacyDevice is one DRA device as the legacy view reads it.
type LegacyDevice struct {
	// Name of the device in its pool; devices are read in name order, as
	// GPU Feature Discovery reads GPUs in index order.
	Name string
	// Driver that publishes it: attributes without a domain are the
	// driver's.
	Driver     string
	Attributes map[resourceapi.QualifiedName]resourceapi.DeviceAttribute
	Capacity   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity
	// AllowMultipleAllocations is the device's: several claims may share
	// it (shares.go).
	AllowMultipleAllocations bool
}

// replicas is how many claims share the device of the family, and whether
// it is shared at all ([celgen.Replicas], by the family's share and memory
// capacities and the policy's memoryShares).
func (p *Policy) replicas(d LegacyDevice, family string) (int64, bool) {
	shares, _ := p.ShareCapacity(family)
	memory, _ := p.MemoryCapacity(family)
	dev := resourceapi.Device{Capacity: d.Capacity, AllowMultipleAllocations: &d.AllowMultipleAllocations}
	return celgen.Replicas(d.Driver, &dev, shares, memory, p.MemoryShares(family))
}

// attribute looks up "<domain>/<name>"; a device stores the attributes of
// its own driver's domain without the domain.
func (d *LegacyDevice) attribute(qualified string) (resourceapi.DeviceAttribute, bool) {
	if a, ok := d.Attributes[resourceapi.QualifiedName(qualified)]; ok {
		return a, true
	}
	domain, id, _ := strings.Cut(qualified, "/")
	if domain == d.Driver {
		a, ok := d.Attributes[resourceapi.QualifiedName(id)]
		return a, ok
	}
	return resourceapi.DeviceAttribute{}, false
}

func (d *LegacyDevice) capacity(qualified string) (resource.Quantity, bool) {
	if c, ok := d.Capacity[resourceapi.QualifiedName(qualified)]; ok {
		return c.Value, true
	}
	domain, id, _ := strings.Cut(qualified, "/")
	if domain == d.Driver {
		c, ok := d.Capacity[resourceapi.QualifiedName(id)]
		return c.Value, ok
	}
	return resource.Quantity{}, false
}

// FamilyDevices returns the devices of a node that belong to a device
// family (those matching the DeviceClass and selectors of one of the
// family's resource rules, see [Policy.FamilyDeviceRules]), in name order.
type FamilyDevices func(family string) []LegacyDevice

// DeviceRule says which devices a legacy resource counts: those of the
// DeviceClass that also match Selectors.
type DeviceRule struct {
	// Resource is the extended resource name (or pattern) of the rule.
	Resource string
	Family   string
	// DeviceClassName whose selectors the devices must match.
	DeviceClassName string
	// Selectors are CEL expressions, ANDed with the class's: the rule's own
	// selectors and, for a pattern, the suffix attribute.
	Selectors []string
	// Shared is true when the resource is a share of a device rather than a
	// device (time-slicing replicas, RDMA shared devices): its count on a
	// node cannot be derived from the devices.
	Shared bool
}

// FamilyDeviceRules lists, per family, the rules whose devices make up the
// family on a node: every device-count rule (not capacity or companion
// rules), patterns without their suffix.
func (p *Policy) FamilyDeviceRules() map[string][]DeviceRule {
	out := map[string][]DeviceRule{}
	for i := range p.spec.Resources {
		r := &p.spec.Resources[i]
		if r.Capacity != "" || len(r.OnlyWith) > 0 {
			continue
		}
		dr, err := deviceRule(r, r.Name, "")
		if err != nil {
			continue
		}
		if !slices.ContainsFunc(out[r.Family], func(o DeviceRule) bool {
			return o.DeviceClassName == dr.DeviceClassName && slices.Equal(o.Selectors, dr.Selectors)
		}) {
			out[r.Family] = append(out[r.Family], dr)
		}
	}
	return out
}

// LegacyResource says how the device plugin's resource name would be
// counted on a DRA node with these labels; ok is false when the policy does
// not map it as a device count. The node's own labels may say that the
// device plugin serves the resource as MIG slices (nvidia.com/mig.strategy
// single, GKE's gke-gpu-partition-size): the devices counted are then those
// the labels move the request to, as the translation does.
func (p *Policy) LegacyResource(name corev1.ResourceName, nodeLabels map[string]string) (DeviceRule, bool) {
	rule, suffix, ok := p.resourceRule(string(name))
	if ok && rule.CapacityOf != "" {
		return p.capacityLegacyResource(rule, name) // capacity.go
	}
	if !ok || rule.Capacity != "" || len(rule.OnlyWith) > 0 {
		return DeviceRule{}, false
	}
	dr, err := deviceRule(rule, string(name), suffix)
	if err != nil {
		return DeviceRule{}, false
	}
	for _, k := range slices.Sorted(maps.Keys(nodeLabels)) {
		lr, w, ok := p.labelRule(k, rule.Family)
		if !ok || lr.MIGDeviceClassName == "" {
			continue
		}
		req := labelReq{key: k, op: corev1.NodeSelectorOpIn, values: []string{nodeLabels[k]}}
		eff, err := p.convert(lr, w, req, rule.Family)
		if err != nil || eff.class == "" {
			continue
		}
		dr.DeviceClassName = eff.class
		dr.Selectors = append(slices.Clone(dr.Selectors), eff.selectors...)
	}
	return dr, true
}

func deviceRule(r *v1alpha1.ResourceRule, name, suffix string) (DeviceRule, error) {
	dr := DeviceRule{Resource: name, Family: r.Family, DeviceClassName: r.DeviceClassName, Shared: sharedDevice(r)}
	for _, s := range r.Selectors {
		expr, err := celgen.Requirement(celgen.SplitAttr(s.Attribute), s.ValueType(), s.Operator, s.Values)
		if err != nil {
			return DeviceRule{}, err
		}
		dr.Selectors = append(dr.Selectors, expr)
	}
	if suffix != "" && r.SuffixAttribute != "" {
		attr := celgen.SplitAttr(r.SuffixAttribute)
		pred, err := celgen.StringIn(attr.Ref(), []string{suffixValue(r, suffix)})
		if err != nil {
			return DeviceRule{}, err
		}
		dr.Selectors = append(dr.Selectors, celgen.Guarded(attr.Guard(), pred, false))
	}
	return dr, nil
}

// sharedDevice: the resource is a share of a device. The NVIDIA device
// plugin names time-sliced GPUs <resource>.shared.
func sharedDevice(r *v1alpha1.ResourceRule) bool {
	return r.Shared || strings.HasSuffix(r.Name, ".shared")
}

// Fingerprint identifies the policy's effective rules: two policies with
// the same fingerprint translate every pod alike. Caches of results that
// depend on the policy key on it.
func (p *Policy) Fingerprint() string { return p.fingerprint }

func specFingerprint(spec *v1alpha1.PolicySpec) string {
	data, err := json.Marshal(spec)
	if err != nil {
		panic(err) // plain data types always marshal
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}
