package feasibility

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/claimbridge/claimbridge/translate"
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
	key string
	// index numbers the classes of a snapshot from 1.
	index   int
	members []*nodeInfo // in name order; members[0] is the representative
}

// identityAttributes hold per-device identities (in any domain): only their
// pattern of equality between the devices of a node matters (matchAttribute
// compares equality; no translation compares them with a literal).
var identityAttributes = map[string]bool{
	"uuid": true, "parentUUID": true, "serial": true, "mac": true, "rdmaDevice": true,
	"pciAddress": true, "pciAddr": true, "parentPciAddr": true, "pciBusID": true, "pcieBusID": true,
}

func isIdentity(name resourceapi.QualifiedName) bool {
	s := string(name)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return identityAttributes[s[i+1:]]
		}
	}
	return identityAttributes[s]
}

// hostnameLabel is unique per node and left out of the class key; a pod
// that selects on it (or on the node's name) is checked node by node.
const hostnameLabel = "kubernetes.io/hostname"

// nodeClassList returns the node classes of the snapshot's DRA nodes,
// computed once per snapshot. memo carries class keys over from earlier
// snapshots: a node whose object and devices are the same objects as then
// keeps its key (informers replace an object when it changes), so a new
// snapshot after a claim was allocated costs a lookup per node.
func (s *Snapshot) nodeClassList(memo *classMemo) []*nodeClass {
	s.classOnce.Do(func() {
		if s.base != nil {
			s.derivedClasses(memo)
			return
		}
		byKey := map[string]*nodeClass{}
		h := sha256.New()
		memo.mu.Lock()
		next := make(map[*corev1.Node]memoEntry, len(s.nodes))
		for _, ni := range s.nodes {
			if len(ni.devices) == 0 {
				continue
			}
			e, ok := memo.entries[ni.node]
			if !ok || !sameDevices(e.devices, ni.devices) {
				e = memoEntry{devices: devicePointers(ni.devices), key: classKey(h, ni)}
			}
			next[ni.node] = e
			ni.classKey = e.key
			c, ok := byKey[ni.classKey]
			if !ok {
				c = &nodeClass{key: ni.classKey, index: len(s.nodeClasses) + 1}
				byKey[ni.classKey] = c
				s.nodeClasses = append(s.nodeClasses, c)
			}
			ni.classIndex = c.index
			c.members = append(c.members, ni)
		}
		memo.entries = next
		memo.mu.Unlock()
		s.classesFingerprint = classesFingerprint(s.classes)
	})
	return s.nodeClasses
}

// classMemo remembers the class key of each node object (see nodeClassList).
type classMemo struct {
	mu      sync.Mutex
	entries map[*corev1.Node]memoEntry
}

type memoEntry struct {
	devices []*resourceapi.Device
	key     string
}

func devicePointers(refs []deviceRef) []*resourceapi.Device {
	out := make([]*resourceapi.Device, len(refs))
	for i := range refs {
		out[i] = refs[i].device
	}
	return out
}

func sameDevices(a []*resourceapi.Device, b []deviceRef) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i].device {
			return false
		}
	}
	return true
}

func classKey(h hash.Hash, ni *nodeInfo) string {
	k := keyWriter{buf: make([]byte, 0, 4096)}
	n := ni.node
	k.str("labels")
	for _, name := range k.sorted(maps.Keys(n.Labels)) {
		if name != hostnameLabel {
			k.str(name, n.Labels[name])
		}
	}
	k.str("taints")
	for _, t := range n.Spec.Taints {
		k.str(t.Key, t.Value, string(t.Effect))
	}
	k.str("unschedulable", strconv.FormatBool(n.Spec.Unschedulable))
	k.str("allocatable")
	for _, r := range slices.Sorted(maps.Keys(n.Status.Allocatable)) {
		if translate.IsExtendedResource(r) {
			q := n.Status.Allocatable[r]
			k.str(string(r), q.String())
		}
	}
	k.str("devices")
	devs := slices.Clone(ni.devices)
	slices.SortFunc(devs, func(a, b deviceRef) int {
		return cmp.Or(cmp.Compare(a.driver, b.driver), cmp.Compare(a.device.Name, b.device.Name))
	})
	ids := map[string]int{}
	for _, d := range devs {
		k.device(d, ids)
	}
	h.Reset()
	h.Write(k.buf)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// keyWriter appends the parts of a class key to one buffer (a class key is
// computed for every node of a fleet: few allocations per attribute).
type keyWriter struct {
	buf     []byte
	scratch []string
}

func (k *keyWriter) str(parts ...string) {
	for _, p := range parts {
		k.buf = append(k.buf, p...)
		k.buf = append(k.buf, 0)
	}
}

// sorted collects names into the writer's scratch slice, sorted.
func (k *keyWriter) sorted(names func(func(string) bool)) []string {
	k.scratch = k.scratch[:0]
	for n := range names {
		k.scratch = append(k.scratch, n)
	}
	slices.Sort(k.scratch)
	return k.scratch
}

func (k *keyWriter) device(d deviceRef, ids map[string]int) {
	dev := d.device
	k.str("device", d.driver)
	k.str("unknown", strconv.Itoa(len(d.unknown)))
	k.str(d.unknown...)
	names := make([]resourceapi.QualifiedName, 0, len(dev.Attributes))
	for name := range dev.Attributes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		a := dev.Attributes[name]
		k.buf = append(k.buf, name...)
		k.buf = append(k.buf, 0)
		if isIdentity(name) {
			v := attributeString(a)
			id, ok := ids[v]
			if !ok {
				id = len(ids)
				ids[v] = id
			}
			k.buf = append(k.buf, '#')
			k.buf = strconv.AppendInt(k.buf, int64(id), 10)
			// Its type, and whether CEL can read it: a value CEL cannot
			// convert fails every selector on the device, whatever it reads.
			k.buf = append(k.buf, v[0])
			if !convertible(a) {
				k.buf = append(k.buf, '!')
			}
		} else {
			k.buf = appendAttribute(k.buf, a)
		}
		k.buf = append(k.buf, 0)
	}
	names = names[:0]
	for name := range dev.Capacity {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		c := dev.Capacity[name]
		k.str("c", string(name), c.Value.String())
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
			k.str(name, v.String())
		}
	}
	if dev.BindsToNode != nil && *dev.BindsToNode {
		k.str("binds")
	}
	k.str(dev.BindingConditions...)
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
