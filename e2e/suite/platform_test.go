package suite

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/report"
)

// TestThePlatformIsDetectedFromTheCluster: the workloads a platform team
// runs say how its platform decides — the standalone NVIDIA DRA driver's
// DaemonSet (its chart's label, its image, CONSUMABLE_SHARES=4 and feature
// gates read from a ConfigMap) and Karpenter's Deployment
// (IGNORE_DRA_REQUESTS=false). `claimbridge audit --forecast --kubeconfig`
// (the real binary, reading the live control plane) names them as the
// platform it forecast on, each fact detected with the object that said
// it; the gates it cannot read are unknown, not the driver's default.
// Neither workload runs a pod: the DaemonSet selects no node, the
// Deployment has no replica.
func TestThePlatformIsDetectedFromTheCluster(t *testing.T) {
	ns := tc.Namespace(t, "platform-", nil)
	nowhere := map[string]string{"claimbridge.io/e2e-no-such-node": "true"}
	labels := map[string]string{"app": "dra-driver"}
	driver := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "nvidia-dra-driver-gpu-kubelet-plugin", Labels: map[string]string{"helm.sh/chart": "dra-driver-nvidia-gpu-25.12.0"}},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{NodeSelector: nowhere, Containers: []corev1.Container{{
				Name: "gpus", Image: "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v25.12.0",
				Env: []corev1.EnvVar{
					{Name: "CONSUMABLE_SHARES", Value: "4"},
					{Name: "FEATURE_GATES", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "dra-driver-gates"}, Key: "gates"}}},
				},
			}}},
		}},
	}
	if _, err := client.AppsV1().DaemonSets(ns).Create(t.Context(), driver, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kl := map[string]string{"app": "karpenter"}
	karpenter := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "karpenter"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: kl}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: kl},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "controller", Image: "public.ecr.aws/karpenter/controller:1.14.1",
				Env: []corev1.EnvVar{{Name: "IGNORE_DRA_REQUESTS", Value: "false"}},
			}}},
		}},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(t.Context(), karpenter, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	raw, err := exec.CommandContext(t.Context(), claimbridgeBin(t), "audit", "--forecast", "--kubeconfig", tc.Kubeconfig, "-n", ns, "-o", "json").Output()
	if err != nil {
		t.Fatalf("audit --forecast: %v\n%s", err, raw)
	}
	var rep report.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Forecast == nil || rep.Forecast.Platform != "detected from the cluster" {
		t.Fatalf("the forecast's platform: %+v", rep.Forecast)
	}
	where := "DaemonSet " + ns + "/" + driver.Name
	for _, want := range []string{
		"nvidia-gpu: install NVIDIADRADriver (detected: " + where + " (registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v25.12.0))",
		"nvidia-gpu: release v25.12.0 (detected: " + where,
		"nvidia-gpu: consumable shares 4 (detected: " + where + ": CONSUMABLE_SHARES=4)",
		"pool every karpenter.sh/nodepool pool: autoscaler Karpenter (detected: Deployment " + ns + "/karpenter",
		"provisions for claims: true (detected: Deployment " + ns + "/karpenter: IGNORE_DRA_REQUESTS=false)",
	} {
		if !slices.ContainsFunc(rep.Forecast.PlatformFacts, func(f string) bool { return strings.Contains(f, want) }) {
			t.Errorf("no platform fact says %q:\n%s", want, strings.Join(rep.Forecast.PlatformFacts, "\n"))
		}
	}
	// The gates come from a ConfigMap claimbridge does not read: unknown,
	// not the driver's default (off).
	for _, gate := range []string{"DynamicMIG", "MPS"} {
		want := "nvidia-gpu: " + gate + " unknown (unknown: " + where + ": FEATURE_GATES comes from a reference claimbridge does not read)"
		if !slices.Contains(rep.Forecast.PlatformFacts, want) {
			t.Errorf("no platform fact says %q:\n%s", want, strings.Join(rep.Forecast.PlatformFacts, "\n"))
		}
	}
}
