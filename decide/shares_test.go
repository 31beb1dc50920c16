package decide_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/internal/testing/vendortruth"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// sharedFleet is a node with one A100 that the NVIDIA DRA driver publishes
// with 4 consumable shares (the driver's own device, vendortruth
// a100-shared) and a node with one A100 it publishes whole (a100), with
// the driver's gpu.nvidia.com class.
func sharedFleet(t *testing.T) *feasibility.Inventory {
	t.Helper()
	shared, _, err := vendortruth.Devices("a100-shared")
	if err != nil {
		t.Fatal(err)
	}
	whole, _, err := vendortruth.Devices("a100")
	if err != nil {
		t.Fatal(err)
	}
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourcePods: resource.MustParse("110")}}}
	}
	slice := func(n string, d resourceapi.Device) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: n + "-gpu.nvidia.com"}, Spec: resourceapi.ResourceSliceSpec{
			Driver: "gpu.nvidia.com", NodeName: ptr.To(n), Pool: resourceapi.ResourcePool{Name: n, Generation: 1, ResourceSliceCount: 1},
			Devices: []resourceapi.Device{d}}}
	}
	return &feasibility.Inventory{
		Nodes:  []*corev1.Node{node("shared-0"), node("whole-0")},
		Slices: []*resourceapi.ResourceSlice{slice("shared-0", shared[0]), slice("whole-0", whole[0])},
		Classes: []*resourceapi.DeviceClass{{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`}}},
		}}},
		PodsListed: true,
	}
}

// burst decides pods one after the other as the webhook does in a burst:
// each pod translated and FitsNow holds the devices the allocator picked
// for the next (the reservation, feasibility.Snapshot.Holding).
type burst struct {
	t       *testing.T
	inv     *feasibility.Inventory
	checker *feasibility.Checker
	snap    *feasibility.Snapshot
	gen     uint64
	policy  *translate.Policy // default policy when nil
}

func newBurst(t *testing.T) *burst {
	inv := sharedFleet(t)
	snap, err := feasibility.NewSnapshot(inv, 1, feasibility.DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	return &burst{t: t, inv: inv, checker: feasibility.NewChecker(feasibility.Options{}), snap: snap, gen: 1}
}

func (b *burst) decide(pod *corev1.Pod) *decide.Decision {
	b.t.Helper()
	p := b.policy
	if p == nil {
		p = translate.DefaultPolicy()
	}
	d, err := decide.Pod(b.t.Context(), decide.Input{Pod: pod, Policy: p, Classes: b.inv.Classes, Checker: b.checker, Snapshot: b.snap})
	if err != nil {
		b.t.Fatal(err)
	}
	if d.Outcome == reason.OutcomeTranslate && d.Verdict != nil && d.Verdict.Kind == feasibility.FitsNow {
		b.gen++
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
			Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: d.Verdict.Results}}}}
		b.snap = b.snap.Holding([]*resourceapi.ResourceClaim{claim}, b.gen)
	}
	return d
}

func sharePod(name string) *corev1.Pod {
	return builders.MakePod(name, "inference").Container("serve").Limit("nvidia.com/gpu.shared", "1").Obj()
}

// TestSixSharesOfAGPUTimeSlicedFourWays: six pods that each ask for one
// share (nvidia.com/gpu.shared: 1) on a fleet of one GPU shared 4 ways and
// one whole GPU. Each is translated into one share; the placement check
// finds that the translation lands where the device plugin's 4 replicas
// were (the shared node, not the whole GPU's); the allocator gives the
// first 4 one share each of the shared GPU, with a share ID; the 5th and
// 6th wait for a share (DRABusyWaiting), never taking the whole GPU.
func TestSixSharesOfAGPUTimeSlicedFourWays(t *testing.T) {
	b := newBurst(t)
	for i := range 6 {
		d := b.decide(sharePod(fmt.Sprintf("s-%d", i)))
		if d.Outcome != reason.OutcomeTranslate {
			t.Fatalf("pod %d: %s (%s: %s), want Translate", i, d.Outcome, d.Decisive.Code, d.Decisive.Message)
		}
		if d.Placement == nil || !d.Placement.Equal() || d.Placement.Legacy != 1 {
			t.Fatalf("pod %d: placement %+v, want equal on the one shared node", i, d.Placement)
		}
		switch {
		case i < 4:
			if d.Verdict.Kind != feasibility.FitsNow || d.Verdict.Node != "shared-0" || len(d.Verdict.Results) != 1 {
				t.Fatalf("pod %d: verdict %s on %s, want FitsNow on shared-0", i, d.Verdict.Kind, d.Verdict.Node)
			}
			r := d.Verdict.Results[0]
			if r.Device != "gpu-0" || r.ShareID == nil || !consumes(r, 1) {
				t.Errorf("pod %d: result %+v, want one share of gpu-0 with a share ID", i, r)
			}
		default:
			if d.Verdict.Kind != feasibility.FitsWhenFree || d.Decisive.Code != decide.ReasonDRABusyWaiting {
				t.Errorf("pod %d: %s, decisive %s, want FitsWhenFree and DRABusyWaiting: the GPU's 4 shares are taken", i, d.Verdict.Kind, d.Decisive.Code)
			}
		}
	}
}

// TestAWholeGPUNeverTakesAShare: a pod that asks for one whole GPU takes
// the GPU published whole first; a second takes all 4 shares of the shared
// GPU; after that a share finds none free. And once a share is taken, a
// whole GPU no longer fits the shared GPU.
func TestAWholeGPUNeverTakesAShare(t *testing.T) {
	whole := func(name string) *corev1.Pod {
		return builders.MakePod(name, "research").Container("train").Limit("nvidia.com/gpu", "1").Obj()
	}
	t.Run("whole, whole, then a share", func(t *testing.T) {
		b := newBurst(t)
		first := b.decide(whole("w-0"))
		if first.Outcome != reason.OutcomeTranslate || first.Verdict.Node != "whole-0" {
			t.Fatalf("first whole GPU: %s on %v (%s), want the whole GPU of whole-0", first.Outcome, first.Verdict, first.Decisive.Message)
		}
		second := b.decide(whole("w-1"))
		if second.Outcome != reason.OutcomeTranslate || second.Verdict.Node != "shared-0" {
			t.Fatalf("second whole GPU: %s (%s), want all shares of shared-0", second.Outcome, second.Decisive.Message)
		}
		r := second.Verdict.Results[0]
		if !strings.HasSuffix(r.Request, "/4-shares") || !consumes(r, 4) {
			t.Errorf("second whole GPU: %+v, want all 4 shares of gpu-0 (alternative 4-shares)", r)
		}
		if s := b.decide(sharePod("s-0")); s.Verdict == nil || s.Verdict.Kind != feasibility.FitsWhenFree {
			t.Errorf("a share after a whole GPU took every share: %+v, want FitsWhenFree", s.Verdict)
		}
	})
	t.Run("a share, then two whole GPUs", func(t *testing.T) {
		b := newBurst(t)
		if s := b.decide(sharePod("s-0")); s.Verdict == nil || s.Verdict.Kind != feasibility.FitsNow {
			t.Fatalf("a share: %+v", s.Verdict)
		}
		if w := b.decide(whole("w-0")); w.Verdict == nil || w.Verdict.Node != "whole-0" {
			t.Fatalf("a whole GPU: %+v, want whole-0", w.Verdict)
		}
		if w := b.decide(whole("w-1")); w.Verdict == nil || w.Verdict.Kind != feasibility.FitsWhenFree {
			t.Errorf("a whole GPU where the shared GPU has 3 shares left: %+v, want FitsWhenFree (never the 3 shares)", w.Verdict)
		}
	})
}

// TestTwoSharesInAContainerNeedTwoGPUs: the device plugin serves
// nvidia.com/gpu.shared: 2 from the one GPU's 4 replicas, a claim needs two
// distinct shared GPUs: the placement check sees the node lost and keeps
// the pod as submitted.
func TestTwoSharesInAContainerNeedTwoGPUs(t *testing.T) {
	b := newBurst(t)
	d := b.decide(builders.MakePod("two", "inference").Container("serve").Limit("nvidia.com/gpu.shared", "2").Obj())
	if d.Outcome != reason.OutcomeKeepLegacy || d.Decisive.Code != decide.ReasonPlacementDiffers || d.Placement == nil || len(d.Placement.Lost) != 1 {
		t.Errorf("%s (%s: %s), placement %+v; want KeepLegacy for PlacementDiffers, shared-0 lost", d.Outcome, d.Decisive.Code, d.Decisive.Message, d.Placement)
	}
}

// consumes: the result consumed n shares of its device.
func consumes(r resourceapi.DeviceRequestAllocationResult, n int64) bool {
	q, ok := r.ConsumedCapacity["shares"]
	return ok && q.Value() == n
}
