package feasibility

// The devices each node of a new snapshot sees (NewSnapshot's largest
// stage): the devices of each pool's newest generation, on the node their
// slice or the device itself names, or on every node their node selector
// matches, as the allocator's GatherPools and NodeMatches place them.

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	draapi "k8s.io/dynamic-resource-allocation/api"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/feasibility/identity"
	"github.com/claimbridge/claimbridge/feasibility/signature"
	"github.com/claimbridge/claimbridge/feasibility/upstream"
)

// sliceAt is where a slice's devices go.
type sliceAt struct {
	keep bool // of its pool's newest generation
	only bool // the only slice of that generation of its pool
	node int  // the node it is published for, -1 for none known
}

// deviceIndexer holds what the stages of indexDevices share.
type deviceIndexer struct {
	s      *Snapshot
	byName map[string]int
	// features are the snapshot's as structured.NodeMatches reads them.
	features Features
	// findLists: the devices are read for list-type attributes as they are
	// indexed, each once; lists: one has some.
	findLists, lists bool
	// listMaps remembers, per attribute map, whether it holds a list-type
	// value: the inventory's devices share their maps (package identity).
	listMaps map[uintptr]bool
	at       []sliceAt
	// seen, names and onlyCounted count the distinct devices some node
	// sees (visible); slots numbers the devices.
	seen        sets.Set[structured.DeviceID]
	names       map[string]bool
	onlyCounted int
	slots       int
	// Device names repeat from node to node ("gpu-0"): each is made
	// unique once per snapshot rather than looked up in unique's map.
	uniqueNames map[string]draapi.UniqueString
}

// indexDevices lists, per node, the devices it sees, counts the distinct
// devices some node sees, and makes the snapshot's selector memo with a
// slot per device.
func (s *Snapshot) indexDevices(byName map[string]int) {
	// kube-apiserver drops list-type attribute values unless its
	// DRAListTypeAttributes gate is on (dropDisableDRAListTypeAttributesFields,
	// pkg/registry/resource/resourceslice/strategy.go), and drivers publish
	// them only when told the cluster has it (dra-driver-nvidia-gpu v0.5's
	// numaNode): a fleet that publishes lists runs the allocator with the
	// gate, whose matchAttribute compares values as sets (a scalar is a set
	// of one). Without it a list-valued attribute matches no second device,
	// and every alignment on it would look impossible. The devices are read
	// for lists as they are indexed below (findLists), each once.
	x := &deviceIndexer{
		s: s, byName: byName, features: s.features, findLists: !s.features.ListTypeAttributes,
		seen: sets.New[structured.DeviceID](), names: map[string]bool{}, uniqueNames: map[string]draapi.UniqueString{},
	}
	counts, total, byLabel := x.placeSlices()
	if x.findLists && byLabel {
		// NodeMatches reads the features: lists are looked for first.
		x.features.ListTypeAttributes = upstream.PublishesListAttributes(s.slices)
		s.features.ListTypeAttributes = x.features.ListTypeAttributes
		x.findLists = false
	}
	s.reserveDevices(counts, total)
	for si, sl := range s.slices {
		x.addSlice(si, sl)
	}
	s.devices = x.seen.Len() + x.onlyCounted
	if x.lists {
		s.features.ListTypeAttributes = true
	}
	s.selectors = signature.NewMemo(x.slots)
}

// placeSlices tells, per slice, whether it is of its pool's newest
// generation, the only slice of it, and the node it is published for, and
// counts the devices of the slices published for each node (total: for
// all of them); byLabel says some device is matched to nodes by
// NodeMatches. Only the newest generation of each pool counts
// (structured.GatherPools). The pools are gathered once, and each slice's
// pool and node looked up once: the maps hold an entry per node's pool,
// and at 5,000 nodes every lookup is a cache miss.
func (x *deviceIndexer) placeSlices() (counts []int, total int, byLabel bool) {
	s := x.s
	type poolGen struct {
		generation int64
		slices     int // of that generation
	}
	newest := make(map[[2]string]poolGen, len(s.slices))
	for _, sl := range s.slices {
		k := [2]string{sl.Spec.Driver, sl.Spec.Pool.Name}
		p := newest[k]
		switch g := sl.Spec.Pool.Generation; {
		case g > p.generation:
			p = poolGen{generation: g, slices: 1}
		case g == p.generation:
			p.slices++
		}
		newest[k] = p
	}
	x.at = make([]sliceAt, len(s.slices))
	counts = make([]int, len(s.nodes))
	for i, sl := range s.slices {
		p := newest[[2]string{sl.Spec.Driver, sl.Spec.Pool.Name}]
		x.at[i] = sliceAt{keep: sl.Spec.Pool.Generation == p.generation, only: p.slices == 1, node: -1}
		if !x.at[i].keep || len(sl.Spec.Devices) == 0 {
			continue
		}
		nodeName := ptr.Deref(sl.Spec.NodeName, "")
		if ptr.Deref(sl.Spec.PerDeviceNodeSelection, false) || nodeName == "" {
			byLabel = true
			continue
		}
		if n, ok := x.byName[nodeName]; ok {
			x.at[i].node = n
			counts[n] += len(sl.Spec.Devices)
			total += len(sl.Spec.Devices)
		}
	}
	return counts, total, byLabel
}

