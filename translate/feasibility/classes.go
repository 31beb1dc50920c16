package feasibility

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Node classes: the nodes that publish DRA devices, grouped by everything a
// placement answer depends on — the devices (their attributes, capacities,
// taints and counters, with per-device identities such as UUIDs and bus IDs
// reduced to their pattern of equality), the node's labels except the
// hostname, its taints, whether it is unschedulable, and its extended
// allocatable resources. Two nodes of one class give the same answer to
// every question the placement check asks, except about their names.
// Identical machines of one pool form one class, so the check costs one
// evaluation per class, and a node that joins an existing class changes
// nothing that was computed.

// nodeClass is one class of a snapshot.
type nodeClass struct {
	key     string
	members []*nodeInfo // in name order; members[0] is the representative
}

// identityAttributes hold per-device identities: only their pattern of
// equality between the devices of a node matters (matchAttribute compares
// equality; no translation compares them with a literal).
var identityAttributes = map[string]bool{
	"uuid": true, "parentUUID": true, "serial": true, "mac": true,
	"pciAddress": true, "pciAddr": true, "parentPciAddr": true, "pciBusID": true, "pcieBusID": true,
	"resource.kubernetes.io/pciBusID": true,
}

// hostnameLabel is unique per node and left out of the class key; a pod
// that selects on it (or on the node's name) is checked node by node.
const hostnameLabel = "kubernetes.io/hostname"

// nodeClassList returns the node classes of the snapshot's DRA nodes, computed once.
func (s *Snapshot) nodeClassList() []*nodeClass {
	s.classOnce.Do(func() {
		byKey := map[string]*nodeClass{}
		h := sha256.New()
		for _, ni := range s.nodes {
			if len(ni.devices) == 0 {
				continue
			}
			ni.classKey = classKey(h, ni)
			c, ok := byKey[ni.classKey]
			if !ok {
				c = &nodeClass{key: ni.classKey}
				byKey[ni.classKey] = c
				s.nodeClasses = append(s.nodeClasses, c)
			}
			c.members = append(c.members, ni)
		}
		s.classesFingerprint = classesFingerprint(s.classes)
	})
	return s.nodeClasses
}

func classKey(h hash.Hash, ni *nodeInfo) string {
	h.Reset()
	w := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
	}
	n := ni.node
	w("labels")
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		if k != hostnameLabel {
			w(k, n.Labels[k])
		}
	}
	w("taints")
	for _, t := range n.Spec.Taints {
		w(t.Key, t.Value, string(t.Effect))
	}
	w("unschedulable", strconv.FormatBool(n.Spec.Unschedulable))
	w("allocatable")
	for _, r := range slices.Sorted(maps.Keys(n.Status.Allocatable)) {
		if isExtendedResourceName(r) {
			q := n.Status.Allocatable[r]
			w(string(r), q.String())
		}
	}
	w("devices")
	devs := slices.Clone(ni.devices)
	slices.SortFunc(devs, func(a, b deviceRef) int {
		return cmp.Or(cmp.Compare(a.driver, b.driver), cmp.Compare(a.device.Name, b.device.Name))
	})
	ids := map[string]int{}
	for _, d := range devs {
		writeDevice(w, d, ids)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func writeDevice(w func(...string), d deviceRef, ids map[string]int) {
	dev := d.device
	w("device", d.driver)
	for _, name := range slices.Sorted(maps.Keys(dev.Attributes)) {
		a := dev.Attributes[name]
		v := attributeString(a)
		if identityAttributes[string(name)] {
			id, ok := ids[v]
			if !ok {
				id = len(ids)
				ids[v] = id
			}
			v = "#" + strconv.Itoa(id)
		}
		w(string(name), v)
	}
	for _, name := range slices.Sorted(maps.Keys(dev.Capacity)) {
		c := dev.Capacity[name]
		w("c", string(name), c.Value.String())
		if p := c.RequestPolicy; p != nil {
			w("policy", quantityString(p.Default))
			if p.ValidRange != nil {
				w(quantityString(p.ValidRange.Min), quantityString(p.ValidRange.Max), quantityString(p.ValidRange.Step))
			}
			for _, v := range p.ValidValues {
				w(v.String())
			}
		}
	}
	if dev.AllowMultipleAllocations != nil && *dev.AllowMultipleAllocations {
		w("multi")
	}
	for _, t := range dev.Taints {
		w("t", t.Key, t.Value, string(t.Effect))
	}
	for _, cc := range dev.ConsumesCounters {
		w("counters", cc.CounterSet)
		for _, k := range slices.Sorted(maps.Keys(cc.Counters)) {
			v := cc.Counters[k].Value
			w(k, v.String())
		}
	}
	if dev.BindsToNode != nil && *dev.BindsToNode {
		w("binds")
	}
	w(dev.BindingConditions...)
}

func quantityString(q *resource.Quantity) string {
	if q == nil {
		return "-"
	}
	return q.String()
}

// isExtendedResourceName follows the API's rule: a domain-prefixed name
// outside kubernetes.io that is not a quota "requests." name.
func isExtendedResourceName(n corev1.ResourceName) bool {
	s := string(n)
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			domain := s[:i]
			return domain != "kubernetes.io" && !hasSuffix(domain, ".kubernetes.io") && !hasPrefix(s, "requests.")
		}
	}
	return false
}

func hasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}
func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

// classesFingerprint identifies the DeviceClasses: a class's selectors
// decide which devices a legacy resource counts and what a claim gets.
func classesFingerprint(classes map[string]*resourceapi.DeviceClass) string {
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
