package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/report"
)

// TestTheClassMappingServesPlainGPUPodsAsForecast: an A100 node of 8
// GPUs before the switch and a plain Deployment of 2 pods asking for
// nvidia.com/gpu: 2, forecast by the real binary on two platforms, then
// switched on the control plane as the forecast fleet says and the pods
// created through claimbridge:
//
//   - the standalone NVIDIA chart (--platform-preset nvidia-dra-driver):
//     its class gpu.nvidia.com maps nvidia.com/gpu; the forecast says
//     ServedByClass, claimbridge leaves the pods as submitted
//     (DeferToExtendedResource) and kube-scheduler serves them through the
//     class (KEP-5004: the claim it makes itself, in the pod's status);
//   - the GPU Operator's DRA mode (--platform-preset gpu-operator): its
//     class maps nothing; the forecast says Moves, and the pods are bound
//     through claimbridge's translated claims, with no claim of the
//     scheduler's.
func TestTheClassMappingServesPlainGPUPodsAsForecast(t *testing.T) {
	ns, _ := setup(t, "enforce")
	dir := t.TempDir()
	before := filepath.Join(dir, "before.yaml")
	src, err := os.ReadFile(filepath.Join(fleetsDir, "before-cutover", "cutover-a100-0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(before, src, 0o600); err != nil {
		t.Fatal(err)
	}
	workload := filepath.Join(dir, "workload.yaml")
	if err := os.WriteFile(workload, []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: plain, namespace: `+ns+`}
spec:
  replicas: 2
  selector: {matchLabels: {app: plain}}
  template:
    metadata: {labels: {app: plain}}
    spec:
      nodeSelector: {kubernetes.io/hostname: cutover-a100-0}
      containers:
      - {name: app, image: registry.example/app:1, resources: {limits: {nvidia.com/gpu: 2}}}
`), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		preset string
		want   cutover.Result
		maps   bool
	}{
		{preset: "nvidia-dra-driver", want: cutover.ServedByClass, maps: true},
		{preset: "gpu-operator", want: cutover.Moves},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "after.yaml")
			raw, err := exec.CommandContext(t.Context(), claimbridgeBin(t), "audit", "--forecast", "-f", workload, "--fleet", before,
				"--platform-preset", tc.preset, "-o", "json", "--forecast-out", out).Output()
			if err != nil {
				t.Fatalf("audit --forecast: %v\n%s", err, raw)
			}
			var rep report.Report
			if err := json.Unmarshal(raw, &rep); err != nil {
				t.Fatal(err)
			}
			if len(rep.Items) != 1 || rep.Items[0].Cutover == nil || rep.Items[0].Cutover.Result != tc.want || rep.Items[0].Cutover.Served != 2 {
				t.Fatalf("the forecast on %s: %+v, want %s 2/2", tc.preset, rep.Items, tc.want)
			}

			// The switch, as the forecast fleet says: the node without the
			// device plugin's GPUs, its ResourceSlice, the platform's class.
			after, err := cluster.ReadFleet(out)
			if err != nil {
				t.Fatal(err)
			}
			fleet, err := publishSwitched(t, after)
			if err != nil {
				t.Fatal(err)
			}
			node := fleet.NodeName("cutover-a100-0")
			waitInventory(t)

			d := plainDeployment(ns, node)
			if _, err := client.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				// No kubelet runs the pods: they go at once (grace 0), as
				// the other tests' pods do.
				_ = client.AppsV1().Deployments(ns).Delete(context.Background(), d.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
				afterwards(t, "the plain Deployment's pods gone", func(ctx context.Context) (bool, error) {
					if err := client.CoreV1().Pods(ns).DeleteCollection(ctx, *metav1.NewDeleteOptions(0), metav1.ListOptions{LabelSelector: "app=plain"}); err != nil {
						return false, err
					}
					pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=plain"})
					return err == nil && len(pods.Items) == 0, err
				})
			})
			eventually(t, fmt.Sprintf("2 pods bound on %s as the forecast on %s says", node, tc.preset), func(ctx context.Context) (bool, error) {
				pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=plain"})
				if err != nil || len(pods.Items) != 2 {
					return false, err
				}
				for _, p := range pods.Items {
					if p.Spec.NodeName != node {
						return false, nil
					}
					byClass := p.Status.ExtendedResourceClaimStatus != nil
					if byClass != tc.maps || hasClaim(&p) == tc.maps {
						t.Errorf("%s: served by the class %t, translated %t; want by the class %t", p.Name, byClass, hasClaim(&p), tc.maps)
					}
				}
				return true, nil
			})
		})
	}
}

// publishSwitched publishes the forecast fleet (its nodes, slices and
// classes) and makes the cluster's gpu.nvidia.com class map what the
// forecast's does (what the switch installs), as it was again when the
// test ends.
func publishSwitched(t *testing.T, after *cluster.Inventory) (*cluster.Fleet, error) {
	t.Helper()
	fleet, err := tc.PublishInventory(t.Context(), &cluster.Inventory{Nodes: after.Nodes, ResourceSlices: after.ResourceSlices, DeviceClasses: after.DeviceClasses},
		cluster.WithNamePrefix(fmt.Sprintf("m%d", time.Now().UnixNano()%1_000_000)))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { removeFleet(t, fleet) })
	for _, want := range after.DeviceClasses {
		if want.Name != "gpu.nvidia.com" {
			continue
		}
		live, err := client.ResourceV1().DeviceClasses().Get(t.Context(), want.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		was := live.Spec.ExtendedResourceName
		live.Spec.ExtendedResourceName = want.Spec.ExtendedResourceName
		if _, err := client.ResourceV1().DeviceClasses().Update(t.Context(), live, metav1.UpdateOptions{}); err != nil {
			return nil, err
		}
		t.Cleanup(func() {
			c, err := client.ResourceV1().DeviceClasses().Get(context.Background(), want.Name, metav1.GetOptions{})
			if err == nil {
				c.Spec.ExtendedResourceName = was
				_, err = client.ResourceV1().DeviceClasses().Update(context.Background(), c, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Errorf("restore DeviceClass %s: %v", want.Name, err)
			}
		})
	}
	return fleet, nil
}

func plainDeployment(ns, node string) *appsv1.Deployment {
	labels := map[string]string{"app": "plain"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelHostname: node}, Containers: []corev1.Container{{
				Name: "app", Image: "registry.example/app:1",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}},
			}}},
		}},
	}
}
