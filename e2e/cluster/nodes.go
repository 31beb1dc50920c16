package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// KubeletVersion is what fake nodes report as their kubelet version.
const KubeletVersion = "v1.37.2"

// Default capacity of a fake node whose status gives none.
var defaultCapacity = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("16"),
	corev1.ResourceMemory: resource.MustParse("64Gi"),
	corev1.ResourcePods:   resource.MustParse("110"),
}

// PollTimeout bounds the harness's own waits (a node made Ready, a namespace's service
// account, pods gone). Tests bound theirs with Eventually.
const PollTimeout = 30 * time.Second

// AddNode creates a node that the scheduler treats like one with a healthy kubelet: it
// creates node (spec, labels, taints as given), sets its status (capacity and allocatable from
// node.Status, allocatable defaulting to capacity, capacity to 16 CPUs, 64Gi and 110 pods;
// condition Ready=True) and removes the not-ready taint that node admission adds at creation.
// Nothing renews the node's heartbeat, and nothing needs to: the node lifecycle controller
// does not run. Pods bound to it never start and never terminate on their own (see
// DeleteNamespace).
func (c *Cluster) AddNode(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	want := node.DeepCopy()
	status := want.Status
	want.Status = corev1.NodeStatus{}
	want.ResourceVersion = ""
	if want.Labels == nil {
		want.Labels = map[string]string{}
	}
	if _, ok := want.Labels[corev1.LabelHostname]; !ok {
		want.Labels[corev1.LabelHostname] = want.Name
	}
	if _, ok := want.Labels[corev1.LabelOSStable]; !ok {
		want.Labels[corev1.LabelOSStable] = "linux"
	}
	if _, ok := want.Labels[corev1.LabelArchStable]; !ok {
		want.Labels[corev1.LabelArchStable] = "amd64"
	}

	nodes := c.client.CoreV1().Nodes()
	created, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create node %s: %w", want.Name, err)
	}

	if len(status.Capacity) == 0 {
		status.Capacity = defaultCapacity.DeepCopy()
	}
	if len(status.Allocatable) == 0 {
		status.Allocatable = status.Capacity.DeepCopy()
	}
	if _, ok := status.Capacity[corev1.ResourcePods]; !ok {
		status.Capacity[corev1.ResourcePods] = defaultCapacity[corev1.ResourcePods]
	}
	if _, ok := status.Allocatable[corev1.ResourcePods]; !ok {
		status.Allocatable[corev1.ResourcePods] = status.Capacity[corev1.ResourcePods]
	}
	now := metav1.Now()
	status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "fake node of the e2e harness", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: now, LastTransitionTime: now},
	}
	if status.NodeInfo.KubeletVersion == "" {
		status.NodeInfo.KubeletVersion = KubeletVersion
	}
	if status.NodeInfo.OperatingSystem == "" {
		status.NodeInfo.OperatingSystem = "linux"
	}
	if status.NodeInfo.Architecture == "" {
		status.NodeInfo.Architecture = "amd64"
	}
	if len(status.Addresses) == 0 {
		status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: want.Name}}
	}
	// Controllers (ttl, for one) annotate a new node at once: retry on conflict.
	var updated *corev1.Node
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if created == nil {
			if created, err = nodes.Get(ctx, want.Name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		created.Status = status
		updated, err = nodes.UpdateStatus(ctx, created, metav1.UpdateOptions{})
		created = nil
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("set status of node %s: %w", want.Name, err)
	}

	// Node admission adds node.kubernetes.io/not-ready:NoSchedule at creation; only the node
	// lifecycle controller would lift it.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
		})
		updated, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("remove the not-ready taint of node %s: %w", want.Name, err)
	}
	return updated, nil
}

// DeleteNode force-deletes the pods bound to the node and then the node.
func (c *Cluster) DeleteNode(ctx context.Context, name string) error {
	pods, err := c.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
	if err != nil {
		return fmt.Errorf("list pods of node %s: %w", name, err)
	}
	for _, p := range pods.Items {
		if err := c.forceDeletePod(ctx, p.Namespace, p.Name); err != nil {
			return err
		}
	}
	if err := c.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	return nil
}

// CreateNamespace creates a namespace with the given labels and waits (bounded) until its
// default ServiceAccount exists, without which pod admission refuses pods. An empty name
// with a generateName-style prefix in generateName creates a unique one.
func (c *Cluster) CreateNamespace(ctx context.Context, name, generateName string, labels map[string]string) (*corev1.Namespace, error) {
	ns, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, GenerateName: generateName, Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, PollTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the default service account of namespace %s: %w", ns.Name, err)
	}
	return ns, nil
}

// DeleteNamespace deletes the namespace, then force-deletes its pods until none is left (no
// kubelet would ever confirm a graceful deletion of a bound pod, which would keep the
// namespace terminating forever and the pod holding its devices); it does not wait for the
// namespace itself to go.
func (c *Cluster) DeleteNamespace(ctx context.Context, name string) error {
	// The namespace goes first: once it is Terminating, kube-apiserver
	// refuses new pods in it, so its controllers (a ReplicaSet replacing
	// the pods deleted below) can no longer create pods that the next
	// test's fleet would serve. Its pods are then deleted at once, until
	// none is left: without a kubelet, a pod the namespace controller
	// deletes gracefully would stay, holding its node's devices.
	if err := c.client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := c.client.CoreV1().Pods(name).List(ctx, metav1.ListOptions{})
		if err != nil {
			last = fmt.Errorf("list pods of namespace %s: %w", name, err)
			return false, nil
		}
		var errs []error
		for _, p := range pods.Items {
			errs = append(errs, c.forceDeletePod(ctx, name, p.Name))
		}
		last = errors.Join(errs...)
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		return errors.Join(fmt.Errorf("pods of namespace %s still there: %w", name, err), last)
	}
	return nil
}

// Namespace creates a uniquely named namespace for a test (name prefix generateName) and
// deletes it with DeleteNamespace in t.Cleanup.
func (c *Cluster) Namespace(t testing.TB, generateName string, labels map[string]string) string {
	t.Helper()
	ns, err := c.CreateNamespace(t.Context(), "", generateName, labels)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		// t.Context() is done by the time cleanups run: its values, without its end.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), PollTimeout)
		defer cancel()
		if err := c.DeleteNamespace(ctx, ns.Name); err != nil {
			t.Errorf("clean up: %v", err)
		}
	})
	return ns.Name
}

func (c *Cluster) forceDeletePod(ctx context.Context, namespace, name string) error {
	err := c.client.CoreV1().Pods(namespace).Delete(ctx, name, *metav1.NewDeleteOptions(0))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s: %w", namespace, name, err)
	}
	return nil
}
