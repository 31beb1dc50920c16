package inventory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
	"github.com/claimbridge/claimbridge/internal/testing/informertest"
	"github.com/claimbridge/claimbridge/inventory"
)

// A pod bound, resized, finished or deleted changes what its node has free
// in the next snapshot, and only that: the fleet snapshot is not rebuilt,
// the usage of the node the pod event named is summed again.
func TestPodEventsChangeTheUsageOfTheirNode(t *testing.T) {
	gpuNode := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("1"),
		}}}
	}
	pod := func(name, node, cpu string) *corev1.Pod {
		p := builders.MakePod(name, "prod").Container("app").Limit("nvidia.com/gpu", "1").Request("cpu", cpu).NodeName(node).Obj()
		p.Status.Phase = corev1.PodRunning
		if node == "" {
			p.Status.Phase = corev1.PodPending
		}
		return p
	}
	// gpu-1's device plugin GPU is taken from the start; gpu-0's is free.
	inv, client := informertest.Start(t, gpuNode("gpu-0"), gpuNode("gpu-1"), pod("busy", "gpu-1", "1"))
	asks := pod("asks", "", "1")
	// The fleet's generation moves with each node added, then once more
	// when the inventory has synced; pod events leave it.
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return inv.FleetGeneration() >= 3, nil
	}); err != nil {
		t.Fatalf("fleet generation %d, want 3: %v", inv.FleetGeneration(), err)
	}
	fleetGen := inv.FleetGeneration()
	expect := func(step string, want feasibility.LegacyFit) {
		t.Helper()
		var got feasibility.LegacyFit
		if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			snap, err := inv.Snapshot(time.Now())
			if err != nil {
				return false, err
			}
			got = snap.LegacyFitsNow(asks)
			return got == want, nil
		}); err != nil {
			t.Fatalf("%s: legacy fit %+v, want %+v: %v", step, got, want, err)
		}
	}
	expect("at the start", feasibility.LegacyFit{Known: true, Node: "gpu-0", Nodes: 1})

	pods := client.CoreV1().Pods("prod")
	a, err := pods.Create(t.Context(), pod("a", "", "1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("a pod created, not bound", feasibility.LegacyFit{Known: true, Node: "gpu-0", Nodes: 1})
	a.Spec.NodeName, a.Status.Phase = "gpu-0", corev1.PodRunning
	if a, err = pods.Update(t.Context(), a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("the pod bound to gpu-0", feasibility.LegacyFit{Known: true})
	a.Status.Phase = corev1.PodSucceeded
	if _, err = pods.UpdateStatus(t.Context(), a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("the pod finished", feasibility.LegacyFit{Known: true, Node: "gpu-0", Nodes: 1})

	b, err := pods.Create(t.Context(), pod("b", "gpu-0", "1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("a pod created bound to gpu-0", feasibility.LegacyFit{Known: true})
	if err := pods.Delete(t.Context(), "busy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("the pod of gpu-1 deleted", feasibility.LegacyFit{Known: true, Node: "gpu-1", Nodes: 1})
	// A CPU pod on gpu-1, resized in place to every CPU of the node,
	// leaves no room for the CPU the pod asks besides its GPU.
	c, err := pods.Create(t.Context(), builders.MakePod("c", "prod").Container("app").Request("cpu", "1").NodeName("gpu-1").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("a CPU pod bound to gpu-1", feasibility.LegacyFit{Known: true, Node: "gpu-1", Nodes: 1})
	c.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("4")
	if _, err = pods.Update(t.Context(), c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("the CPU pod resized to every CPU of gpu-1", feasibility.LegacyFit{Known: true})
	if err := pods.Delete(t.Context(), b.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("the pod of gpu-0 deleted", feasibility.LegacyFit{Known: true, Node: "gpu-0", Nodes: 1})

	if got := inv.FleetGeneration(); got != fleetGen {
		t.Errorf("the fleet's generation moved from %d to %d: pod events rebuilt the fleet snapshot", fleetGen, got)
	}
}

// A fleet whose snapshot is slow to build is built anew in the background:
// while the build runs, the checks read the snapshot before, kept up to
// date with the pods; once it is done, the next snapshot is the new fleet
// with the pods bound since the build listed them.
func TestASlowFleetIsBuiltInTheBackground(t *testing.T) {
	t.Run("the pods changed during the build summed when it is taken", func(t *testing.T) { slowFleet(t, false) })
	t.Run("the pods changed during the build summed by the build", func(t *testing.T) { slowFleet(t, true) })
}

func slowFleet(t *testing.T, catchUp bool) {
	if catchUp {
		inventory.SetCatchUpNodes(t, 0)
	}
	gpuNode := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("1"),
		}}}
	}
	asks := builders.MakePod("asks", "prod").Container("app").Limit("nvidia.com/gpu", "1").Obj()
	listed, release := make(chan struct{}, 1), make(chan struct{})
	client := fake.NewClientset(gpuNode("gpu-0"), gpuNode("gpu-1"))
	inv := inventory.New(client, inventory.Options{MinRebuildInterval: time.Nanosecond,
		// Every build after the first is slow enough to go to the background.
		BackgroundBuild: time.Nanosecond,
		// The build has listed the fleet when it prepares the snapshot; it
		// waits there until the test lets it finish.
		Prepare: func(context.Context, *feasibility.Snapshot) {
			listed <- struct{}{}
			<-release
		}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- inv.Start(ctx) }()
	t.Cleanup(func() {
		close(release)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("inventory: %v", err)
		}
	})
	fits := func(step string, want int) {
		t.Helper()
		got := -1
		if err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			snap, err := inv.Snapshot(time.Now())
			if err != nil {
				return false, nil
			}
			got = snap.LegacyFitsNow(asks).Nodes
			return got == want, nil
		}); err != nil {
			t.Fatalf("%s: %d nodes serve the pod, want %d", step, got, want)
		}
	}
	fits("at the start", 2)

	if _, err := client.CoreV1().Nodes().Create(t.Context(), gpuNode("gpu-2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The next snapshot after the informer has the change starts a build.
	buildStarts := func(step string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			_, _ = inv.Snapshot(time.Now())
			select {
			case <-listed:
				return
			case <-deadline:
				t.Fatalf("%s: no fleet build started", step)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	buildStarts("a node added")
	// The build has listed the fleet; a pod bound now is not in it.
	bound := builders.MakePod("bound", "prod").Container("app").Limit("nvidia.com/gpu", "1").NodeName("gpu-0").Obj()
	bound.Status.Phase = corev1.PodRunning
	if _, err := client.CoreV1().Pods("prod").Create(t.Context(), bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fits("a pod bound while the build runs, on the fleet before", 1)
	release <- struct{}{}
	fits("the build done", 2)

	// The pods of more than a sixteenth of the nodes (and more than
	// catchUpNodes: 0 here) changed at once: a build, not an update of
	// their usage in the admission's way.
	other := builders.MakePod("other", "prod").Container("app").Limit("nvidia.com/gpu", "1").NodeName("gpu-1").Obj()
	other.Status.Phase = corev1.PodRunning
	if _, err := client.CoreV1().Pods("prod").Create(t.Context(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !catchUp {
		// Fewer than catchUpNodes: summed at once.
		fits("a pod bound to one node of three", 1)
		return
	}
	buildStarts("a pod bound to one node of three")
	fits("while that build runs, the usage before", 2)
	release <- struct{}{}
	fits("that build done", 1)
}

// A DeviceTaintRule that taints a device keeps it from the snapshot's
// checks, as kube-scheduler's resource slice tracker keeps it from the
// allocator, and its deletion gives the device back.
func TestDeviceTaintRulesApplyToTheSnapshot(t *testing.T) {
	fleet := fleetgen.Synthetic(1) // one DGX H100
	objs := informertest.Objects(&feasibility.Inventory{Nodes: fleet.Nodes, Slices: fleet.Slices, Classes: fleet.Classes})
	var gpus int64
	for _, s := range fleet.Slices {
		if s.Spec.Driver == fleetgen.DriverGPU {
			gpus += int64(len(s.Spec.Devices))
		}
	}
	rule := &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "gpu-0-maintenance"},
		Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To(fleetgen.DriverGPU), Device: ptr.To("gpu-0")},
			Taint:          resourceapi.DeviceTaint{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule},
		}}
	// kube-apiserver serves DeviceTaintRules in v1 (1.37).
	client := fake.NewClientset(append(objs, rule)...)
	client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{GroupVersion: "resource.k8s.io/v1",
		APIResources: []metav1.APIResource{{Name: "resourceslices"}, {Name: "devicetaintrules"}}}}
	inv := inventory.New(client, inventory.Options{MinRebuildInterval: -1})
	go func() { _ = inv.Start(t.Context()) }()
	claims := []*resourceapi.ResourceClaimSpec{{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
		Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: fleetgen.ClassGPU, Count: gpus},
	}}}}}
	checker := feasibility.NewChecker(feasibility.Options{CacheSize: -1, Timeout: 10 * time.Second, Parallelism: 1})
	expect := func(step string, want feasibility.VerdictKind) {
		t.Helper()
		var got feasibility.VerdictKind
		if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			snap, err := inv.Snapshot(time.Now())
			if errors.Is(err, inventory.ErrNotSynced) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			got = checker.Check(t.Context(), snap, builders.MakePod("p", "prod").Obj(), claims).Kind
			return got == want, nil
		}); err != nil {
			t.Fatalf("%s: every GPU of the node: %s, want %s: %v", step, got, want, err)
		}
	}
	expect("gpu-0 tainted NoSchedule", feasibility.NeverFits)
	if err := client.ResourceV1().DeviceTaintRules().Delete(t.Context(), rule.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("the rule deleted", feasibility.FitsNow)
}
