package decide_test

import (
	"slices"
	"strings"
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

// numaPolicy maps rdma/hca to one exclusive NIC of dranet and requires the
// GPUs and the NIC of a pod on one NUMA node.
const numaPolicy = `apiVersion: claimbridge.io/v1alpha1
kind: TranslationPolicy
metadata: {name: numa}
spec:
  profiles: [nvidia]
  resources:
  - {name: rdma/hca, family: rdma-nic, deviceClassName: dranet-rdma, requestName: nic}
  alignment:
  - {name: numa, families: [nvidia-gpu, rdma-nic], attribute: resource.kubernetes.io/numaNode, mode: Required}
`

// numaShape is how a driver publishes resource.kubernetes.io/numaNode.
type numaShape int

const (
	numaScalar numaShape = iota // intValue, as with DRAListTypeAttributes off
	numaList                    // intValues with one element: dra-driver-nvidia-gpu v0.5 with its DRAListTypeAttributes gate
)

func numaAttr(shape numaShape, n int64) resourceapi.DeviceAttribute {
	if shape == numaList {
		return resourceapi.DeviceAttribute{IntValues: []int64{n}}
	}
	return resourceapi.DeviceAttribute{IntValue: ptr.To(n)}
}

// numaFleet is one node with four GPUs on NUMA nodes gpuNUMA and a NIC per
// entry of nicNUMA; the GPUs publish numaNode in gpuShape, the NICs (dranet)
// as a scalar.
func numaFleet(gpuShape numaShape, gpuNUMA, nicNUMA []int64) *feasibility.Inventory {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hgx-0", Labels: map[string]string{"kubernetes.io/hostname": "hgx-0"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"), corev1.ResourcePods: resource.MustParse("110")}}}
	var gpus, nics []resourceapi.Device
	for i, n := range gpuNUMA {
		gpus = append(gpus, resourceapi.Device{Name: "gpu-" + string(rune('0'+i)), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type": {StringValue: ptr.To("gpu")}, "productName": {StringValue: ptr.To("NVIDIA H100 80GB HBM3")},
			"uuid": {StringValue: ptr.To("GPU-" + string(rune('0'+i)))}, "resource.kubernetes.io/numaNode": numaAttr(gpuShape, n),
		}})
	}
	for i, n := range nicNUMA {
		nics = append(nics, resourceapi.Device{Name: "nic-" + string(rune('0'+i)), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"rdma": {BoolValue: ptr.To(true)}, "resource.kubernetes.io/numaNode": numaAttr(numaScalar, n),
		}})
	}
	slice := func(driver string, devs []resourceapi.Device) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "hgx-0-" + driver},
			Spec: resourceapi.ResourceSliceSpec{Driver: driver, NodeName: ptr.To("hgx-0"),
				Pool: resourceapi.ResourcePool{Name: "hgx-0", Generation: 1, ResourceSliceCount: 1}, Devices: devs}}
	}
	class := func(name, expr string) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}}}
	}
	return &feasibility.Inventory{Nodes: []*corev1.Node{node},
		Slices: []*resourceapi.ResourceSlice{slice("gpu.nvidia.com", gpus), slice("dra.net", nics)},
		Classes: []*resourceapi.DeviceClass{
			class("gpu.nvidia.com", `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`),
			class("dranet-rdma", `device.driver == "dra.net" && device.attributes["dra.net"].rdma == true`),
		}}
}

