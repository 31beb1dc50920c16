package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/e2e/cluster"
)

const minimalFleet = "../testdata/fleet-minimal"

// testCluster is shared by the tests of this package; they isolate themselves by namespace
// and by fleet name prefix.
var testCluster *cluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The bound covers a cold build of the binaries (about 20 minutes on 2 cores).
	ctx, cancel := context.WithTimeout(context.Background(), 28*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := cluster.New(ctx, cluster.Options{Progress: os.Stderr})
	if err != nil {
		fmt.Fprintf(os.Stderr, "start cluster: %v\n", err)
		return 1
	}
	defer c.Stop()
	fmt.Fprintf(os.Stderr, "cluster ready in %v (kubeconfig %s)\n", time.Since(start).Round(time.Millisecond), c.Kubeconfig)
	testCluster = c
	ctrllog.SetLogger(logr.Discard())
	return m.Run()
}

// eventually is cluster.Eventually, for the harness's own tests.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	cluster.Eventually(t, timeout, what, cond)
}

func applyFleet(t *testing.T, dir, prefix string) *cluster.Fleet {
	t.Helper()
	fleet, err := testCluster.ApplyFleet(t.Context(), dir, cluster.WithNamePrefix(prefix))
	if err != nil {
		t.Fatalf("apply fleet: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cluster.PollTimeout)
		defer cancel()
		if err := fleet.Remove(ctx); err != nil {
			t.Errorf("remove fleet: %v", err)
		}
	})
	return fleet
}

// gpuTemplate asks for two GPUs on one PCIe root, or else one GPU. The minimal fleet's
// GPUs sit on different roots, so only the second alternative can be allocated.
func gpuTemplate(namespace string) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "gpus", Namespace: namespace},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{
				Name: "gpus",
				FirstAvailable: []resourceapi.DeviceSubRequest{
					{Name: "pair", DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2},
					{Name: "single", DeviceClassName: "gpu.nvidia.com", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
				},
			}},
			Constraints: []resourceapi.DeviceConstraint{{
				Requests:       []string{"gpus/pair"},
				MatchAttribute: new(resourceapi.FullyQualifiedName("resource.kubernetes.io/pcieRoot")),
			}},
		}}},
	}
}

// claimPod references the template and pins the pod to one node of the test's fleet.
func claimPod(namespace, name, template, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			NodeSelector:   map[string]string{corev1.LabelHostname: node},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: new(template)}},
			Containers: []corev1.Container{{
				Name:      "app",
				Image:     "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}},
			}},
		},
	}
}

// allocatedClaim waits until the pod is bound and its generated claim allocated, and returns
// both.
func allocatedClaim(t *testing.T, namespace, name string, timeout time.Duration) (*corev1.Pod, *resourceapi.ResourceClaim) {
	t.Helper()
	client := testCluster.Client()
	var pod *corev1.Pod
	var claim *resourceapi.ResourceClaim
	eventually(t, timeout, "pod bound with an allocated claim", func(ctx context.Context) (bool, error) {
		var err error
		pod, err = client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if pod.Spec.NodeName == "" || len(pod.Status.ResourceClaimStatuses) == 0 || pod.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
			return false, nil
		}
		claim, err = client.ResourceV1().ResourceClaims(namespace).Get(ctx, *pod.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return claim.Status.Allocation != nil, nil
	})
	return pod, claim
}

func TestPodWithClaimTemplateIsBoundAndAllocatedFromTheFirstFeasibleAlternative(t *testing.T) {
	testCluster.DumpLogsOnFailure(t)
	ctx := t.Context()
	client := testCluster.Client()
	fleet := applyFleet(t, minimalFleet, "alloc")
	node := fleet.NodeName("gpu-node-1")
	ns := testCluster.Namespace(t, "alloc-", nil)

	if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, gpuTemplate(ns), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create template: %v", err)
	}
	created, err := client.CoreV1().Pods(ns).Create(ctx, claimPod(ns, "app", "gpus", node), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	start := time.Now()
	pod, claim := allocatedClaim(t, ns, created.Name, 60*time.Second)
	t.Logf("pod bound and claim allocated %v after creation (observed by polling)", time.Since(start).Round(time.Millisecond))

	if pod.Spec.NodeName != node {
		t.Errorf("pod bound to %q, want %q", pod.Spec.NodeName, node)
	}
	results := claim.Status.Allocation.Devices.Results
	if len(results) != 1 {
		t.Fatalf("allocation results = %+v, want one device", results)
	}
	got := results[0]
	if got.Request != "gpus/single" || got.Driver != "gpu.nvidia.com" || got.Pool != fleet.PoolName("gpu-node-1") {
		t.Errorf("allocated %s/%s/%s for request %s, want a device of driver gpu.nvidia.com, pool %s for request gpus/single",
			got.Driver, got.Pool, got.Device, got.Request, fleet.PoolName("gpu-node-1"))
	}
	if !slices.ContainsFunc(claim.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == pod.UID }) {
		t.Errorf("claim reserved for %+v, want the pod %s", claim.Status.ReservedFor, pod.UID)
	}
}

