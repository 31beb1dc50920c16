package upstream

import (
	"cmp"
	"slices"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/feasibility/identity"
)

// The ResourceSlices as kube-scheduler reads them: with DeviceTaintRules
// applied, with list-type attributes only where kube-apiserver keeps them,
// and those the allocator gathers for one node.

// ApplyTaintRules appends each rule's taint to the devices it selects, exactly as
// k8s.io/dynamic-resource-allocation/resourceslice/tracker does ("No selector matches no
// devices"; driver, pool and device must match when set). Rules apply in name order.
func ApplyTaintRules(in []*resourceapi.ResourceSlice, rules []*resourceapi.DeviceTaintRule) []*resourceapi.ResourceSlice {
	rules = slices.Clone(rules)
	slices.SortFunc(rules, func(a, b *resourceapi.DeviceTaintRule) int { return cmp.Compare(a.Name, b.Name) })
	out := make([]*resourceapi.ResourceSlice, 0, len(in))
	for _, slice := range in {
		patched := slice
		for _, rule := range rules {
			sel := rule.Spec.DeviceSelector
			if sel == nil {
				continue
			}
			if sel.Driver != nil && *sel.Driver != slice.Spec.Driver {
				continue
			}
			if sel.Pool != nil && *sel.Pool != slice.Spec.Pool.Name {
				continue
			}
			for di, d := range slice.Spec.Devices {
				if sel.Device != nil && *sel.Device != d.Name {
					continue
				}
				if patched == slice {
					patched = slice.DeepCopy()
					identity.Copied(slice, patched)
				}
				patched.Spec.Devices[di].Taints = append(patched.Spec.Devices[di].Taints, rule.Spec.Taint)
			}
		}
		out = append(out, patched)
	}
	return out
}

// PublishesListAttributes reports whether a device of the slices has a
// list-type attribute.
func PublishesListAttributes(slices []*resourceapi.ResourceSlice) bool {
	for _, sl := range slices {
		ids := identity.Of(sl)
		for i := range sl.Spec.Devices {
			if ListAttributes(&sl.Spec.Devices[i], ids.At(i)) {
				return true
			}
		}
	}
	return false
}

// ListAttributes reports whether the device has a list-type attribute, in
// its map or among the identities it leaves out (ids).
func ListAttributes(d *resourceapi.Device, ids []identity.Attribute) bool {
	for _, a := range d.Attributes {
		if isList(a) {
			return true
		}
	}
	for _, a := range ids {
		if isList(a.Value) {
			return true
		}
	}
	return false
}

func isList(a resourceapi.DeviceAttribute) bool {
	return a.IntValues != nil || a.StringValues != nil || a.BoolValues != nil || a.VersionValues != nil
}

// SliceIndex gives, per node, the slices an allocator needs to answer for
// that node alone as it does over all slices: every slice of each pool
// that one of the node's own slices or a slice not bound to one node
// belongs to. The upstream allocator reads the slices of the node and those
// not bound to a node (GatherPools), and the other slices of their pools
// only; indexing all of them per snapshot (structured.NewAllocator) costs
// time proportional to the fleet. Built on the first ForNode and kept
// (feasibility holds one per fleet snapshot); the zero value is ready to
// use.
type SliceIndex struct {
	once   sync.Once
	byPool map[[2]string][]*resourceapi.ResourceSlice
	byNode map[string][][2]string // the pools of the node's own slices
	shared [][2]string            // the pools of the slices bound to no one node
}

// ForNode returns the slices of all the allocator reads to answer for the
// node: x must be used with one list of slices only.
func (x *SliceIndex) ForNode(all []*resourceapi.ResourceSlice, node string) []*resourceapi.ResourceSlice {
	x.once.Do(func() {
		x.byPool = map[[2]string][]*resourceapi.ResourceSlice{}
		x.byNode = map[string][][2]string{}
		seen := map[[2]string]bool{}
		for _, slice := range all {
			k := [2]string{slice.Spec.Driver, slice.Spec.Pool.Name}
			x.byPool[k] = append(x.byPool[k], slice)
			if name := ptr.Deref(slice.Spec.NodeName, ""); name != "" {
				if l := x.byNode[name]; !slices.Contains(l, k) {
					x.byNode[name] = append(l, k)
				}
			} else if !seen[k] {
				seen[k] = true
				x.shared = append(x.shared, k)
			}
		}
	})
	var out []*resourceapi.ResourceSlice
	for _, k := range x.byNode[node] {
		if !slices.Contains(x.shared, k) {
			out = append(out, x.byPool[k]...)
		}
	}
	for _, k := range x.shared {
		out = append(out, x.byPool[k]...)
	}
	return out
}
