package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/claimbridge/claimbridge/e2e/chart"
	"github.com/claimbridge/claimbridge/e2e/cluster"
)

// installPolicyReportCRD creates the PolicyReport CRD the chart installs
// with reports.installCRD, so that claimbridge writes its PolicyReports
// (kubectl get policyreports -A), and waits until kube-apiserver serves it.
func installPolicyReportCRD(ctx context.Context, c *cluster.Cluster) error {
	r, err := chart.Render(ctx, map[string]any{"reports": map[string]any{"installCRD": true}}, chart.Options{Namespace: "claimbridge-system"})
	if err != nil {
		return fmt.Errorf("render the chart's PolicyReport CRD: %w", err)
	}
	found := r.Find("CustomResourceDefinition", "policyreports.wgpolicyk8s.io")
	if len(found) != 1 {
		return fmt.Errorf("the chart renders %d PolicyReport CRDs, want 1", len(found))
	}
	d, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	crds := d.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Create(ctx, found[0], metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the PolicyReport CRD: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, cluster.PollTimeout, true, func(context.Context) (bool, error) {
		list, err := c.Client().Discovery().ServerResourcesForGroupVersion("wgpolicyk8s.io/v1alpha2")
		if err != nil {
			return false, nil
		}
		return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "policyreports" }), nil
	})
}
