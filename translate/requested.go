package translate

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DevicesRequested counts the devices a pod asks for, per extended resource
// the policy maps as a device count (not capacity or companion rules), as
// the pod's effective request: the containers and restartable init
// containers (sidecars) add up, and an init container that runs alone asks
// for its own count, so the pod needs the larger of the two. This mirrors
// the scheduler's effective request ("the highest of any particular
// resource request or limit defined on all init containers" against "the
// sum of all app containers", Kubernetes docs, Init Containers: Resource
// sharing within containers, with sidecars counted with the app
// containers). A container's quantity is its limit, else its request;
// fractional or unreadable quantities round down. Resources with no device
// asked for are absent; nil when there is none.
//
// It reads the pod as submitted, whatever translation decides, so a report
// can say how many devices a pod that stays legacy holds on the device
// plugin.
func (p *Policy) DevicesRequested(pod *corev1.Pod) map[corev1.ResourceName]int64 {
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
	mapped := func(c *corev1.Container, yield func(corev1.ResourceName, int64)) {
		seen := map[corev1.ResourceName]bool{}
		for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			for n := range list {
				if seen[n] {
					continue
				}
				seen[n] = true
				if rule, _, ok := p.resourceRule(string(n)); ok && rule.Capacity == "" && len(rule.OnlyWith) == 0 {
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
			mapped(c, func(n corev1.ResourceName, v int64) { sidecars[n] += v; sum[n] += v })
			continue
		}
		mapped(c, func(n corev1.ResourceName, v int64) { initMax[n] = max(initMax[n], v+sidecars[n]) })
	}
	for i := range pod.Spec.Containers {
		mapped(&pod.Spec.Containers[i], func(n corev1.ResourceName, v int64) { sum[n] += v })
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
