package decide_test

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// fabricFleet is an 8-GPU NVSwitch node whose Fabric Manager partitions
// pair GPU i with GPU i+4 (partition2), and groups 0-3 and 4-7 (partition4)
// — so that two GPUs next to each other are no partition — as the NVIDIA
// DRA driver v0.5 publishes them with FabricManagerPartitioning
// (gpuModuleID, partition1 … partition8: the id of the partition of each
// size the GPU belongs to); and a 4-GPU node without Fabric Manager.
func fabricFleet() *feasibility.Inventory {
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"), corev1.ResourcePods: resource.MustParse("110")}}}
	}
	gpu := func(i int, fm bool) resourceapi.Device {
		attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type": {StringValue: ptr.To("gpu")}, "productName": {StringValue: ptr.To("NVIDIA H100 80GB HBM3")},
			"uuid": {StringValue: ptr.To("GPU-" + strconv.Itoa(i))},
		}
		if fm {
			attrs["gpuModuleID"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(i + 1))}
			attrs["partition1"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(100 + i))}
			attrs["partition2"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(200 + i%4))}
			attrs["partition4"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(400 + i/4))}
			attrs["partition8"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(800))}
		}
		return resourceapi.Device{Name: "gpu-" + strconv.Itoa(i), Attributes: attrs}
	}
	slice := func(nodeName string, devs []resourceapi.Device) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-gpu.nvidia.com"},
			Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: ptr.To(nodeName),
				Pool: resourceapi.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 1}, Devices: devs}}
	}
	var fm, plain []resourceapi.Device
	for i := range 8 {
		fm = append(fm, gpu(i, true))
	}
	for i := range 4 {
		plain = append(plain, gpu(i, false))
	}
	return &feasibility.Inventory{
		Nodes:  []*corev1.Node{node("hgx-fm-0"), node("pcie-0")},
		Slices: []*resourceapi.ResourceSlice{slice("hgx-fm-0", fm), slice("pcie-0", plain)},
		Classes: []*resourceapi.DeviceClass{{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`}}}}}},
	}
}

// TestAFabricManagerPartitionIsTheClaimsGPUs: with the nvidia-fabric-manager
// profile, GPUs on a Fabric Manager node are allocated as one partition
// (the driver prepares nothing else), end to end through the placement
// check and the allocator; GPUs of a node without Fabric Manager serve as
// before; a count no partition has keeps the pod as submitted.
func TestAFabricManagerPartitionIsTheClaimsGPUs(t *testing.T) {
	fm, err := translate.ProfilePolicy("nvidia", "nvidia-fabric-manager")
	if err != nil {
		t.Fatal(err)
	}
	inv := fabricFleet()
	snap, err := feasibility.NewSnapshot(inv, 1, feasibility.DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	attrs := map[string]map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}
	for _, s := range inv.Slices {
		for _, d := range s.Spec.Devices {
			attrs[s.Spec.Pool.Name+"/"+d.Name] = d.Attributes
		}
	}
	cases := map[string]struct {
		gpus          int64
		wantOutcome   reason.Outcome
		wantDecisive  reason.Code
		wantNode      string
		wantPartition string // the attribute the chosen GPUs share
	}{
		"2 GPUs: one partition of two on the Fabric Manager node": {gpus: 2, wantOutcome: reason.OutcomeTranslate, wantDecisive: decide.ReasonFeasible, wantNode: "hgx-fm-0", wantPartition: "partition2"},
		"4 GPUs: one partition of four":                           {gpus: 4, wantOutcome: reason.OutcomeTranslate, wantDecisive: decide.ReasonFeasible, wantNode: "hgx-fm-0", wantPartition: "partition4"},
		"8 GPUs: the whole board":                                 {gpus: 8, wantOutcome: reason.OutcomeTranslate, wantDecisive: decide.ReasonFeasible, wantNode: "hgx-fm-0", wantPartition: "partition8"},
		"3 GPUs: no partition of three, kept":                     {gpus: 3, wantOutcome: reason.OutcomeKeepLegacy, wantDecisive: translate.ReasonFabricPartitionUnmatched},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: gpuPod(tc.gpus, nil), Policy: fm, Classes: inv.Classes,
				Checker: feasibility.NewChecker(feasibility.Options{}), Snapshot: snap})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.wantOutcome || d.Decisive.Code != tc.wantDecisive {
				t.Fatalf("outcome %s (%s: %s), want %s (%s)", d.Outcome, d.Decisive.Code, d.Decisive.Message, tc.wantOutcome, tc.wantDecisive)
			}
			if tc.wantOutcome != reason.OutcomeTranslate {
				return
			}
			if d.Verdict.Node != tc.wantNode || int64(len(d.Verdict.Results)) != tc.gpus {
				t.Fatalf("verdict on %s with %v, want %d GPUs on %s", d.Verdict.Node, d.Verdict.Results, tc.gpus, tc.wantNode)
			}
			var part *int64
			for _, r := range d.Verdict.Results {
				a := attrs[r.Pool+"/"+r.Device][resourceapi.QualifiedName(tc.wantPartition)]
				if a.IntValue == nil || (part != nil && *part != *a.IntValue) {
					t.Errorf("%s is not in the partition of the others (%s): results %v", r.Device, tc.wantPartition, d.Verdict.Results)
				}
				part = a.IntValue
			}
		})
	}

	// Without Fabric Manager nodes the same claim serves any GPUs, and
	// without the profile a claim would take two GPUs of no partition.
	t.Run("a node without Fabric Manager serves any two GPUs", func(t *testing.T) {
		plain := &feasibility.Inventory{Nodes: inv.Nodes[1:], Slices: inv.Slices[1:], Classes: inv.Classes}
		snap, err := feasibility.NewSnapshot(plain, 1, feasibility.DefaultFeatures())
		if err != nil {
			t.Fatal(err)
		}
		d, err := decide.Pod(t.Context(), decide.Input{Pod: gpuPod(2, nil), Policy: fm, Classes: plain.Classes,
			Checker: feasibility.NewChecker(feasibility.Options{}), Snapshot: snap})
		if err != nil {
			t.Fatal(err)
		}
		if d.Outcome != reason.OutcomeTranslate || d.Verdict.Node != "pcie-0" {
			t.Fatalf("outcome %s on %v (%s: %s), want Translate on pcie-0", d.Outcome, d.Verdict, d.Decisive.Code, d.Decisive.Message)
		}
	})
	t.Run("without the profile two GPUs are no partition", func(t *testing.T) {
		d, err := decide.Pod(t.Context(), decide.Input{Pod: gpuPod(2, nil), Policy: translate.DefaultPolicy(), Classes: inv.Classes,
			Checker: feasibility.NewChecker(feasibility.Options{}), Snapshot: snap})
		if err != nil {
			t.Fatal(err)
		}
		if d.Verdict == nil || d.Verdict.Node != "hgx-fm-0" {
			t.Fatalf("verdict %+v", d.Verdict)
		}
		a, b := attrs["hgx-fm-0/"+d.Verdict.Results[0].Device]["partition2"], attrs["hgx-fm-0/"+d.Verdict.Results[1].Device]["partition2"]
		if *a.IntValue == *b.IntValue {
			t.Errorf("the fixture does not show the difference: %v are one partition anyway", d.Verdict.Results)
		}
	})
}
