package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/claimbridge/claimbridge/e2e/chart"
	"github.com/claimbridge/claimbridge/e2e/cluster"
)

// namespace is claimbridge's own; readerName the ServiceAccount that may read /metrics and
// /report.
const (
	namespace  = "claimbridge-system"
	readerName = "report-reader"
)

// installReader creates the ServiceAccount readerName and the chart's ClusterRole
// <release>-metrics-reader bound to it (the chart's metrics.readers), so that
// `kubectl -n claimbridge-system create token report-reader` gives a token kube-apiserver
// authorizes for /metrics and /report, as Prometheus' is in a cluster.
func installReader(ctx context.Context, c *cluster.Cluster) error {
	if _, err := c.Client().CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: readerName}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ServiceAccount %s/%s: %w", namespace, readerName, err)
	}
	r, err := chart.Render(ctx, map[string]any{"metrics": map[string]any{"readers": []any{
		map[string]any{"kind": "ServiceAccount", "name": readerName, "namespace": namespace},
	}}}, chart.Options{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("render the chart's metrics reader: %w", err)
	}
	d, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	name := chart.DefaultRelease + "-metrics-reader"
	for kind, resource := range map[string]string{"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings"} {
		found := r.Find(kind, name)
		if len(found) != 1 {
			return fmt.Errorf("the chart renders %d %s %s, want 1", len(found), kind, name)
		}
		gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: resource}
		if _, err := d.Resource(gvr).Create(ctx, found[0], metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s %s: %w", kind, name, err)
		}
	}
	return nil
}

// writeCA writes the cluster's CA, which signed the serving certificate of /metrics and
// /report, into dir as ca.crt for curl --cacert, and returns its path.
func writeCA(c *cluster.Cluster, dir string) (string, error) {
	path := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(path, c.CABundle(), 0o600); err != nil {
		return "", fmt.Errorf("write the cluster's CA: %w", err)
	}
	return path, nil
}