// TestNUMAAlignmentOnEitherShape: the NVIDIA DRA driver v0.5 publishes
// resource.kubernetes.io/numaNode as a one-element list when its
// DRAListTypeAttributes gate is on (addNumaNodeAttribute,
// cmd/gpu-kubelet-plugin/deviceinfo.go), which needs the cluster's gate of
// the same name: kube-apiserver drops list values without it. With the
// gate the allocator's matchAttribute compares sets — a scalar is a set of
// one, and devices match when the sets intersect (matchAttributeConstraint,
// structured/internal/experimental); without it a list matches nothing but
// itself on the first device. The alignment claimbridge generates is the
// same matchAttribute either way, and the fleet's own shape decides how it
// is checked: two GPUs and a NIC on one NUMA node, end to end through the
// placement check and the allocator, for GPUs publishing either shape
// beside NICs that publish a scalar.
func TestNUMAAlignmentOnEitherShape(t *testing.T) {
	p, err := translate.LoadPolicy([]byte(numaPolicy))
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mpi", Namespace: "ml"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Image: "registry.example/mpi:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2"), "rdma/hca": resource.MustParse("1")}}}}}}
	cases := map[string]struct {
		shape       numaShape
		gpuNUMA     []int64
		nicNUMA     []int64
		wantOutcome reason.Outcome
		wantNUMA    int64 // of the devices chosen, when translated
	}{
		"scalar numaNode: the GPUs of the NIC's node":          {shape: numaScalar, gpuNUMA: []int64{0, 0, 1, 1}, nicNUMA: []int64{1}, wantOutcome: reason.OutcomeTranslate, wantNUMA: 1},
		"list numaNode: the GPUs of the NIC's node":            {shape: numaList, gpuNUMA: []int64{0, 0, 1, 1}, nicNUMA: []int64{1}, wantOutcome: reason.OutcomeTranslate, wantNUMA: 1},
		"scalar numaNode, no two GPUs beside the NIC: kept":    {shape: numaScalar, gpuNUMA: []int64{0, 0, 1, 2}, nicNUMA: []int64{1}, wantOutcome: reason.OutcomeKeepLegacy},
		"list numaNode, no two GPUs beside the NIC: kept":      {shape: numaList, gpuNUMA: []int64{0, 0, 1, 2}, nicNUMA: []int64{1}, wantOutcome: reason.OutcomeKeepLegacy},
		"list numaNode, two NICs: the node with two GPUs wins": {shape: numaList, gpuNUMA: []int64{0, 1, 1, 2}, nicNUMA: []int64{0, 1}, wantOutcome: reason.OutcomeTranslate, wantNUMA: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inv := numaFleet(tc.shape, tc.gpuNUMA, tc.nicNUMA)
			snap, err := feasibility.NewSnapshot(inv, 1, feasibility.DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			d, err := decide.Pod(t.Context(), decide.Input{Pod: pod, Policy: p, Classes: inv.Classes,
				Checker: feasibility.NewChecker(feasibility.Options{}), Snapshot: snap})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.wantOutcome {
				t.Fatalf("outcome %s (%s: %s), want %s", d.Outcome, d.Decisive.Code, d.Decisive.Message, tc.wantOutcome)
			}
			tmpl := d.Translation.Template
			if tmpl == nil || !slices.ContainsFunc(tmpl.Spec.Spec.Devices.Constraints, func(c resourceapi.DeviceConstraint) bool {
				return c.MatchAttribute != nil && *c.MatchAttribute == "resource.kubernetes.io/numaNode"
			}) {
				t.Fatalf("the claim has no numaNode constraint: %+v", tmpl)
			}
			if tc.wantOutcome != reason.OutcomeTranslate {
				return
			}
			byName := map[string]resourceapi.Device{}
			for _, s := range inv.Slices {
				for _, dev := range s.Spec.Devices {
					byName[s.Spec.Driver+"/"+dev.Name] = dev
				}
			}
			for _, r := range d.Verdict.Results {
				a := byName[r.Driver+"/"+r.Device].Attributes["resource.kubernetes.io/numaNode"]
				got := ptr.Deref(a.IntValue, -1)
				if len(a.IntValues) == 1 {
					got = a.IntValues[0]
				}
				if got != tc.wantNUMA {
					t.Errorf("%s/%s on NUMA node %d, want %d (results %v)", r.Driver, r.Device, got, tc.wantNUMA, d.Verdict.Results)
				}
			}
			if !strings.Contains(d.Decisive.Message, "hgx-0") {
				t.Errorf("decisive %s: %s", d.Decisive.Code, d.Decisive.Message)
			}
		})
	}
}
