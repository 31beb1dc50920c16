package decisions

import (
	"testing"
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
			if got := HardwareKind(tc.devices, tc.labels); got != tc.want {
				t.Errorf("HardwareKind = %q, want %q", got, tc.want)
			}
		})
	}
}
