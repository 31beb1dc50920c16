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

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/vendortruth"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// memoryPolicy is the default policy with a share a quarter of a GPU's
// memory (memoryShares: 4) where GPUs are shared by memory.
const memoryPolicy = `apiVersion: claimbridge.io/v1alpha1
kind: TranslationPolicy
metadata:
  name: memory
spec:
  profiles: [nvidia]
  memoryShares:
  - families: [nvidia-gpu]
    shares: 4
`

// memoryFleet is one node with one A100 (the driver's own device,
// vendortruth a100) as the NVIDIA DRA driver publishes it with
// --consumable-shares=mode (consumable_shares.go, applyConsumableShares):
// multiple allocations, no shares capacity, and its memory requested all
// of it by default (memory) or none (unlimited), 1Mi steps.
func memoryFleet(t *testing.T, mode string) *feasibility.Inventory {
	t.Helper()
	inv := sharedFleet(t)
	whole, _, err := vendortruth.Devices("a100")
	if err != nil {
		t.Fatal(err)
	}
	d := *whole[0].DeepCopy()
	d.AllowMultipleAllocations = ptr.To(true)
	mem := d.Capacity["memory"].Value
	mib := resource.NewQuantity(mem.Value()>>20<<20, resource.BinarySI)
	def, least := resource.NewQuantity(0, resource.DecimalSI), resource.NewQuantity(0, resource.DecimalSI)
	if mode == "memory" {
		def, least = ptr.To(mib.DeepCopy()), resource.NewQuantity(1<<20, resource.BinarySI)
	}
	d.Capacity["memory"] = resourceapi.DeviceCapacity{Value: *mib, RequestPolicy: &resourceapi.CapacityRequestPolicy{
		Default:    def,
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: least, Max: mib, Step: ptr.To(resource.MustParse("1Mi"))},
	}}
	inv.Nodes = inv.Nodes[:1]
	inv.Nodes[0].Name = "gpu-0"
	inv.Slices = inv.Slices[:1]
	inv.Slices[0].Spec.NodeName = ptr.To("gpu-0")
	inv.Slices[0].Spec.Pool.Name = "gpu-0"
	inv.Slices[0].Spec.Devices = []resourceapi.Device{d}
	return inv
}

