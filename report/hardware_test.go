package report_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/report"
)

func TestHardwareKind(t *testing.T) {
	cases := map[string]struct {
		devices map[string]int64
		labels  map[string][]string
		want    string
	}{
		"a MIG slice by resource name":             {devices: map[string]int64{"nvidia.com/mig-1g.10gb": 1}, want: "MIG 1g.10gb"},
		"a MIG slice by GKE's partition label":     {devices: map[string]int64{"nvidia.com/gpu": 1}, labels: map[string][]string{"cloud.google.com/gke-gpu-partition-size": {"1g.5gb"}}, want: "MIG 1g.5gb"},
		"a TPU with accelerator and topology":      {devices: map[string]int64{"google.com/tpu": 8}, labels: map[string][]string{"cloud.google.com/gke-tpu-accelerator": {"tpu-v5-lite-podslice"}, "cloud.google.com/gke-tpu-topology": {"2x4"}}, want: "TPU tpu-v5-lite-podslice 2x4"},
		"a TPU of no particular kind":              {devices: map[string]int64{"google.com/tpu": 4}, want: "TPU any model"},
		"a GPU product":                            {devices: map[string]int64{"nvidia.com/gpu": 1}, labels: map[string][]string{"nvidia.com/gpu.product": {"NVIDIA-L4"}}, want: "NVIDIA-L4"},
		"several products allowed":                 {devices: map[string]int64{"nvidia.com/gpu": 2}, labels: map[string][]string{"nvidia.com/gpu.product": {"NVIDIA-H100-80GB-HBM3", "NVIDIA-H200"}}, want: "NVIDIA-H100-80GB-HBM3 or NVIDIA-H200"},
		"a GKE accelerator":                        {devices: map[string]int64{"nvidia.com/gpu": 1}, labels: map[string][]string{"cloud.google.com/gke-accelerator": {"nvidia-l4"}}, want: "nvidia-l4"},
		"a GPU family":                             {devices: map[string]int64{"nvidia.com/gpu": 4, "rdma/hca": 1}, labels: map[string][]string{"nvidia.com/gpu.family": {"hopper"}}, want: "NVIDIA hopper"},
		"the resource asked for most names it":     {devices: map[string]int64{"nvidia.com/gpu": 1, "rdma/hca": 2}, want: "rdma/hca, any model"},
		"equal counts: the first resource by name": {devices: map[string]int64{"rdma/hca": 1, "nvidia.com/gpu": 1}, want: "nvidia.com/gpu, any model"},
		"no devices":                               {labels: map[string][]string{"nvidia.com/gpu.product": {"NVIDIA-L4"}}, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := report.HardwareKind(tc.devices, tc.labels); got != tc.want {
				t.Errorf("HardwareKind = %q, want %q", got, tc.want)
			}
		})
	}
}

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