func TestFakeNodeIsReadyUntaintedAndHasTheFleetsCapacity(t *testing.T) {
	testCluster.DumpLogsOnFailure(t)
	fleet := applyFleet(t, minimalFleet, "ready")
	node, err := testCluster.Client().CoreV1().Nodes().Get(t.Context(), fleet.NodeName("gpu-node-1"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node: %v", err)
	}
	ready := slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
	if !ready {
		t.Errorf("node conditions = %+v, want Ready=True", node.Status.Conditions)
	}
	if len(node.Spec.Taints) != 0 {
		t.Errorf("node taints = %+v, want none", node.Spec.Taints)
	}
	if got := node.Labels[corev1.LabelHostname]; got != node.Name {
		t.Errorf("hostname label = %q, want the node's name %q", got, node.Name)
	}
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "31", corev1.ResourceMemory: "250Gi", corev1.ResourcePods: "110"} {
		if got := node.Status.Allocatable[name]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("allocatable %s = %s, want %s", name, got.String(), want)
		}
	}
}

func TestWithdrawnSliceLeavesThePodUnschedulableUntilTheDriverPublishesItAgain(t *testing.T) {
	testCluster.DumpLogsOnFailure(t)
	ctx := t.Context()
	client := testCluster.Client()
	fleet := applyFleet(t, minimalFleet, "resched")
	node := fleet.NodeName("gpu-node-1")
	ns := testCluster.Namespace(t, "resched-", nil)

	inv, err := cluster.ReadFleet(minimalFleet)
	if err != nil {
		t.Fatalf("read fleet: %v", err)
	}
	slice := inv.ResourceSlices[0]
	if err := fleet.DeleteSlice(ctx, slice.Name); err != nil {
		t.Fatalf("withdraw slice: %v", err)
	}
	if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, gpuTemplate(ns), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create template: %v", err)
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, claimPod(ns, "app", "gpus", node), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	eventually(t, 60*time.Second, "pod reported unschedulable", func(ctx context.Context) (bool, error) {
		pod, err := client.CoreV1().Pods(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if pod.Spec.NodeName != "" {
			return false, fmt.Errorf("pod bound to %s without devices", pod.Spec.NodeName)
		}
		return slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}), nil
	})

	// The driver comes back with a new pool generation.
	slice.Spec.Pool.Generation++
	if _, err := fleet.AddSlice(ctx, slice); err != nil {
		t.Fatalf("republish slice: %v", err)
	}
	pod, claim := allocatedClaim(t, ns, "app", 60*time.Second)
	if pod.Spec.NodeName != node {
		t.Errorf("pod bound to %q, want %q", pod.Spec.NodeName, node)
	}
	if got := claim.Status.Allocation.Devices.Results; len(got) != 1 || got[0].Request != "gpus/single" {
		t.Errorf("allocation results = %+v, want one device for gpus/single", got)
	}
}

func TestSliceUpdatedByTheDriverLetsTheSchedulerTakeThePreferredAlternative(t *testing.T) {
	testCluster.DumpLogsOnFailure(t)
	ctx := t.Context()
	client := testCluster.Client()
	fleet := applyFleet(t, minimalFleet, "update")
	node := fleet.NodeName("gpu-node-1")
	ns := testCluster.Namespace(t, "update-", nil)

	// Both GPUs move behind one PCIe root: the pair now satisfies the constraint.
	if _, err := fleet.UpdateSlice(ctx, "gpu-node-1-gpu.nvidia.com", func(s *resourceapi.ResourceSlice) {
		for i := range s.Spec.Devices {
			s.Spec.Devices[i].Attributes["resource.kubernetes.io/pcieRoot"] = resourceapi.DeviceAttribute{StringValue: new("pci0000:00")}
		}
		s.Spec.Pool.Generation++
	}); err != nil {
		t.Fatalf("update slice: %v", err)
	}
	if _, err := client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, gpuTemplate(ns), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create template: %v", err)
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, claimPod(ns, "app", "gpus", node), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	_, claim := allocatedClaim(t, ns, "app", 60*time.Second)
	results := claim.Status.Allocation.Devices.Results
	if len(results) != 2 || results[0].Request != "gpus/pair" || results[1].Request != "gpus/pair" {
		t.Errorf("allocation results = %+v, want both GPUs for gpus/pair", results)
	}
}

