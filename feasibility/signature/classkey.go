package signature

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/claimbridge/claimbridge/feasibility/identity"
	"github.com/claimbridge/claimbridge/podfacts"
)

// The class key of a node: everything a placement answer depends on — the
// devices (their attributes, capacities, taints and counters, with
// per-device identities such as UUIDs and bus IDs reduced to their pattern
// of equality), the node's labels except the hostname, its taints, whether
// it is unschedulable, and its extended allocatable resources. Two nodes of
// one key give the same answer to every question the placement check asks,
// except about their names.

// HostnameLabel is unique per node and left out of the class key; a pod
// that selects on it (or on the node's name) is checked node by node
// (SelectsNodeByName).
const HostnameLabel = "kubernetes.io/hostname"

// SelectsNodeByName reports whether the pod's node constraints name nodes
// (hostname label or metadata.name fields), which class keys do not tell
// apart.
func SelectsNodeByName(pod *corev1.Pod) bool {
	if _, ok := pod.Spec.NodeSelector[HostnameLabel]; ok {
		return true
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			if len(t.MatchFields) > 0 {
				return true
			}
			for _, e := range t.MatchExpressions {
				if e.Key == HostnameLabel {
					return true
				}
			}
		}
	}
	return false
}

// ClassKey is the class key of the node with the devices it sees: a hash
// of what its class depends on. It neither keeps nor modifies devices.
func (k *KeyWriter) ClassKey(n *corev1.Node, devices []Device) string {
	k.buf = k.buf[:0]
	k.str("labels")
	k.labelNames, k.labels = lookupSorted(n.Labels, k.labelNames, k.labels)
	for i, name := range k.labelNames {
		if name != HostnameLabel {
			k.str(name, k.labels[i])
		}
	}
	k.str("taints")
	for _, t := range n.Spec.Taints {
		k.str(t.Key, t.Value, string(t.Effect))
	}
	k.str("unschedulable", strconv.FormatBool(n.Spec.Unschedulable))
	k.str("allocatable")
	k.resNames, k.res = lookupSorted(n.Status.Allocatable, k.resNames, k.res)
	for i, r := range k.resNames {
		if podfacts.IsExtendedResource(r) {
			k.str(string(r))
			k.quantity(&k.res[i])
		}
	}
	k.str("devices")
	k.devs = append(k.devs[:0], devices...)
	slices.SortFunc(k.devs, func(a, b Device) int {
		return cmp.Or(cmp.Compare(a.Driver, b.Driver), cmp.Compare(a.Device.Name, b.Device.Name))
	})
	clear(k.ids)
	for i := range k.devs {
		k.device(&k.devs[i])
	}
	sum := sha256.Sum256(k.buf)
	return hex.EncodeToString(sum[:12])
}

// KeyWriter appends the parts of a class key to one buffer. A class key is
// computed for every node of a fleet, so the writer is made once per
// snapshot and everything it holds is reused from node to node. Not for
// concurrent use.
type KeyWriter struct {
	num     [32]byte
	buf     []byte
	scratch []string
	devs    []Device
	ids     map[identityValue]int // a node's identities, numbered in order of appearance
	// The sorted label and allocatable names of the last node, the
	// attribute and capacity names of the last device, and their values in
	// that order: the nodes of a pool and the devices of a node are mostly
	// alike, and one with the same names takes them without sorting its own.
	labelNames []string
	labels     []string
	resNames   []corev1.ResourceName
	res        []resource.Quantity
	attrNames  []resourceapi.QualifiedName
	attrs      []resourceapi.DeviceAttribute
	// The attributes of a device with identities held apart, all of them
	// in name order.
	allNames []resourceapi.QualifiedName
	allAttrs []resourceapi.DeviceAttribute
	capNames []resourceapi.QualifiedName
	caps     []resourceapi.DeviceCapacity
}

// NewKeyWriter returns a writer with room for the class key of a large
// node.
func NewKeyWriter() *KeyWriter {
	return &KeyWriter{buf: make([]byte, 0, 16<<10), ids: map[identityValue]int{}}
}

func (k *KeyWriter) str(parts ...string) {
	for _, p := range parts {
		k.buf = append(k.buf, p...)
		k.buf = append(k.buf, 0)
	}
}

// quantity writes what str(q.String()) writes, without the string: the
// canonical form, which is also what String returns when it returns the
// string the quantity was parsed from.
func (k *KeyWriter) quantity(q *resource.Quantity) {
	// CanonicalizeBytes may return a number of its own instead of
	// appending to the array it is given: copy from a scratch array.
	number, suffix := q.CanonicalizeBytes(k.num[:0])
	k.buf = append(k.buf, number...)
	k.buf = append(k.buf, suffix...)
	k.buf = append(k.buf, 0)
}

// sorted collects names into the writer's scratch slice, sorted.
func (k *KeyWriter) sorted(names func(func(string) bool)) []string {
	k.scratch = k.scratch[:0]
	for n := range names {
		k.scratch = append(k.scratch, n)
	}
	slices.Sort(k.scratch)
	return k.scratch
}

// lookupSorted fills values with m's values in the order of names, sorted
// names of m's keys: the names kept when m has exactly those keys, else
// m's own, sorted.
func lookupSorted[K ~string, V any](m map[K]V, names []K, values []V) ([]K, []V) {
	values = values[:0]
	if len(names) == len(m) {
		for _, name := range names {
			v, ok := m[name]
			if !ok {
				break
			}
			values = append(values, v)
		}
		if len(values) == len(m) {
			return names, values
		}
	}
	names = names[:0]
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	values = values[:0]
	for _, name := range names {
		values = append(values, m[name])
	}
	return names, values
}

