package upstream

import (
	"cmp"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
)

// The ResourceSlices as kube-scheduler reads them: with DeviceTaintRules
// applied, and with list-type attributes only where kube-apiserver keeps
// them.

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
		for i := range sl.Spec.Devices {
			if ListAttributes(&sl.Spec.Devices[i]) {
				return true
			}
		}
	}
	return false
}

// ListAttributes reports whether the device has a list-type attribute.
func ListAttributes(d *resourceapi.Device) bool {
	for _, a := range d.Attributes {
		if a.IntValues != nil || a.StringValues != nil || a.BoolValues != nil || a.VersionValues != nil {
			return true
		}
	}
	return false
}
