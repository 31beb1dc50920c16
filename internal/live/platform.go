package live

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/claimbridge/claimbridge/platform"
)

// Cached is what a caller's informers already hold of the cluster: the
// DeviceClasses and the nodes (the webhook's inventory). Platform lists
// them itself without one.
type Cached interface {
	Classes() []*resourceapi.DeviceClass
	Nodes() []*corev1.Node
}

// Platform detects the cluster's platform (platform.Detect), reading only:
// kube-apiserver's version, the DaemonSets and Deployments of every
// namespace (the DRA drivers' and the autoscalers' images, flags and
// environment), Karpenter's NodePools where its API is served, and the
// DeviceClasses and the nodes' labels — from cached when given, else
// listed. Detection needs list on each; what it cannot list is an error
// that names it.
func Platform(ctx context.Context, c kubernetes.Interface, cached Cached) (*platform.Platform, error) {
	var o platform.Objects
	v, err := c.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("server version: %w", err)
	}
	o.Version = v.GitVersion
	all := metav1.ListOptions{}
	dss, err := c.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("list daemonsets: %w", err)
	}
	for i := range dss.Items {
		o.DaemonSets = append(o.DaemonSets, &dss.Items[i])
	}
	deps, err := c.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("list deployments: %w", err)
	}
	for i := range deps.Items {
		o.Deployments = append(o.Deployments, &deps.Items[i])
	}
	if o.NodePools, err = nodePools(ctx, c); err != nil {
		return nil, err
	}
	if cached != nil {
		o.Classes, o.Nodes = cached.Classes(), cached.Nodes()
		return platform.Detect(o), nil
	}
	classes, err := c.ResourceV1().DeviceClasses().List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("list deviceclasses: %w", err)
	}
	for i := range classes.Items {
		o.Classes = append(o.Classes, &classes.Items[i])
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	for i := range nodes.Items {
		o.Nodes = append(o.Nodes, &nodes.Items[i])
	}
	return platform.Detect(o), nil
}

// nodePools are the names of Karpenter's NodePools (karpenter.sh/v1), none
// where the API is not served.
func nodePools(ctx context.Context, c kubernetes.Interface) ([]string, error) {
	raw, err := c.Discovery().RESTClient().Get().AbsPath("/apis/karpenter.sh/v1/nodepools").DoRaw(ctx)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("list karpenter.sh/v1 nodepools: %w", err)
	}
	var list metav1.PartialObjectMetadataList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("karpenter.sh/v1 nodepools: %w", err)
	}
	var names []string
	for _, np := range list.Items {
		names = append(names, np.Name)
	}
	return names, nil
}
