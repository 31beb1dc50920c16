package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/decisions"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/report"
)

// cutoverWorkload is a Deployment of the cutover test and what the
// forecast must say of it.
type cutoverWorkload struct {
	ns, name string
	replicas int32
	pod      *corev1.Pod
	want     cutover.Result
}

func (w cutoverWorkload) create(ctx context.Context) error {
	labels := map[string]string{"app": w.name}
	_, err := client.AppsV1().Deployments(w.ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(w.replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: w.pod.Spec}},
	}, metav1.CreateOptions{})
	return err
}

func (w cutoverWorkload) pods(ctx context.Context) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + w.name})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// TestForecastAndClusterAgreeAtTheSwitch: a control plane whose GPU nodes
// carry only legacy state (device-plugin allocatable, GPU Feature Discovery
// labels, no ResourceSlice; one node opted out of the switch) runs five
// Deployments, bound to those nodes today. `claimbridge audit --forecast --kubeconfig` (the real binary) says
// which move and which break. Then the switch, as the forecast fleet
// describes it: its ResourceSlices and DeviceClasses published, the
// device-plugin resources and GFD's labels removed from the nodes, the pods
// recreated by their ReplicaSets. Every pod the forecast said moves is
// translated and bound to a switched node; the pod it said stays is bound
// as submitted to the opted-out node; the shares of the time-sliced T4s are
// translated into consumable shares of the switched T4 node's GPUs; every
// pod it said breaks — its node selector names GFD's machine label, which
// no device attribute expresses and the switch removes, so the opted-out
// node that still offers GPUs is not for it — is admitted as submitted and
// Pending with the LegacyUnservable Event on it and its ReplicaSet, or, in a
// namespace labelled claimbridge.io/on-unservable=Deny, refused
// (FailedCreate, no pod).
func TestForecastAndClusterAgreeAtTheSwitch(t *testing.T) {
	ns, _ := setup(t, "enforce")
	deny := tc.Namespace(t, "cutover-deny-", map[string]string{cluster.ModeLabel: "enforce", api.LabelOnUnservable: "Deny"})
	before, err := cluster.ReadFleet(filepath.Join(fleetsDir, "before-cutover"))
	if err != nil {
		t.Fatal(err)
	}
	// The CPU node stays out; the opted-out node keeps the device plugin.
	before.Nodes = slices.DeleteFunc(before.Nodes, func(n *corev1.Node) bool { return n.Name == "cutover-cpu-0" })
	fleet, err := tc.PublishInventory(t.Context(), before, cluster.WithNamePrefix(fmt.Sprintf("c%d", time.Now().UnixNano()%1_000_000)))
	if err != nil {
		t.Fatal(err)
	}
	optOut := fleet.NodeName("cutover-optout-0")
	t.Cleanup(func() { removeFleet(t, fleet) })
	waitInventory(t)

	gpus := func(n string) *builders.PodWrapper {
		return builders.MakePod("", "").Container("app").Limit("nvidia.com/gpu", n)
	}
	workloads := []cutoverWorkload{
		// Whole GPUs that are not time-sliced: they keep off the T4 shares.
		{ns: ns, name: "trainer", replicas: 2, pod: gpus("2").NodeSelector("nvidia.com/gpu.sharing-strategy", "none").Obj(), want: cutover.Moves},
		{ns: ns, name: "finetune", replicas: 1, pod: gpus("4").NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").Obj(), want: cutover.Moves},
		// Shares of the time-sliced T4s: consumable shares after the switch.
		{ns: ns, name: "embeddings", replicas: 2, pod: gpus("1").NodeSelector("nvidia.com/gpu.product", "Tesla-T4-SHARED").Obj(), want: cutover.Moves},
		// GFD's machine label, which no device attribute expresses and the
		// switch removes.
		{ns: deny, name: "t4-batch", replicas: 1, pod: gpus("1").NodeSelector("nvidia.com/gpu.machine", "g4dn.12xlarge").Obj(), want: cutover.Breaks},
		{ns: ns, name: "t4-batch", replicas: 2, pod: gpus("1").NodeSelector("nvidia.com/gpu.machine", "g4dn.12xlarge").Obj(), want: cutover.Breaks},
		{ns: deny, name: "pinned", replicas: 1, pod: gpus("4").NodeSelector("kubernetes.io/hostname", optOut).Obj(), want: cutover.StaysLegacy},
	}
	for _, w := range workloads {
		if err := w.create(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	// A pod bound at creation to an A100 node that switches: no scheduler
	// places it, the webhook's matchConditions do not send it.
	pinnedNode := fleet.NodeName("cutover-a100-1")
	pinned := func() *corev1.Pod {
		p := gpus("1").NodeName(pinnedNode).Obj()
		p.Name, p.Namespace = "pinned-a100", ns
		return p
	}
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), pinned(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Today every pod runs on the device plugin.
	for _, w := range workloads {
		eventually(t, fmt.Sprintf("%s/%s bound as submitted", w.ns, w.name), func(ctx context.Context) (bool, error) {
			pods, err := w.pods(ctx)
			if err != nil || len(pods) != int(w.replicas) {
				return false, err
			}
			for _, p := range pods {
				if _, translated := p.Annotations[api.AnnotationTemplate]; translated {
					return false, fmt.Errorf("pod %s translated before the switch", p.Name)
				}
				if p.Spec.NodeName == "" {
					return false, nil
				}
			}
			return true, nil
		})
	}

	// The forecast, by the real binary against the live cluster.
	out := filepath.Join(t.TempDir(), "forecast.yaml")
	// The NVIDIA DRA driver publishes each GPU as 4 consumable shares, as
	// many as the T4 node's replicas (its default, disabled, would make
	// them whole GPUs).
	plat := filepath.Join(t.TempDir(), "platform.yaml")
	if err := os.WriteFile(plat, []byte("apiVersion: claimbridge.io/v1alpha1\nkind: Platform\nspec:\n  drivers:\n  - family: nvidia-gpu\n    consumableShares: \"4\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), claimbridgeBin(t), "audit", "--forecast", "--kubeconfig", tc.Kubeconfig, "-n", ns, "-n", deny,
		"-o", "json", "--forecast-out", out, "--platform", plat)
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("audit --forecast: %v\n%s", err, raw)
	}
	var rep report.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	said := map[string]cutover.Result{}
	for _, row := range rep.Items {
		if row.Cutover != nil {
			said[row.Namespace+"/"+row.Name] = row.Cutover.Result
		}
	}
	for _, w := range workloads {
		if got := said[w.ns+"/"+w.name]; got != w.want {
			t.Errorf("the forecast says %s/%s %q, want %q", w.ns, w.name, got, w.want)
		}
	}
	if got := said[ns+"/pinned-a100"]; got != cutover.Breaks {
		t.Errorf("the forecast says the pod bound at creation to a node that switches %q, want %q", got, cutover.Breaks)
	}
	if rep.Forecast == nil || rep.Forecast.Switched != len(fleet.Published.Nodes)-1 {
		t.Fatalf("forecast %+v, want every node but the opted-out one switched (%d)", rep.Forecast, len(fleet.Published.Nodes)-1)
	}
	if t.Failed() {
		t.FailNow()
	}

	// The switch.
	start := time.Now()
	after, err := feasibility.LoadInventory(out)
	if err != nil {
		t.Fatal(err)
	}
	dra, err := tc.PublishInventory(t.Context(), &cluster.Inventory{DeviceClasses: after.Classes, ResourceSlices: after.Slices})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeFleet(t, dra) })
	switched := map[string]bool{}
	for _, n := range after.Nodes {
		if !slices.Contains(fleet.NodeNames(), n.Name) || n.Name == optOut {
			continue
		}
		switched[n.Name] = true
		live, err := client.CoreV1().Nodes().Get(t.Context(), n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		live.Labels = n.Labels
		if live, err = client.CoreV1().Nodes().Update(t.Context(), live, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		live.Status.Capacity, live.Status.Allocatable = n.Status.Capacity, n.Status.Allocatable
		if _, err := client.CoreV1().Nodes().UpdateStatus(t.Context(), live, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// claimbridge sees the switch: a dry run of the trainer's pod is
	// translated, one of the T4 batch's refused in the Deny namespace.
	eventually(t, "claimbridge sees the switch", func(ctx context.Context) (bool, error) {
		probe := gpus("2").Obj()
		probe.Name, probe.Namespace = "probe", ns
		got, err := client.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		if _, translated := got.Annotations[api.AnnotationTemplate]; !translated {
			return false, nil
		}
		refused := workloads[3].pod.DeepCopy()
		refused.Name, refused.Namespace = "probe", deny
		_, err = client.CoreV1().Pods(deny).Create(ctx, refused, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err), nil
	})
	for _, w := range workloads {
		if err := client.CoreV1().Pods(w.ns).DeleteCollection(t.Context(), *metav1.NewDeleteOptions(0), metav1.ListOptions{LabelSelector: "app=" + w.name}); err != nil {
			t.Fatal(err)
		}
	}
	// The bare pod is created again by hand, as its owner would.
	if err := client.CoreV1().Pods(ns).Delete(t.Context(), "pinned-a100", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	afterwards(t, "the pod bound at creation deleted", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, "pinned-a100", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), pinned(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The cluster after the switch, pod for pod.
	for _, w := range workloads {
		switch {
		case w.want == cutover.Moves:
			eventually(t, fmt.Sprintf("%s/%s translated and bound to switched nodes", w.ns, w.name), func(ctx context.Context) (bool, error) {
				pods, err := w.pods(ctx)
				if err != nil || len(pods) != int(w.replicas) {
					return false, err
				}
				for _, p := range pods {
					if _, translated := p.Annotations[api.AnnotationTemplate]; !translated {
						return false, fmt.Errorf("pod %s was admitted as submitted after the switch", p.Name)
					}
					if p.Spec.NodeName == "" {
						return false, nil
					}
					if !switched[p.Spec.NodeName] {
						return false, fmt.Errorf("pod %s bound to %s, not a switched node", p.Name, p.Spec.NodeName)
					}
				}
				return true, nil
			})
		case w.want == cutover.StaysLegacy:
			eventually(t, fmt.Sprintf("%s/%s as submitted on the opted-out node", w.ns, w.name), func(ctx context.Context) (bool, error) {
				pods, err := w.pods(ctx)
				if err != nil || len(pods) != int(w.replicas) {
					return false, err
				}
				for _, p := range pods {
					if _, translated := p.Annotations[api.AnnotationTemplate]; translated || p.Spec.NodeName != "" && p.Spec.NodeName != optOut {
						return false, fmt.Errorf("pod %s: translated %t, bound to %q; want as submitted on %s", p.Name, translated, p.Spec.NodeName, optOut)
					}
					if p.Spec.NodeName == "" {
						return false, nil
					}
				}
				return true, nil
			})
		case w.ns == deny:
			eventually(t, fmt.Sprintf("%s/%s refused: FailedCreate with claimbridge's message, no pod", w.ns, w.name), func(ctx context.Context) (bool, error) {
				evs, err := ownerEvents(ctx, w.ns, "FailedCreate")
				if err != nil || !slices.ContainsFunc(evs, func(e corev1.Event) bool { return strings.Contains(e.Message, "LegacyUnservable") }) {
					return false, err
				}
				pods, err := w.pods(ctx)
				return err == nil && len(pods) == 0, err
			})
		default:
			eventually(t, fmt.Sprintf("%s/%s Pending with the LegacyUnservable Event on each pod and the ReplicaSet", w.ns, w.name), func(ctx context.Context) (bool, error) {
				pods, err := w.pods(ctx)
				if err != nil || len(pods) != int(w.replicas) {
					return false, err
				}
				for _, p := range pods {
					if _, translated := p.Annotations[api.AnnotationTemplate]; translated || p.Spec.NodeName != "" {
						return false, fmt.Errorf("pod %s: translated %t, bound to %q; want as submitted and Pending", p.Name, translated, p.Spec.NodeName)
					}
					if len(events(t, w.ns, p.Name, "LegacyUnservable")) == 0 {
						return false, nil
					}
				}
				onOwner, err := ownerEvents(ctx, w.ns, "LegacyUnservable")
				return err == nil && len(onOwner) > 0, err
			})
		}
	}
	// The pod bound at creation to the switched node: told like any pod no
	// node can serve, counted as unservable, not as the device plugin's.
	eventually(t, "the pod bound at creation to a switched node told LegacyUnservable", func(ctx context.Context) (bool, error) {
		evs := events(t, ns, "pinned-a100", "LegacyUnservable")
		if len(evs) == 0 {
			return false, nil
		}
		if !strings.Contains(evs[0].Message, "the kubelet of "+pinnedNode+" will refuse this pod") || evs[0].Type != corev1.EventTypeWarning {
			return false, fmt.Errorf("event %s %q", evs[0].Type, evs[0].Message)
		}
		return metric(t, "claimbridge_unservable_pods") >= 1, nil
	})
	if evs := events(t, ns, "pinned-a100", "Undecided"); slices.ContainsFunc(evs, func(e corev1.Event) bool { return e.LastTimestamp.After(start) || e.EventTime.After(start) }) {
		t.Errorf("the pod bound at creation was also told it stays on the device plugin: %v", evs)
	}
	eventually(t, "the live report counts the pinned pod's device as served by no one", func(ctx context.Context) (bool, error) {
		rep, err := fetchReport(ctx, ns)
		if err != nil {
			return false, err
		}
		for _, row := range rep.Items {
			if row.Name == "pinned-a100" && (row.Status != decisions.StatusBlocked || row.Decisive == nil || row.Decisive.Code != explain.ReasonLegacyUnservable) {
				return false, fmt.Errorf("row %s %+v, want Blocked by LegacyUnservable", row.Status, row.Decisive)
			}
		}
		return rep.Progress != nil && rep.Progress.Unservable >= 1, nil
	})
	t.Logf("the cluster agrees with the forecast %s after the switch began", time.Since(start).Round(time.Millisecond))
	for _, w := range workloads {
		if err := client.AppsV1().Deployments(w.ns).Delete(t.Context(), w.name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Error(err)
		}
		afterwards(t, "the pods of "+w.ns+"/"+w.name+" gone", func(ctx context.Context) (bool, error) {
			err := client.CoreV1().Pods(w.ns).DeleteCollection(ctx, *metav1.NewDeleteOptions(0), metav1.ListOptions{LabelSelector: "app=" + w.name})
			if err != nil {
				return false, err
			}
			pods, err := w.pods(ctx)
			return err == nil && len(pods) == 0, err
		})
	}
	waitNoClaims(t, ns)
}

// removeFleet removes a fleet published by a test.
func removeFleet(t *testing.T, f *cluster.Fleet) {
	ctx, cancel := context.WithTimeout(context.Background(), cluster.PollTimeout)
	defer cancel()
	if err := f.Remove(ctx); err != nil {
		t.Errorf("remove fleet: %v", err)
	}
}