// reserveDevices gives each node room for the devices of the slices
// published for it: they go into one array, each node's part of it sized
// for them, so that they are neither appended one by one nor copied as a
// node's list grows; a device a node selects by label is appended past its
// part.
func (s *Snapshot) reserveDevices(counts []int, total int) {
	refs := make([]deviceRef, total)
	for i, n := range counts {
		if n > 0 {
			s.nodes[i].devices = refs[:0:n]
			refs = refs[n:]
		}
	}
}

// addSlice adds the devices of the slice at position si to the nodes that
// see them; a slice of an older generation is only read for lists.
func (x *deviceIndexer) addSlice(si int, sl *resourceapi.ResourceSlice) {
	s := x.s
	at := x.at[si]
	if !at.keep {
		// A slice of an older generation counts for lists too.
		x.lists = x.lists || x.findLists && upstream.PublishesListAttributes(s.slices[si:si+1])
		return
	}
	if at.only {
		clear(x.names)
	}
	perDevice := ptr.Deref(sl.Spec.PerDeviceNodeSelection, false)
	unknown := unknownAttributes(sl)
	s.unknowns = s.unknowns || len(unknown) > 0 && len(sl.Spec.Devices) > 0
	// The slice's driver and pool made unique once, not per device
	// (structured.MakeDeviceID makes all three).
	driverID, poolID := draapi.MakeUniqueString(sl.Spec.Driver), draapi.MakeUniqueString(sl.Spec.Pool.Name)
	ids := identity.Of(sl)
	s.split = s.split || ids != nil
	for di := range sl.Spec.Devices {
		d := &sl.Spec.Devices[di]
		x.lists = x.lists || x.findLists && x.listAttributes(d, ids.At(di))
		nameID, ok := x.uniqueNames[d.Name]
		if !ok {
			nameID = draapi.MakeUniqueString(d.Name)
			x.uniqueNames[d.Name] = nameID
		}
		id := structured.DeviceID{Driver: driverID, Pool: poolID, Device: nameID}
		ref := deviceRef{
			driver:    sl.Spec.Driver,
			pool:      sl.Spec.Pool.Name,
			device:    d,
			id:        id,
			allocated: s.allocated.AllocatedDevices.Has(id),
			multi:     ptr.Deref(d.AllowMultipleAllocations, false),
			unknown:   unknown,
			ids:       ids.At(di),
			slot:      x.slots,
		}
		x.slots++
		if n := at.node; n >= 0 {
			s.nodes[n].devices = append(s.nodes[n].devices, ref)
			x.visible(at.only, id, d.Name)
			continue
		}
		nodeName, allNodes, sel := ptr.Deref(sl.Spec.NodeName, ""), ptr.Deref(sl.Spec.AllNodes, false), sl.Spec.NodeSelector
		if perDevice {
			nodeName, allNodes, sel = ptr.Deref(d.NodeName, ""), ptr.Deref(d.AllNodes, false), d.NodeSelector
		}
		x.addSelected(ref, at.only, nodeName, allNodes, sel)
	}
}

// listAttributes is upstream.ListAttributes, each shared attribute map
// read once.
func (x *deviceIndexer) listAttributes(d *resourceapi.Device, ids []identity.Attribute) bool {
	if len(d.Attributes) > 0 {
		m := reflect.ValueOf(d.Attributes).Pointer() // the maps are alive: no two share it
		has, ok := x.listMaps[m]
		if !ok {
			has = upstream.ListAttributes(&resourceapi.Device{Attributes: d.Attributes}, nil)
			if x.listMaps == nil {
				x.listMaps = map[uintptr]bool{}
			}
			x.listMaps[m] = has
		}
		if has {
			return true
		}
	}
	return upstream.ListAttributes(&resourceapi.Device{}, ids)
}

// addSelected adds a device its slice does not publish for one node to
// the node it names, or to every node its selection matches. An invalid
// selector cannot be evaluated here: the device is kept (conservative).
func (x *deviceIndexer) addSelected(ref deviceRef, only bool, nodeName string, allNodes bool, sel *corev1.NodeSelector) {
	s := x.s
	if nodeName != "" {
		if i, ok := x.byName[nodeName]; ok {
			s.nodes[i].devices = append(s.nodes[i].devices, ref)
			x.visible(only, ref.id, ref.device.Name)
		}
		return
	}
	for _, ni := range s.nodes {
		ok, err := structured.NodeMatches(x.features, ni.node, nodeName, allNodes, sel)
		if ok || err != nil {
			ni.devices = append(ni.devices, ref)
			x.visible(only, ref.id, ref.device.Name)
		}
	}
}

// visible counts a device some node sees. A device of the only slice of
// its pool (only) is another device unless its slice names it twice
// (names, per slice); only the devices of pools of several slices go into
// one set of the whole fleet.
func (x *deviceIndexer) visible(only bool, id structured.DeviceID, name string) {
	switch {
	case !only:
		x.seen.Insert(id)
	case !x.names[name]:
		x.names[name] = true
		x.onlyCounted++
	}
}
