package decide_test

import (
	"fmt"
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
)

// vendorAMDFleet is built from the AMD DRA driver's devices as AMD published
// them (vendortruth amd-mi300x, amd-mi300x-cpx): each node's devices are
// copies of the vendor's device, named gpu-<i>, behind the AMD GPU
// Operator's class gpu.amd.com. nodes maps a node name to how many whole
// GPUs and how many partitions it has.
func vendorAMDFleet(t *testing.T, nodes map[string][2]int) *feasibility.Inventory {
	t.Helper()
	vendor := func(model string) resourceapi.Device {
		devs, ok, err := vendortruth.Devices("amd-" + model)
		if err != nil || !ok || len(devs) != 1 {
			t.Fatalf("vendortruth %s: %d devices, %v, %v", model, len(devs), ok, err)
		}
		return devs[0]
	}
	whole, partition := vendor("mi300x"), vendor("mi300x-cpx")
	inv := &feasibility.Inventory{
		Classes: []*resourceapi.DeviceClass{{ObjectMeta: metav1.ObjectMeta{Name: "gpu.amd.com"}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == 'gpu.amd.com'`}}},
		}}},
		PodsListed: true,
	}
	for _, name := range []string{"mi300x-0", "mi300x-cpx-0", "mixed-0"} {
		n, ok := nodes[name]
		if !ok {
			continue
		}
		var devices []resourceapi.Device
		for i := range n[0] + n[1] {
			d := *partition.DeepCopy()
			if i < n[0] {
				d = *whole.DeepCopy()
			}
			d.Name = fmt.Sprintf("gpu-%d", i)
			devices = append(devices, d)
		}
		inv.Nodes = append(inv.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("96"), corev1.ResourcePods: resource.MustParse("110")}}})
		inv.Slices = append(inv.Slices, &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-gpu.amd.com"}, Spec: resourceapi.ResourceSliceSpec{
			Driver: "gpu.amd.com", NodeName: ptr.To(name), Pool: resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1},
			Devices: devices}})
	}
	return inv
}

func amdBurst(t *testing.T, nodes map[string][2]int) *burst {
	inv := vendorAMDFleet(t, nodes)
	snap, err := feasibility.NewSnapshot(inv, 1, feasibility.DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	return &burst{t: t, inv: inv, checker: feasibility.NewChecker(feasibility.Options{}), snap: snap, gen: 1}
}

// deviceType is the type the allocated device publishes.
func (b *burst) deviceType(r resourceapi.DeviceRequestAllocationResult) string {
	for _, s := range b.inv.Slices {
		if s.Spec.Pool.Name != r.Pool {
			continue
		}
		for _, d := range s.Spec.Devices {
			if d.Name == r.Device {
				return *d.Attributes["type"].StringValue
			}
		}
	}
	b.t.Fatalf("no device %s/%s", r.Pool, r.Device)
	return ""
}

func gpuPodAMD(name string, n string, selector ...string) *corev1.Pod {
	w := builders.MakePod(name, "ml").Container("rocm").Limit("amd.com/gpu", n)
	for i := 0; i+1 < len(selector); i += 2 {
		w = w.NodeSelector(selector[i], selector[i+1])
	}
	return w.Obj()
}

// TestAMDPartitionsServeAMDGPU: on a node of whole MI300X and a node of
// one MI300X in CPX mode (8 partitions), the AMD driver's own devices, a
// pod that asks for amd.com/gpu lands where the device plugin would have
// put it — a whole GPU or a partition — and the upstream allocator serves
// its claim there.
func TestAMDPartitionsServeAMDGPU(t *testing.T) {
	cases := map[string]struct {
		pod      *corev1.Pod
		wantNode string
		wantType string
		// wantLegacy: how many nodes the pod as submitted could land on
		// (the placement check's legacy view), which its translation
		// lands on too.
		wantLegacy int
	}{
		"a GPU lands on both nodes and is served a whole GPU first": {
			pod: gpuPodAMD("gpu", "1"), wantNode: "mi300x-0", wantType: "amdgpu", wantLegacy: 2,
		},
		"a pod on the CPX node is served a partition": {
			pod: gpuPodAMD("cpx", "1", "amd.com/gpu.compute-memory-partition", "cpx_nps1"), wantNode: "mi300x-cpx-0", wantType: "amdgpu-partition", wantLegacy: 1,
		},
		"more GPUs than the whole ones are partitions": {
			pod: gpuPodAMD("gpu-4", "4"), wantNode: "mi300x-cpx-0", wantType: "amdgpu-partition", wantLegacy: 1,
		},
		"a product-name pod is served on the vendor's whole GPU": {
			pod: gpuPodAMD("product", "1", "amd.com/gpu.product-name", "AMD_Instinct_MI300X_OAM"), wantNode: "mi300x-0", wantType: "amdgpu", wantLegacy: 2,
		},
		"a partition's memory as the labeller writes it selects the partitions": {
			pod: gpuPodAMD("vram", "1", "amd.com/gpu.vram", "24G"), wantNode: "mi300x-cpx-0", wantType: "amdgpu-partition", wantLegacy: 1,
		},
		"the device ID, which a partition carries from its GPU, selects partitions": {
			pod: gpuPodAMD("device-id", "2", "beta.amd.com/gpu.device-id", "74a1"), wantNode: "mi300x-cpx-0", wantType: "amdgpu-partition", wantLegacy: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := amdBurst(t, map[string][2]int{"mi300x-0": {1, 0}, "mi300x-cpx-0": {0, 8}})
			d := b.decide(tc.pod)
			if d.Outcome != reason.OutcomeTranslate {
				t.Fatalf("%s (%s: %s), want Translate", d.Outcome, d.Decisive.Code, d.Decisive.Message)
			}
			if d.Placement == nil || !d.Placement.Equal() || d.Placement.Legacy != tc.wantLegacy {
				t.Fatalf("placement %+v, want equal on %d nodes", d.Placement, tc.wantLegacy)
			}
			if d.Verdict.Kind != feasibility.FitsNow || d.Verdict.Node != tc.wantNode {
				t.Fatalf("verdict %s on %s, want FitsNow on %s", d.Verdict.Kind, d.Verdict.Node, tc.wantNode)
			}
			for _, r := range d.Verdict.Results {
				if got := b.deviceType(r); got != tc.wantType {
					t.Errorf("allocated %s of type %s, want %s", r.Device, got, tc.wantType)
				}
			}
		})
	}
}

// TestAMDBurstTakesWholeGPUThenPartitions: one whole MI300X and one in CPX
// mode, nine one-GPU pods one after the other, each holding what the
// allocator gave it: all nine are served (one whole GPU, eight
// partitions), as the device plugin's nine amd.com/gpu would have served
// them; the tenth waits.
func TestAMDBurstTakesWholeGPUThenPartitions(t *testing.T) {
	b := amdBurst(t, map[string][2]int{"mi300x-0": {1, 0}, "mi300x-cpx-0": {0, 8}})
	types := map[string]int{}
	for i := range 9 {
		d := b.decide(gpuPodAMD(fmt.Sprintf("p-%d", i), "1"))
		if d.Outcome != reason.OutcomeTranslate || d.Verdict.Kind != feasibility.FitsNow {
			t.Fatalf("pod %d: %s, %s (%s), want Translate and FitsNow", i, d.Outcome, d.Verdict.Kind, d.Decisive.Message)
		}
		types[b.deviceType(d.Verdict.Results[0])]++
	}
	if types["amdgpu"] != 1 || types["amdgpu-partition"] != 8 {
		t.Errorf("served %v, want 1 amdgpu and 8 amdgpu-partition", types)
	}
	if d := b.decide(gpuPodAMD("p-9", "1")); d.Verdict == nil || d.Verdict.Kind != feasibility.FitsWhenFree || d.Decisive.Code != decide.ReasonDRABusyWaiting {
		t.Errorf("the tenth: %+v (%s), want FitsWhenFree: every GPU and partition is held", d.Verdict, d.Decisive.Code)
	}
}

// TestAMDGPUsOfOneRequestAreOfOneType: on a node whose driver publishes a
// whole GPU beside partitions (a GPU in SPX mode, one in CPX), a request of
// two devices gets two partitions, never a GPU and a partition (the amd
// profile's same-type alignment); a request of nine, more than either kind,
// is not served there.
func TestAMDGPUsOfOneRequestAreOfOneType(t *testing.T) {
	b := amdBurst(t, map[string][2]int{"mixed-0": {1, 8}})
	d := b.decide(gpuPodAMD("two", "2"))
	if d.Outcome != reason.OutcomeTranslate || d.Verdict.Kind != feasibility.FitsNow || len(d.Verdict.Results) != 2 {
		t.Fatalf("%s, %+v (%s), want two devices FitsNow", d.Outcome, d.Verdict, d.Decisive.Message)
	}
	if a, c := b.deviceType(d.Verdict.Results[0]), b.deviceType(d.Verdict.Results[1]); a != c {
		t.Errorf("allocated a %s and a %s, want two of one type", a, c)
	}
	if d := b.decide(gpuPodAMD("nine", "9")); d.Outcome == reason.OutcomeTranslate {
		t.Errorf("nine devices: %s (%s), want them not served by one whole GPU and eight partitions", d.Outcome, d.Decisive.Message)
	}
}
