package podfacts

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// IsExtendedResource is the API's rule for extended resource names, the one
// every part of claimbridge uses (k8s.io/kubernetes/pkg/apis/core/helper
// IsExtendedResourceName): a domain-prefixed name ("vendor.com/device")
// that is neither native — no "/" (cpu, memory, hugepages-2Mi), or in the
// kubernetes.io domain (IsPrefixedNativeResource: the name contains
// "kubernetes.io/") — nor a quota name ("requests." …). The API also
// requires "requests.<name>" to be a qualified name; kube-apiserver refused
// a pod whose name is not, so admission never sees one, and the CLI's
// manifests would be refused the same way when applied.
func IsExtendedResource(n corev1.ResourceName) bool {
	s := string(n)
	return strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/") && !strings.HasPrefix(s, "requests.")
}

// EffectiveRequests is what the pod asks of a node, as kube-scheduler's
// NodeResourcesFit counts it (k8s.io/component-helpers/resource
// PodRequests: init containers, sidecars and overhead included), without
// zero entries. A container's limit without a request counts as its
// request, as the API's defaulting makes it (pods read from manifests are
// not defaulted yet).
func EffectiveRequests(pod *corev1.Pod) corev1.ResourceList {
	all := resourcehelper.PodRequests(withDefaultRequests(pod), resourcehelper.PodResourcesOptions{})
	for n, q := range all {
		if q.IsZero() {
			delete(all, n)
		}
	}
	return all
}

// ExtendedRequests is the pod's effective request of each extended
// resource it asks for: the extended resources of [EffectiveRequests];
// empty, not nil, for a pod that asks for none.
func ExtendedRequests(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, q := range EffectiveRequests(pod) {
		if IsExtendedResource(n) {
			out[n] = q
		}
	}
	return out
}

// ExtendedAsked lists the extended resources the pod asks for, sorted: a
// limit or a request of a container or init container that is not zero.
// Nothing is defaulted and nothing summed; nil when there is none.
func ExtendedAsked(pod *corev1.Pod) []corev1.ResourceName {
	return extendedOf(pod, false)
}

// ExtendedNamed lists the extended resources the pod names in a limit or a
// request of a container or init container, whatever the quantity, sorted;
// nil when there is none.
func ExtendedNamed(pod *corev1.Pod) []corev1.ResourceName {
	return extendedOf(pod, true)
}

// NamesExtended reports whether some container or init container of the
// pod names an extended resource in its limits or requests, whatever the
// quantity: [ExtendedNamed] is not empty, found without a list.
func NamesExtended(pod *corev1.Pod) bool {
	has := func(cs []corev1.Container) bool {
		return slices.ContainsFunc(cs, func(c corev1.Container) bool {
			for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
				for n := range l {
					if IsExtendedResource(n) {
						return true
					}
				}
			}
			return false
		})
	}
	return has(pod.Spec.Containers) || has(pod.Spec.InitContainers)
}

