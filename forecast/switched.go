package forecast

// The extended resources the switch replaces, what a pod asks of them, the
// pod as an extendedResourceName class serves it, and why it breaks.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

func asksAny(asks []corev1.ResourceName, switched map[corev1.ResourceName]bool) bool {
	return slices.ContainsFunc(asks, func(n corev1.ResourceName) bool { return switched[n] })
}

// names lists the resources the switch replaces.
func names(asks []corev1.ResourceName, switched map[corev1.ResourceName]bool) string {
	var out []string
	for _, n := range asks {
		if switched[n] {
			out = append(out, string(n))
		}
	}
	return strings.Join(out, ", ")
}

// switchedResources are the extended resources the switch takes from at
// least one node.
func switchedResources(fc *Result) map[corev1.ResourceName]bool {
	out := map[corev1.ResourceName]bool{}
	for _, n := range fc.Nodes {
		if !n.Switched {
			continue
		}
		for _, d := range n.Drivers {
			for _, r := range d.Resources {
				out[r] = true
			}
		}
	}
	return out
}

// classFor is the DeviceClass that maps the resource (extendedResourceName).
func classFor(res corev1.ResourceName, classes []*resourceapi.DeviceClass) *resourceapi.DeviceClass {
	for _, c := range classes {
		if c.Spec.ExtendedResourceName != nil && *c.Spec.ExtendedResourceName == string(res) {
			return c
		}
	}
	return nil
}

// classesMap: a class maps every switched resource the pod asks for.
func classesMap(asks []corev1.ResourceName, switched map[corev1.ResourceName]bool, classes []*resourceapi.DeviceClass) bool {
	for _, n := range asks {
		if switched[n] && classFor(n, classes) == nil {
			return false
		}
	}
	return true
}

// byClass is the pod as the scheduler serves it through extendedResourceName
// classes (KEP-5004): its switched resources become one request each of
// the class that maps it, for the pod's effective count; the pod checked
// asks for them no more.
func byClass(pod *corev1.Pod, asks []corev1.ResourceName, switched map[corev1.ResourceName]bool, classes []*resourceapi.DeviceClass) (*corev1.Pod, []*resourceapi.ResourceClaimSpec, string) {
	out := pod.DeepCopy()
	// The pod's effective count, as the scheduler counts it: the app
	// containers' (and restartable sidecars') sum, or a plain init
	// container's own when larger.
	counts := map[corev1.ResourceName]int64{}
	initMax := map[corev1.ResourceName]int64{}
	for _, n := range asks {
		if !switched[n] {
			continue
		}
		for i := range out.Spec.InitContainers {
			c := &out.Spec.InitContainers[i]
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				counts[n] += quantityOf(c.Resources, n)
			} else {
				initMax[n] = max(initMax[n], quantityOf(c.Resources, n))
			}
			delete(c.Resources.Limits, n)
			delete(c.Resources.Requests, n)
		}
		for i := range out.Spec.Containers {
			c := &out.Spec.Containers[i]
			counts[n] += quantityOf(c.Resources, n)
			delete(c.Resources.Limits, n)
			delete(c.Resources.Requests, n)
		}
		counts[n] = max(counts[n], initMax[n])
	}
	spec := &resourceapi.ResourceClaimSpec{}
	var used []string
	for _, n := range slices.Sorted(maps.Keys(counts)) {
		c := classFor(n, classes)
		spec.Devices.Requests = append(spec.Devices.Requests, resourceapi.DeviceRequest{
			Name:    fmt.Sprintf("r%d", len(spec.Devices.Requests)),
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: c.Name, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: counts[n]},
		})
		used = append(used, c.Name)
	}
	return out, []*resourceapi.ResourceClaimSpec{spec}, strings.Join(used, ", ")
}

// quantityOf is the container's limit of the resource, else its request.
func quantityOf(r corev1.ResourceRequirements, n corev1.ResourceName) int64 {
	if q, ok := r.Limits[n]; ok {
		return q.Value()
	}
	if q, ok := r.Requests[n]; ok {
		return q.Value()
	}
	return 0
}

// whyBreaks says what a pod that breaks lacks after the switch: the
// resources no node offers any more, or the nodes that still offer them
// and do not take it.
func whyBreaks(asks []corev1.ResourceName, switched map[corev1.ResourceName]bool, nodes []*corev1.Node) string {
	var gone, left []string
	offering := map[string]bool{}
	for _, n := range asks {
		if !switched[n] {
			continue
		}
		found := false
		for _, node := range nodes {
			if q, ok := node.Status.Allocatable[n]; ok && !q.IsZero() {
				found = true
				offering[node.Name] = true
			}
		}
		if found {
			left = append(left, string(n))
		} else {
			gone = append(gone, string(n))
		}
	}
	if len(gone) > 0 {
		return "after the switch no node offers " + strings.Join(gone, ", ")
	}
	names := slices.Sorted(maps.Keys(offering))
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("%d more", len(offering)-3))
	}
	verb := "offers"
	if len(offering) > 1 {
		verb = "offer"
	}
	return fmt.Sprintf("after the switch only %s still %s %s, and the pod cannot run there (node selector, affinity, taints or nodeName)",
		strings.Join(names, ", "), verb, strings.Join(left, ", "))
}
