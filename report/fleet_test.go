package report_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/report"
)

func TestNewFleetSummary(t *testing.T) {
	got := report.NewFleetSummary(feasibility.Summary{
		Devices:        17,
		DevicesByClass: map[string]int{"gpu.nvidia.com": 16, "dranet-rdma": 1},
		Nodes: []feasibility.NodeSummary{
			{Name: "h100-0", DRADevices: 8, Hardware: "8× NVIDIA H100 80GB HBM3"},
			{Name: "h100-1", DRADevices: 9, Hardware: "8× NVIDIA H100 80GB HBM3, 1× dra.net device"},
			{Name: "legacy-0", Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A10G"}, Extended: map[corev1.ResourceName]int64{"nvidia.com/gpu": 4}},
			{Name: "legacy-1", Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A10G"}, Extended: map[corev1.ResourceName]int64{"nvidia.com/gpu": 4}},
			{Name: "both", DRADevices: 1, Hardware: "1× NVIDIA L4", Extended: map[corev1.ResourceName]int64{"example.com/fpga": 1}},
			{Name: "cpu-only"},
		},
	})
	want := &report.FleetSummary{Nodes: 6, DRANodes: 3, DevicePluginNodes: 3, Devices: 17,
		DevicesByClass:        map[string]int{"gpu.nvidia.com": 16, "dranet-rdma": 1},
		DevicePluginResources: map[string]int64{"nvidia.com/gpu": 8, "example.com/fpga": 1},
		Groups: []report.FleetGroup{
			{Via: report.ViaDRA, Hardware: "1× NVIDIA L4", Nodes: 1, Names: []string{"both"}},
			{Via: report.ViaDRA, Hardware: "8× NVIDIA H100 80GB HBM3", Nodes: 1, Names: []string{"h100-0"}},
			{Via: report.ViaDRA, Hardware: "8× NVIDIA H100 80GB HBM3, 1× dra.net device", Nodes: 1, Names: []string{"h100-1"}},
			{Via: report.ViaDevicePlugin, Hardware: "4× nvidia.com/gpu", Kind: "NVIDIA-A10G", Nodes: 2, Names: []string{"legacy-0", "legacy-1"}},
			{Via: report.ViaDevicePlugin, Hardware: "1× example.com/fpga", Kind: "example.com/fpga, any model", Nodes: 1, Names: []string{"both"}},
		}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewFleetSummary (-want,+got):\n%s", diff)
	}
}
