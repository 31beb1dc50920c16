package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// DeleteNode force-deletes the pods bound to the node and then the node.
func (c *Cluster) DeleteNode(ctx context.Context, name string) error {
	pods, err := c.Client().CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
	if err != nil {
		return fmt.Errorf("list pods of node %s: %w", name, err)
	}
	for _, p := range pods.Items {
		if err := c.forceDeletePod(ctx, p.Namespace, p.Name); err != nil {
			return err
		}
	}
	if err := c.Client().CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	return nil
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
	if err := c.Client().CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Client().CoreV1().Pods(name).List(ctx, metav1.ListOptions{})
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
	err := c.Client().CoreV1().Pods(namespace).Delete(ctx, name, *metav1.NewDeleteOptions(0))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s: %w", namespace, name, err)
	}
	return nil
}