// memoryBurst decides pods one after the other on the memory fleet, each
// FitsNow holding its devices for the next, as newBurst does.
func memoryBurst(t *testing.T, mode, policy string) *burst {
	inv := memoryFleet(t, mode)
	snap, err := feasibility.NewSnapshot(inv, 1, feasibility.DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	p := translate.DefaultPolicy()
	if policy != "" {
		if p, err = translate.LoadPolicy([]byte(policy)); err != nil {
			t.Fatal(err)
		}
	}
	return &burst{t: t, inv: inv, checker: feasibility.NewChecker(feasibility.Options{}), snap: snap, gen: 1, policy: p}
}

// TestMemoryModeSharesSplitTheGPUsMemory: with --consumable-shares=memory
// and memoryShares 4, a pod that asks for one share asks the claim for a
// quarter of the A100's memory; on the upstream allocator four such
// claims share the one GPU, each consuming that memory, and the fifth
// waits. A whole GPU then waits too (all its memory is taken), and never
// takes a share's place.
func TestMemoryModeSharesSplitTheGPUsMemory(t *testing.T) {
	b := memoryBurst(t, "memory", memoryPolicy)
	mem := b.inv.Slices[0].Spec.Devices[0].Capacity["memory"].Value
	quarter := mem.Value() / 4 >> 20 << 20
	for i := range 5 {
		d := b.decide(sharePod(fmt.Sprintf("s-%d", i)))
		if d.Outcome != reason.OutcomeTranslate {
			t.Fatalf("pod %d: %s (%s: %s), want Translate", i, d.Outcome, d.Decisive.Code, d.Decisive.Message)
		}
		req := d.Translation.Template.Spec.Spec.Devices.Requests[0]
		if n := len(req.FirstAvailable); req.Exactly == nil && n == 0 {
			t.Fatalf("pod %d: request %+v", i, req)
		}
		if got := templateMemory(req); got != quarter {
			t.Fatalf("pod %d: the template asks for %d bytes of memory, want a quarter of the GPU's, %d", i, got, quarter)
		}
		if i < 4 {
			if d.Verdict.Kind != feasibility.FitsNow || len(d.Verdict.Results) != 1 || d.Verdict.Results[0].Device != "gpu-0" || d.Verdict.Results[0].ShareID == nil {
				t.Fatalf("pod %d: %s %+v, want FitsNow, a share of gpu-0", i, d.Verdict.Kind, d.Verdict.Results)
			}
			if q := d.Verdict.Results[0].ConsumedCapacity["memory"]; q.Value() != quarter {
				t.Errorf("pod %d: consumed memory %s, want %d", i, q.String(), quarter)
			}
			continue
		}
		if d.Verdict.Kind != feasibility.FitsWhenFree {
			t.Errorf("pod %d: %s, want FitsWhenFree: four claims hold the GPU's memory", i, d.Verdict.Kind)
		}
	}
	whole := b.decide(builderPod("w", "nvidia.com/gpu"))
	if whole.Verdict == nil || whole.Verdict.Kind != feasibility.FitsWhenFree {
		t.Errorf("a whole GPU beside four shares: %+v, want FitsWhenFree", whole.Verdict)
	}
}

// TestMemoryModeWholeGPUHoldsItAlone: in memory mode a whole GPU asks for
// no memory, so takes all of it, and a share then waits.
func TestMemoryModeWholeGPUHoldsItAlone(t *testing.T) {
	b := memoryBurst(t, "memory", memoryPolicy)
	if w := b.decide(builderPod("w", "nvidia.com/gpu")); w.Verdict == nil || w.Verdict.Kind != feasibility.FitsNow {
		t.Fatalf("a whole GPU: %+v (%s)", w.Verdict, w.Decisive.Message)
	}
	if s := b.decide(sharePod("s")); s.Verdict == nil || s.Verdict.Kind != feasibility.FitsWhenFree {
		t.Errorf("a share beside a whole GPU: %+v, want FitsWhenFree", s.Verdict)
	}
}

// TestMemoryModeWithoutMemorySharesStays: without memoryShares nothing says
// how much a share takes, and one that asks for nothing would take the
// whole GPU: the pod stays as submitted, and the reason names the field.
func TestMemoryModeWithoutMemorySharesStays(t *testing.T) {
	b := memoryBurst(t, "memory", "")
	d := b.decide(sharePod("s"))
	if d.Outcome != reason.OutcomeKeepLegacy || d.Decisive.Code != translate.ReasonSharesUnavailable {
		t.Fatalf("%s (%s: %s), want KeepLegacy for SharesUnavailable", d.Outcome, d.Decisive.Code, d.Decisive.Message)
	}
	if !containsAll(d.Decisive.Message, "memoryShares", "--consumable-shares=memory") {
		t.Errorf("reason %q does not say what to set", d.Decisive.Message)
	}
}

// TestUnlimitedModeSharesAskForNothing: with --consumable-shares=unlimited
// and no memoryShares, six shares all take the one GPU (the mode's own
// meaning), and a whole GPU keeps off it.
func TestUnlimitedModeSharesAskForNothing(t *testing.T) {
	b := memoryBurst(t, "unlimited", "")
	for i := range 6 {
		d := b.decide(sharePod(fmt.Sprintf("s-%d", i)))
		if d.Outcome != reason.OutcomeTranslate || d.Verdict == nil || d.Verdict.Kind != feasibility.FitsNow || d.Verdict.Results[0].Device != "gpu-0" {
			t.Fatalf("pod %d: %s %+v (%s), want FitsNow on gpu-0", i, d.Outcome, d.Verdict, d.Decisive.Message)
		}
	}
	if w := b.decide(builderPod("w", "nvidia.com/gpu")); w.Outcome == reason.OutcomeTranslate && w.Verdict != nil && w.Verdict.Kind == feasibility.FitsNow {
		t.Errorf("a whole GPU was placed on a GPU any number of claims share: %+v", w.Verdict)
	}
}

// templateMemory is the memory the request's (first) alternative asks for.
func templateMemory(r resourceapi.DeviceRequest) int64 {
	caps := func(c *resourceapi.CapacityRequirements) int64 {
		if c == nil {
			return 0
		}
		q := c.Requests["memory"]
		return q.Value()
	}
	if r.Exactly != nil {
		return caps(r.Exactly.Capacity)
	}
	return caps(r.FirstAvailable[0].Capacity)
}

func builderPod(name, res string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "research"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceName(res): resource.MustParse("1")}},
	}}}}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