func TestWebhookIsCalledForPodsInOptedInNamespacesOnly(t *testing.T) {
	testCluster.DumpLogsOnFailure(t)
	ctx := t.Context()
	client := testCluster.Client()

	// A stand-in webhook that labels every pod it sees.
	var calls atomic.Int32
	decoder := admission.NewDecoder(scheme.Scheme)
	hook, err := testCluster.ServeWebhook(ctx, "/mutate-pods", &admission.Webhook{
		Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
			calls.Add(1)
			var pod corev1.Pod
			if err := decoder.Decode(req, &pod); err != nil {
				return admission.Errored(http.StatusBadRequest, err)
			}
			mutated := pod.DeepCopy()
			if mutated.Labels == nil {
				mutated.Labels = map[string]string{}
			}
			mutated.Labels["e2e.claimbridge.io/mutated"] = "true"
			raw, err := json.Marshal(mutated)
			if err != nil {
				return admission.Errored(http.StatusInternalServerError, err)
			}
			return admission.PatchResponseFromRaw(req.Object.Raw, raw)
		}),
	})
	if err != nil {
		t.Fatalf("serve webhook: %v", err)
	}

	const name = "harness-selftest"
	hook.Name = name
	hook.FailurePolicy = admissionregistrationv1.Fail // a broken TLS setup must show, not be ignored
	if _, err := testCluster.InstallWebhook(ctx, hook); err != nil {
		t.Fatalf("install webhook: %v", err)
	}
	t.Cleanup(func() {
		if err := testCluster.RemoveWebhook(context.Background(), name); err != nil {
			t.Errorf("remove webhook: %v", err)
		}
	})

	optedIn := testCluster.Namespace(t, "webhook-on-", map[string]string{cluster.ModeLabel: "enforce"})
	optedOut := testCluster.Namespace(t, "webhook-off-", nil)
	pod := func(ns string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
		}
	}
	// The apiserver learns about new webhook configurations from an informer.
	eventually(t, 30*time.Second, "webhook in effect", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(optedIn).Create(ctx, pod(optedIn), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return p.Labels["e2e.claimbridge.io/mutated"] == "true", nil
	})

	before := calls.Load()
	out, err := client.CoreV1().Pods(optedOut).Create(ctx, pod(optedOut), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod in opted-out namespace: %v", err)
	}
	if _, ok := out.Labels["e2e.claimbridge.io/mutated"]; ok || calls.Load() != before {
		t.Errorf("webhook saw a pod of an opted-out namespace (labels %v, calls %d → %d)", out.Labels, before, calls.Load())
	}
	in, err := client.CoreV1().Pods(optedIn).Create(ctx, pod(optedIn), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod in opted-in namespace: %v", err)
	}
	if in.Labels["e2e.claimbridge.io/mutated"] != "true" {
		t.Errorf("pod of an opted-in namespace has labels %v, want the webhook's label", in.Labels)
	}

	// kube-system is excluded even when it carries the mode label.
	setModeLabel := func(ctx context.Context, value *string) error {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{cluster.ModeLabel: value}}})
		_, err := client.CoreV1().Namespaces().Patch(ctx, metav1.NamespaceSystem, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	if err := setModeLabel(ctx, new("enforce")); err != nil {
		t.Fatalf("label kube-system: %v", err)
	}
	t.Cleanup(func() {
		if err := setModeLabel(context.Background(), nil); err != nil {
			t.Errorf("unlabel kube-system: %v", err)
		}
	})
	before = calls.Load()
	sys, err := client.CoreV1().Pods(metav1.NamespaceSystem).Create(ctx, pod(metav1.NamespaceSystem), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run pod in kube-system: %v", err)
	}
	if _, ok := sys.Labels["e2e.claimbridge.io/mutated"]; ok || calls.Load() != before {
		t.Errorf("webhook saw a kube-system pod (labels %v, calls %d → %d)", sys.Labels, before, calls.Load())
	}
}

func TestEveryShippedFleetIsAcceptedByTheAPIServer(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := filepath.Glob(filepath.Join(root, "examples", "fleets", "*"))
	if err != nil || len(dirs) == 0 {
		t.Skipf("no shipped fleets under examples/fleets (%v)", err)
	}
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			testCluster.DumpLogsOnFailure(t)
			want, err := cluster.ReadFleet(dir)
			if err != nil {
				t.Fatalf("read fleet: %v", err)
			}
			fleet := applyFleet(t, dir, "ship-"+filepath.Base(dir))
			got := fleet.Published
			if len(got.Nodes) != len(want.Nodes) || len(got.ResourceSlices) != len(want.ResourceSlices) ||
				len(got.ResourceClaims) != len(want.ResourceClaims) || len(got.DeviceTaintRules) != len(want.DeviceTaintRules) {
				t.Errorf("published %d nodes, %d slices, %d claims, %d taint rules; want %d, %d, %d, %d",
					len(got.Nodes), len(got.ResourceSlices), len(got.ResourceClaims), len(got.DeviceTaintRules),
					len(want.Nodes), len(want.ResourceSlices), len(want.ResourceClaims), len(want.DeviceTaintRules))
			}
		})
	}
}
