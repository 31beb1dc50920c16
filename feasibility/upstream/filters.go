package upstream

import (
	"fmt"
	"maps"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// The node filters of kube-scheduler that feasibility applies before the
// allocator runs, and the requests a pod counts against a node
// (NodeResourcesFit).

// NodeRejects mirrors kube-scheduler's NodeUnschedulable, NodeAffinity and TaintToleration
// filters and returns their message, or "" when the pod may run on the node.
func NodeRejects(required nodeaffinity.RequiredNodeAffinity, pod *corev1.Pod, node *corev1.Node) string {
	if node.Spec.Unschedulable {
		tolerated := slices.ContainsFunc(pod.Spec.Tolerations, func(t corev1.Toleration) bool {
			return t.ToleratesTaint(logr.Discard(), &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}, false)
		})
		if !tolerated {
			return "were unschedulable"
		}
	}
	// "Ignore parsing errors for backwards compatibility."
	if ok, _ := required.Match(node); !ok {
		return "didn't match Pod's node affinity/selector"
	}
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	if untolerated {
		return fmt.Sprintf("had untolerated taint {%s: %s}", taint.Key, taint.Value)
	}
	return ""
}

// PodRequests is what the pod asks of a node, without zero entries. A
// container's limit without a request counts as its request, as the API's
// defaulting makes it (pods read from manifests are not defaulted yet).
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	all := resourcehelper.PodRequests(WithDefaultRequests(pod), resourcehelper.PodResourcesOptions{})
	for n, q := range all {
		if q.IsZero() {
			delete(all, n)
		}
	}
	return all
}

// WithDefaultRequests returns the pod with each container's limits copied
// into its requests where a request is missing (pkg/apis/core/v1 defaulting:
// "if requests are omitted for a container, they default to the limits").
func WithDefaultRequests(pod *corev1.Pod) *corev1.Pod {
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
