package upstream

import (
	"fmt"
	"maps"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// The node filters of kube-scheduler that feasibility applies before the
// allocator runs, and the requests a pod counts against a node and its
// pods' (NodeResourcesFit).

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

// Usage is what the pods bound to a node request, as NodeResourcesFit
// counts it against the node's allocatable: their requests summed (Used)
// and their number (Pods). Known is false when the pods are not known:
// then a pod's requests are compared with allocatable alone.
type Usage struct {
	Used  corev1.ResourceList
	Pods  int64
	Known bool
}

// Requests are a pod's requests that Short compares, in name order:
// worked out once for a check of every node.
type Requests struct {
	names    []corev1.ResourceName
	requests corev1.ResourceList
}

// CompareRequests gives the requests Short compares: all but the pod
// count and the resources skip names.
func CompareRequests(requests corev1.ResourceList, skip func(corev1.ResourceName) bool) Requests {
	c := Requests{requests: requests}
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		if name != corev1.ResourcePods && !skip(name) {
			c.names = append(c.names, name)
		}
	}
	return c
}

// Rejects returns why kube-scheduler keeps the pod off the node whatever
// runs there, or "": the filters of [NodeRejects], then NodeResourcesFit
// comparing these requests with the node's allocatable alone (Short with
// nothing bound). It is the one answer to "can this node ever hold the
// pod" that the verdict's candidate nodes and the nodes a pod as submitted
// runs on today (the device plugin's offers) both pass, so that both count
// every resource the pod requests.
func (c Requests) Rejects(required nodeaffinity.RequiredNodeAffinity, pod *corev1.Pod, node *corev1.Node) string {
	if msg := NodeRejects(required, pod, node); msg != "" {
		return msg
	}
	return c.Short(node, Usage{})
}

// Short returns why the node, with the pods bound to it, cannot hold the
// requests, in NodeResourcesFit's words ("had insufficient cpu", "had too
// many pods"), or "". A node that reports no allocatable resources at all
// is not judged.
func (c Requests) Short(node *corev1.Node, u Usage) string {
	requests := c.requests
	alloc := node.Status.Allocatable
	if len(alloc) == 0 {
		return ""
	}
	if u.Known {
		if maxPods, ok := alloc[corev1.ResourcePods]; ok && u.Pods+1 > maxPods.Value() {
			return fmt.Sprintf("had too many pods (%d of %d)", u.Pods, maxPods.Value())
		}
	}
	for _, name := range c.names {
		want, have := requests[name], alloc[name]
		free := have.DeepCopy()
		if used, ok := u.Used[name]; ok {
			free.Sub(used)
		}
		if want.Cmp(free) > 0 {
			if u.Known {
				return fmt.Sprintf("had insufficient %s (the pod asks for %s, %s of %s allocatable is free)", name, want.String(), free.String(), have.String())
			}
			return fmt.Sprintf("had insufficient %s (the pod asks for %s, %s allocatable)", name, want.String(), have.String())
		}
	}
	return ""
}
