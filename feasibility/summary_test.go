package feasibility_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/feasibility"
)

func TestSummaryOfTheMixedFleet(t *testing.T) {
	inv, err := feasibility.LoadInventory("../examples/fleets/mixed")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := feasibility.NewSnapshot(inv, 1, feasibility.DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	got := snap.Summary(t.Context())
	wantClasses := map[string]int{"dra.cpu": 4, "dranet-rdma": 16, "gpu.nvidia.com": 34, "mig.nvidia.com": 12, "tpu.google.com": 16}
	if diff := cmp.Diff(wantClasses, got.DevicesByClass); diff != "" {
		t.Errorf("DevicesByClass (-want,+got):\n%s", diff)
	}
	if got.Devices != 82 {
		t.Errorf("Devices = %d, want 82", got.Devices)
	}
	type node struct {
		DRA      int
		Hardware string
		Extended map[corev1.ResourceName]int64
	}
	nodes := map[string]node{}
	for _, n := range got.Nodes {
		nodes[n.Name] = node{n.DRADevices, n.Hardware, n.Extended}
	}
	wantSome := map[string]node{
		"dgx-h100-0":   {18, "8× MT2910 Family [ConnectX-7], 8× NVIDIA H100 80GB HBM3, 2× dra.cpu device", nil},
		"legacy-gfd-0": {0, "", map[corev1.ResourceName]int64{"nvidia.com/gpu": 8}},
		"tpu-v5e-1":    {8, "8× tpu-v5-lite-podslice 2x4", nil},
	}
	for name, want := range wantSome {
		if diff := cmp.Diff(want, nodes[name]); diff != "" {
			t.Errorf("node %s (-want,+got):\n%s", name, diff)
		}
	}
	if len(got.Nodes) != 12 {
		t.Errorf("%d nodes, want 12", len(got.Nodes))
	}
}
