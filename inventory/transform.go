package inventory

import (
	"strings"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// transform is the informers' cache.TransformFunc: what the caches keep of
// an object is what admission, the snapshot, the reservations and the live
// report read of it. Nothing reads managedFields, and on a large fleet they
// are a good part of each object; pods keep what slimPod says, nodes what
// slimNode says; a ResourceSlice's devices share what a fleet repeats on
// every device of a model and every node (CompactSlice).
func transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return slimPod(o), nil
	case *corev1.Node:
		return slimNode(o), nil
	case *resourceapi.ResourceSlice:
		o.ManagedFields = nil
		o.Spec.Driver = intern(o.Spec.Driver)
		CompactSlice(o)
		return o, nil
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// slimPod keeps what the inventory reads of a pod: its identity, owner,
// claimbridge's annotations, the pod-template-hash label, node, phase, node selection and tolerations,
// and the containers' resources (the requests a node's usage sums), their
// resource lists shared with the pods that ask for the same.
func slimPod(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{
		TypeMeta: p.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, GenerateName: p.GenerateName, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			CreationTimestamp: p.CreationTimestamp, DeletionTimestamp: p.DeletionTimestamp,
			OwnerReferences: p.OwnerReferences,
		},
		Spec: corev1.PodSpec{
			NodeName: p.Spec.NodeName, SchedulerName: p.Spec.SchedulerName, Overhead: sharedResources(p.Spec.Overhead),
			Resources: p.Spec.Resources, ResourceClaims: p.Spec.ResourceClaims,
			// Where a pending translated pod may land, for the check that
			// takes over its devices.
			NodeSelector: p.Spec.NodeSelector, Affinity: p.Spec.Affinity, Tolerations: p.Spec.Tolerations,
		},
		// The claims' statuses: whether a pending pod's claim exists
		// (its template is no longer needed).
		Status: corev1.PodStatus{Phase: p.Status.Phase, ResourceClaimStatuses: p.Status.ResourceClaimStatuses},
	}
	if h, ok := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ok {
		// A ReplicaSet's pods name their Deployment through it (the
		// report's workload rows).
		out.Labels = map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: h}
	}
	for k, v := range p.Annotations {
		if strings.HasPrefix(k, "claimbridge.io/") {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	slim := func(cs []corev1.Container) []corev1.Container {
		if len(cs) == 0 {
			return nil
		}
		out := make([]corev1.Container, len(cs))
		for i, c := range cs {
			r := c.Resources
			r.Limits, r.Requests = sharedResources(r.Limits), sharedResources(r.Requests)
			out[i] = corev1.Container{Name: c.Name, Resources: r, RestartPolicy: c.RestartPolicy}
		}
		return out
	}
	out.Spec.InitContainers, out.Spec.Containers = slim(p.Spec.InitContainers), slim(p.Spec.Containers)
	return out
}

// slimNode keeps what a verdict and the legacy side read of a node: its
// identity and labels (node selection, GPU Feature Discovery), taints and
// schedulability, capacity and allocatable (the device plugins' resources).
// Its labels share the strings every node of a shape repeats, its capacity
// and allocatable the lists of the nodes with the same. Not kept:
// annotations, conditions, addresses, images, node info, volumes.
func slimNode(n *corev1.Node) *corev1.Node {
	out := &corev1.Node{
		TypeMeta: n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Generation: n.Generation,
			CreationTimestamp: n.CreationTimestamp, DeletionTimestamp: n.DeletionTimestamp,
		},
		Spec: corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints},
		Status: corev1.NodeStatus{
			Capacity: sharedResources(n.Status.Capacity), Allocatable: sharedResources(n.Status.Allocatable),
		},
	}
	if n.Labels != nil {
		out.Labels = make(map[string]string, len(n.Labels))
		for k, v := range n.Labels {
			out.Labels[intern(k)] = intern(v)
		}
	}
	return out
}

// intern returns the canonical copy of s: every informer object that holds
// an equal string shares its bytes. The canonical map is weak (package
// unique), so strings of deleted objects do not stay.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}
