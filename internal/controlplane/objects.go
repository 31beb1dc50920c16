//go:build unix

package controlplane

import (
	"context"
	"fmt"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "node without a kubelet", LastHeartbeatTime: now, LastTransitionTime: now},
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

// Inventory is a fleet as API objects: nodes and the devices a DRA driver publishes for them.
type Inventory struct {
	Nodes            []*corev1.Node
	DeviceClasses    []*resourceapi.DeviceClass
	ResourceSlices   []*resourceapi.ResourceSlice
	ResourceClaims   []*resourceapi.ResourceClaim
	DeviceTaintRules []*resourceapi.DeviceTaintRule
}

// Publish creates the inventory: DeviceClasses (an existing class of the same name is kept),
// nodes via AddNode, ResourceSlices, DeviceTaintRules and ResourceClaims (with their
// status.allocation, so their devices count as in use; the claim's namespace is created when
// missing). The objects are not changed.
func (c *Cluster) Publish(ctx context.Context, inv *Inventory) error {
	rs := c.client.ResourceV1()
	for _, dc := range inv.DeviceClasses {
		if _, err := rs.DeviceClasses().Create(ctx, clean(dc), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create device class %s: %w", dc.Name, err)
		}
	}
	for _, n := range inv.Nodes {
		if _, err := c.AddNode(ctx, n); err != nil {
			return err
		}
	}
	for _, s := range inv.ResourceSlices {
		if _, err := rs.ResourceSlices().Create(ctx, clean(s), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create resource slice %s: %w", s.Name+s.GenerateName, err)
		}
	}
	for _, r := range inv.DeviceTaintRules {
		if _, err := rs.DeviceTaintRules().Create(ctx, clean(r), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create device taint rule %s: %w", r.Name, err)
		}
	}
	for _, cl := range inv.ResourceClaims {
		if _, err := c.PublishClaim(ctx, cl); err != nil {
			return err
		}
	}
	return nil
}

// PublishClaim creates a ResourceClaim with its status (so that its allocated devices count
// as in use), and its namespace when missing. cl is not changed.
func (c *Cluster) PublishClaim(ctx context.Context, cl *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	cl = clean(cl)
	if cl.Namespace == "" {
		cl.Namespace = metav1.NamespaceDefault
	}
	if _, err := c.client.CoreV1().Namespaces().Get(ctx, cl.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := c.CreateNamespace(ctx, cl.Namespace, "", nil); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	status := cl.Status
	created, err := c.client.ResourceV1().ResourceClaims(cl.Namespace).Create(ctx, cl, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create resource claim %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	if status.Allocation == nil && len(status.ReservedFor) == 0 && len(status.Devices) == 0 {
		return created, nil
	}
	created.Status = status
	updated, err := c.client.ResourceV1().ResourceClaims(cl.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return created, fmt.Errorf("set status of resource claim %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	return updated, nil
}

// clean is a copy of obj without the server-owned metadata that a create ignores or rejects.
func clean[T interface {
	metav1.Object
	DeepCopyObject() runtime.Object
}](obj T) T {
	obj = obj.DeepCopyObject().(T)
	obj.SetResourceVersion("")
	obj.SetUID("")
	obj.SetCreationTimestamp(metav1.Time{})
	obj.SetManagedFields(nil)
	return obj
}

// InstallWebhookConfiguration installs a configuration rendered elsewhere (by the Helm chart,
// say) with every webhook pointed at url (an in-process server: see ServeWebhook) and trusting
// caBundle; a service reference is replaced. cfg is not modified.
func (c *Cluster) InstallWebhookConfiguration(ctx context.Context, cfg *admissionregistrationv1.MutatingWebhookConfiguration, url string, caBundle []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	cfg = cfg.DeepCopy()
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: new(url), CABundle: caBundle}
	}
	return c.ApplyWebhookConfiguration(ctx, cfg)
}

// ApplyWebhookConfiguration creates cfg, or replaces the webhooks, labels and annotations of
// the configuration of its name.
func (c *Cluster) ApplyWebhookConfiguration(ctx context.Context, cfg *admissionregistrationv1.MutatingWebhookConfiguration) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	client := c.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	created, err := client.Create(ctx, cfg, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return nil, fmt.Errorf("create webhook configuration %s: %w", cfg.Name, err)
		}
		return created, nil
	}
	var updated *admissionregistrationv1.MutatingWebhookConfiguration
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := client.Get(ctx, cfg.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Webhooks = cfg.Webhooks
		current.Labels = cfg.Labels
		current.Annotations = cfg.Annotations
		updated, err = client.Update(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update webhook configuration %s: %w", cfg.Name, err)
	}
	return updated, nil
}