// extendedOf lists, sorted, the extended resources of the pod's limits and
// requests, those of a zero quantity only when zero is true.
func extendedOf(pod *corev1.Pod, zero bool) []corev1.ResourceName {
	seen := map[corev1.ResourceName]bool{}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, rl := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
				for n, q := range rl {
					if IsExtendedResource(n) && (zero || !q.IsZero()) {
						seen[n] = true
					}
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// ResourceNames lists every resource a container or init container of the
// pod names in a limit or a request, native ones included, whatever the
// quantity, sorted, each once.
func ResourceNames(pod *corev1.Pod) []corev1.ResourceName {
	var names []corev1.ResourceName
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			names = appendResourceNames(names, &list[i])
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// ContainerResourceNames lists the resources a container names in a limit
// or a request, sorted, each once.
func ContainerResourceNames(c *corev1.Container) []corev1.ResourceName {
	names := appendResourceNames(make([]corev1.ResourceName, 0, len(c.Resources.Limits)+len(c.Resources.Requests)), c)
	slices.Sort(names)
	return slices.Compact(names)
}

// appendResourceNames appends the names of a container's limits and
// requests, a name in both twice: a list compacted once sorted costs
// less than the set it replaces.
func appendResourceNames(names []corev1.ResourceName, c *corev1.Container) []corev1.ResourceName {
	for n := range c.Resources.Limits {
		names = append(names, n)
	}
	for n := range c.Resources.Requests {
		names = append(names, n)
	}
	return names
}

// DeviceCounts counts the devices the pod asks for, per resource that
// counted accepts (a resource it names in a limit or a request), as the
// pod's effective request: the app containers and restartable init
// containers (sidecars) add up, and an init container that runs alone asks
// for its own count next to the sidecars started before it, so the pod
// needs the larger of the two. This mirrors the scheduler's effective
// request ("the highest of any particular resource request or limit
// defined on all init containers" against "the sum of all app containers",
// Kubernetes docs, Init Containers: Resource sharing within containers,
// with sidecars counted with the app containers). A container's quantity
// is its limit, else its request, as a whole number (a fraction rounds up,
// resource.Quantity.Value; below zero counts as zero). Resources with no
// device asked for are absent; nil when there is none.
func DeviceCounts(pod *corev1.Pod, counted func(corev1.ResourceName) bool) map[corev1.ResourceName]int64 {
	if pod == nil {
		return nil
	}
	count := func(c *corev1.Container, n corev1.ResourceName) int64 {
		q, ok := c.Resources.Limits[n]
		if !ok {
			q, ok = c.Resources.Requests[n]
		}
		if !ok {
			return 0
		}
		return max(0, q.Value())
	}
	each := func(c *corev1.Container, yield func(corev1.ResourceName, int64)) {
		seen := map[corev1.ResourceName]bool{}
		for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			for n := range list {
				if seen[n] {
					continue
				}
				seen[n] = true
				if counted(n) {
					yield(n, count(c, n))
				}
			}
		}
	}
	sum := map[corev1.ResourceName]int64{}
	initMax := map[corev1.ResourceName]int64{}
	// Init containers run in order: a non-restartable one runs next to the
	// sidecars started before it.
	sidecars := map[corev1.ResourceName]int64{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			each(c, func(n corev1.ResourceName, v int64) { sidecars[n] += v; sum[n] += v })
			continue
		}
		each(c, func(n corev1.ResourceName, v int64) { initMax[n] = max(initMax[n], v+sidecars[n]) })
	}
	for i := range pod.Spec.Containers {
		each(&pod.Spec.Containers[i], func(n corev1.ResourceName, v int64) { sum[n] += v })
	}
	var out map[corev1.ResourceName]int64
	for _, m := range []map[corev1.ResourceName]int64{sum, initMax} {
		for n, v := range m {
			if v > 0 && v > out[n] {
				if out == nil {
					out = map[corev1.ResourceName]int64{}
				}
				out[n] = v
			}
		}
	}
	return out
}

// withDefaultRequests returns the pod with each container's limits copied
// into its requests where a request is missing (pkg/apis/core/v1 defaulting:
// "if requests are omitted for a container, they default to the limits").
func withDefaultRequests(pod *corev1.Pod) *corev1.Pod {
	missing := func(list []corev1.Container) bool {
		for _, c := range list {
			for n := range c.Resources.Limits {
				if _, ok := c.Resources.Requests[n]; !ok {
					return true
				}
			}
		}
		return false
	}
	if !missing(pod.Spec.Containers) && !missing(pod.Spec.InitContainers) {
		return pod
	}
	// A shallow copy with copied containers: the rest of the pod is read only.
	out := *pod
	fill := func(list []corev1.Container) []corev1.Container {
		list = slices.Clone(list)
		for i := range list {
			r := &list[i].Resources
			reqs := maps.Clone(r.Requests)
			for n, q := range r.Limits {
				if _, ok := reqs[n]; !ok {
					if reqs == nil {
						reqs = corev1.ResourceList{}
					}
					reqs[n] = q
				}
			}
			r.Requests = reqs
		}
		return list
	}
	out.Spec.Containers = fill(pod.Spec.Containers)
	out.Spec.InitContainers = fill(pod.Spec.InitContainers)
	return &out
}
