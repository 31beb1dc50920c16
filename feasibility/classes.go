package feasibility

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/feasibility/signature"
)

// Node classes: the nodes that publish DRA devices, grouped by their class
// key (signature.KeyWriter.ClassKey), everything a placement answer depends
// on — the devices (their attributes, capacities,
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
		// One writer for every node: its buffer and scratch lists are
		// reused, so a class key costs the key and little else.
		k := signature.NewKeyWriter()
		var devs []signature.Device
		memo.mu.Lock()
		next := make(map[*corev1.Node]memoEntry, len(s.nodes))
		// The memo's device lists of the nodes whose keys are computed
		// here, cut from one array.
		var ptrs []*resourceapi.Device
		for _, ni := range s.nodes {
			if len(ni.devices) == 0 {
				continue
			}
			e, ok := memo.entries[ni.node]
			if !ok || !sameDevices(e.devices, ni.devices) {
				if len(ptrs) < len(ni.devices) {
					ptrs = make([]*resourceapi.Device, max(len(ni.devices), 64*len(ni.devices)))
				}
				devices := ptrs[:len(ni.devices):len(ni.devices)]
				ptrs = ptrs[len(ni.devices):]
				for i := range ni.devices {
					devices[i] = ni.devices[i].device
				}
				devs = devs[:0]
				for i := range ni.devices {
					devs = append(devs, ni.devices[i].sig())
				}
				e = memoEntry{devices: devices, key: k.ClassKey(ni.node, devs)}
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
		s.classesFingerprint = signature.ClassesFingerprint(s.classes)
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
