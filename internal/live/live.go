// Package live reads what an audit needs from a running cluster, once:
// workloads and bare pods of the chosen namespaces, and the fleet inventory.
package live

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/manifest"
)

// Workloads lists Deployments, StatefulSets, DaemonSets, Jobs, CronJobs and
// ReplicaSets, and the Pods no controller owns, in the namespaces (all when
// empty), with their ResourceQuotas and the cluster's PriorityClasses. Objects a listed controller owns are left out: the owner stands
// for them.
func Workloads(ctx context.Context, c kubernetes.Interface, namespaces []string) ([]manifest.Document, error) {
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var docs []manifest.Document
	add := func(gvk schema.GroupVersionKind, obj runtime.Object, owned bool) {
		if owned {
			return
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		docs = append(docs, manifest.Document{Source: "cluster", Index: len(docs), Item: -1, Object: obj})
	}
	opts := metav1.ListOptions{}
	for _, ns := range namespaces {
		deps, err := c.AppsV1().Deployments(ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list deployments: %w", err)
		}
		for i := range deps.Items {
			add(appsv1.SchemeGroupVersion.WithKind("Deployment"), &deps.Items[i], false)
		}
		sts, err := c.AppsV1().StatefulSets(ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list statefulsets: %w", err)
		}
		for i := range sts.Items {
			add(appsv1.SchemeGroupVersion.WithKind("StatefulSet"), &sts.Items[i], false)
		}
		dss, err := c.AppsV1().DaemonSets(ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list daemonsets: %w", err)
		}
		for i := range dss.Items {
			add(appsv1.SchemeGroupVersion.WithKind("DaemonSet"), &dss.Items[i], false)
		}
		rss, err := c.AppsV1().ReplicaSets(ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list replicasets: %w", err)
		}
		for i := range rss.Items {
			add(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), &rss.Items[i], owned(&rss.Items[i].ObjectMeta))
		}
		cjs, err := c.BatchV1().CronJobs(ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list cronjobs: %w", err)
		}
		for i := range cjs.Items {
			add(batchv1.SchemeGroupVersion.WithKind("CronJob"), &cjs.Items[i], false)
		}
		jobs, err := c.BatchV1().Jobs(ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		for i := range jobs.Items {
			add(batchv1.SchemeGroupVersion.WithKind("Job"), &jobs.Items[i], owned(&jobs.Items[i].ObjectMeta))
		}
		pods, err := c.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list pods: %w", err)
		}
		for i := range pods.Items {
			asSubmitted(&pods.Items[i])
			add(corev1.SchemeGroupVersion.WithKind("Pod"), &pods.Items[i], owned(&pods.Items[i].ObjectMeta))
		}
		quotas, err := c.CoreV1().ResourceQuotas(ns).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list resourcequotas: %w", err)
		}
		for i := range quotas.Items {
			add(corev1.SchemeGroupVersion.WithKind("ResourceQuota"), &quotas.Items[i], false)
		}
	}
	// PriorityClasses, cluster-wide: the order in which the cutover
	// forecast places the workloads.
	// A reader allowed no cluster-wide list gets the pods' own
	// spec.priority only.
	pcs, err := c.SchedulingV1().PriorityClasses().List(ctx, opts)
	if apierrors.IsForbidden(err) {
		return docs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list priorityclasses: %w", err)
	}
	for i := range pcs.Items {
		add(schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"), &pcs.Items[i], false)
	}
	return docs, nil
}

// asSubmitted undoes what scheduling did to a pod, so that the audit decides
// on the pod as it was created: spec.nodeName that a scheduler's binding set
// is cleared (a pod bound at creation keeps it and is reported
// NodeNamePreset). The binding subresource writes nodeName without a
// managedFields entry, while the creator of a pod bound at creation owns
// f:spec.f:nodeName; without managedFields the pod is left as it is.
func asSubmitted(pod *corev1.Pod) {
	if pod.Spec.NodeName == "" || len(pod.ManagedFields) == 0 {
		return
	}
	for _, m := range pod.ManagedFields {
		if m.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if err := json.Unmarshal(m.FieldsV1.GetRawBytes(), &fields); err == nil {
			if _, ok := fields.Spec["f:nodeName"]; ok {
				return
			}
		}
	}
	pod.Spec.NodeName = ""
}

func owned(m *metav1.ObjectMeta) bool {
	return metav1.GetControllerOf(m) != nil
}

// Inventory lists the fleet: Nodes, ResourceSlices, DeviceClasses,
// ResourceClaims and DeviceTaintRules.
func Inventory(ctx context.Context, c kubernetes.Interface) (*feasibility.Inventory, error) {
	opts := metav1.ListOptions{}
	inv := &feasibility.Inventory{}
	nodes, err := c.CoreV1().Nodes().List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	for i := range nodes.Items {
		inv.Nodes = append(inv.Nodes, &nodes.Items[i])
	}
	slices, err := c.ResourceV1().ResourceSlices().List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list resourceslices: %w", err)
	}
	for i := range slices.Items {
		inv.Slices = append(inv.Slices, &slices.Items[i])
	}
	classes, err := c.ResourceV1().DeviceClasses().List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list deviceclasses: %w", err)
	}
	for i := range classes.Items {
		inv.Classes = append(inv.Classes, &classes.Items[i])
	}
	claims, err := c.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list resourceclaims: %w", err)
	}
	for i := range claims.Items {
		inv.Claims = append(inv.Claims, &claims.Items[i])
	}
	// DeviceTaintRules are served in resource.k8s.io/v1 from Kubernetes 1.37 on; a cluster
	// of an earlier release has none to apply.
	rules, err := c.ResourceV1().DeviceTaintRules().List(ctx, opts)
	if apierrors.IsNotFound(err) {
		return inv, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list devicetaintrules: %w", err)
	}
	for i := range rules.Items {
		inv.TaintRules = append(inv.TaintRules, &rules.Items[i])
	}
	return inv, nil
}
