package legacy

// A node's devices in a few words, for explanations: the hardware a
// person recognises a node by, as a device plugin's node lists it.

import (
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// Describe names a device by its product (productName, model, accelerator
// or pciDevice, in the driver's domain or none), its MIG profile and its
// topology; a device with none of them is "<driver> device".
func Describe(driver string, d *resourceapi.Device) string {
	get := func(id string) string {
		for _, name := range []resourceapi.QualifiedName{resourceapi.QualifiedName(id), resourceapi.QualifiedName(driver + "/" + id)} {
			if a, ok := d.Attributes[name]; ok && a.StringValue != nil {
				return *a.StringValue
			}
		}
		return ""
	}
	name := ""
	for _, id := range []string{"productName", "model", "accelerator", "pciDevice"} {
		if v := get(id); v != "" {
			name = v
			break
		}
	}
	if name == "" {
		name = driver + " device"
	}
	if p := get("profile"); p != "" {
		name = "MIG " + p
	}
	if t := get("topology"); t != "" {
		name += " " + t
	}
	return name
}

// Hardware counts the descriptions of a node's devices ([Describe]) in
// the order they first appear, whole devices before partitions (MIG
// slices): "8× NVIDIA H100 80GB HBM3, 8× dra.net NIC".
func Hardware(descriptions []string) string {
	counts := map[string]int{}
	var order []string
	for _, desc := range descriptions {
		if counts[desc] == 0 {
			order = append(order, desc)
		}
		counts[desc]++
	}
	mig := func(s string) int {
		if strings.HasPrefix(s, "MIG ") {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(order, func(a, b string) int { return mig(a) - mig(b) })
	parts := make([]string, 0, len(order))
	for _, desc := range order {
		parts = append(parts, fmt.Sprintf("%d× %s", counts[desc], desc))
	}
	return strings.Join(parts, ", ")
}