// withIdentities appends to names and attrs the sorted attributes and the
// sorted identities merged in name order.
func withIdentities(sortedNames []resourceapi.QualifiedName, sortedAttrs []resourceapi.DeviceAttribute, ids []identity.Attribute,
	names []resourceapi.QualifiedName, attrs []resourceapi.DeviceAttribute) ([]resourceapi.QualifiedName, []resourceapi.DeviceAttribute) {
	i, j := 0, 0
	for i < len(sortedNames) || j < len(ids) {
		if j == len(ids) || i < len(sortedNames) && sortedNames[i] < ids[j].Name {
			names, attrs = append(names, sortedNames[i]), append(attrs, sortedAttrs[i])
			i++
			continue
		}
		names, attrs = append(names, ids[j].Name), append(attrs, ids[j].Value)
		j++
	}
	return names, attrs
}

func (k *KeyWriter) device(d *Device) {
	dev := d.Device
	k.str("device", d.Driver)
	k.str("unknown")
	k.buf = strconv.AppendInt(k.buf, int64(len(d.Unknown)), 10)
	k.buf = append(k.buf, 0)
	k.str(d.Unknown...)
	k.attrNames, k.attrs = lookupSorted(dev.Attributes, k.attrNames, k.attrs)
	names, attrs := k.attrNames, k.attrs
	if len(d.Identity) > 0 {
		k.allNames, k.allAttrs = withIdentities(names, attrs, d.Identity, k.allNames[:0], k.allAttrs[:0])
		names, attrs = k.allNames, k.allAttrs
	}
	for i, name := range names {
		a := &attrs[i]
		k.buf = append(k.buf, name...)
		k.buf = append(k.buf, 0)
		if identity.Is(name) {
			v := identityOf(a)
			id, ok := k.ids[v]
			if !ok {
				id = len(k.ids)
				k.ids[v] = id
			}
			k.buf = append(k.buf, '#')
			k.buf = strconv.AppendInt(k.buf, int64(id), 10)
			// Its type, and whether CEL can read it: a value CEL cannot
			// convert fails every selector on the device, whatever it reads.
			k.buf = append(k.buf, v.kind)
			if !convertible(*a) {
				k.buf = append(k.buf, '!')
			}
		} else {
			k.buf = appendAttribute(k.buf, *a)
		}
		k.buf = append(k.buf, 0)
	}
	k.capNames, k.caps = lookupSorted(dev.Capacity, k.capNames, k.caps)
	for i, name := range k.capNames {
		c := &k.caps[i]
		k.str("c", string(name))
		k.quantity(&c.Value)
		if p := c.RequestPolicy; p != nil {
			k.str("policy", quantityString(p.Default))
			if p.ValidRange != nil {
				k.str(quantityString(p.ValidRange.Min), quantityString(p.ValidRange.Max), quantityString(p.ValidRange.Step))
			}
			for _, v := range p.ValidValues {
				k.str(v.String())
			}
		}
	}
	if dev.AllowMultipleAllocations != nil && *dev.AllowMultipleAllocations {
		k.str("multi")
	}
	for _, t := range dev.Taints {
		k.str("t", t.Key, t.Value, string(t.Effect))
	}
	for _, cc := range dev.ConsumesCounters {
		k.str("counters", cc.CounterSet)
		for _, name := range k.sorted(maps.Keys(cc.Counters)) {
			v := cc.Counters[name].Value
			k.str(name)
			k.quantity(&v)
		}
	}
	if dev.BindsToNode != nil && *dev.BindsToNode {
		k.str("binds")
	}
	k.str(dev.BindingConditions...)
}

// identityValue is an identity attribute's value as a map key: equal exactly
// when the values' attributeString are, without making that string for a
// scalar (identities are unique: each would be a string of its own).
type identityValue struct {
	kind byte
	s    string
	i    int64
}

func identityOf(a *resourceapi.DeviceAttribute) identityValue {
	switch {
	case a.IntValue != nil:
		return identityValue{kind: 'i', i: *a.IntValue}
	case a.BoolValue != nil:
		if *a.BoolValue {
			return identityValue{kind: 'b', i: 1}
		}
		return identityValue{kind: 'b'}
	case a.StringValue != nil:
		return identityValue{kind: 's', s: *a.StringValue}
	case a.VersionValue != nil:
		return identityValue{kind: 'v', s: *a.VersionValue}
	}
	return identityValue{s: attributeString(*a)}
}

// appendAttribute appends an attribute's type and value (as attributeString).
func appendAttribute(buf []byte, a resourceapi.DeviceAttribute) []byte {
	switch {
	case a.IntValue != nil:
		return strconv.AppendInt(append(buf, 'i'), *a.IntValue, 10)
	case a.BoolValue != nil:
		return strconv.AppendBool(append(buf, 'b'), *a.BoolValue)
	case a.StringValue != nil:
		return append(append(buf, 's'), *a.StringValue...)
	case a.VersionValue != nil:
		return append(append(buf, 'v'), *a.VersionValue...)
	}
	return append(buf, attributeString(a)...)
}

func quantityString(q *resource.Quantity) string {
	if q == nil {
		return "-"
	}
	return q.String()
}

// ClassesFingerprint identifies the DeviceClasses: a class's selectors
// decide which devices a legacy resource counts and what a claim gets.
func ClassesFingerprint(classes map[string]*resourceapi.DeviceClass) string {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(classes)) {
		c := classes[name]
		h.Write([]byte(name))
		for _, s := range c.Spec.Selectors {
			if s.CEL != nil {
				h.Write([]byte{0})
				h.Write([]byte(s.CEL.Expression))
			}
		}
		if c.Spec.ExtendedResourceName != nil {
			h.Write([]byte{1})
			h.Write([]byte(*c.Spec.ExtendedResourceName))
		}
		h.Write([]byte{2})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
