package forecast

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/translate"
)

func TestParseGFDLabels(t *testing.T) {
	for in, want := range map[string]GFDLabels{"": GFDLabelsDrop, "drop": GFDLabelsDrop, "keep": GFDLabelsKeep} {
		got, err := ParseGFDLabels(in)
		if err != nil || got != want {
			t.Errorf("ParseGFDLabels(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := ParseGFDLabels("Drop")
	if err == nil || !strings.Contains(err.Error(), "drop, keep") {
		t.Errorf("ParseGFDLabels(Drop) error %v, want one naming drop, keep", err)
	}
}

// TestInvalidOptions: an error is only for invalid options.
func TestInvalidOptions(t *testing.T) {
	p := translate.DefaultPolicy()
	class := func(name string) *resourceapi.DeviceClass {
		return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	cases := map[string]struct {
		inv  *feasibility.Inventory
		opts Options
		want string
	}{
		"no inventory":          {opts: Options{Policy: p}, want: "no inventory"},
		"no policy":             {inv: &feasibility.Inventory{}, want: "no policy"},
		"an unknown GFD mode":   {inv: &feasibility.Inventory{}, opts: Options{Policy: p, GFDLabels: "remove"}, want: `unknown GFD labels mode "remove"`},
		"a class without name":  {inv: &feasibility.Inventory{}, opts: Options{Policy: p, Classes: []*resourceapi.DeviceClass{class("")}}, want: "class 0 has no name"},
		"two classes of a name": {inv: &feasibility.Inventory{}, opts: Options{Policy: p, Classes: []*resourceapi.DeviceClass{class("a"), class("a")}}, want: `two classes named "a"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Forecast(tc.inv, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// a100Labels are GFD's labels of the simulated A100 (ground truth).
func a100Labels(t *testing.T) map[string]string { return gfdLabels(t, "a100") }

// TestNodes: which nodes switch, what they become, and what is not forecast.
func TestNodes(t *testing.T) {
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	gpu := map[corev1.ResourceName]int64{"nvidia.com/gpu": 8}
	cases := map[string]struct {
		policy      *translate.Policy
		shares      string // the platform's --consumable-shares ("": the driver's default)
		node        *corev1.Node
		slices      []*resourceapi.ResourceSlice
		want        Node
		wantDevices []string // device names of the forecast slice
	}{
		"mig.capable alone makes no MIG device": {
			node: gpuNode("n", with(nil, "nvidia.com/mig.capable", "true", "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"), map[corev1.ResourceName]int64{"nvidia.com/gpu": 2}),
			want: Node{Name: "n", Switched: true, Drivers: []Driver{{Driver: DriverNVIDIA, Devices: 2, Resources: []corev1.ResourceName{"nvidia.com/gpu"},
				Unknown: []string{"architecture", "brand", "cudaComputeCapability", "cudaDriverVersion", "driverVersion", "memory", "numaNode", "pciBusID", "pcieRoot", "uuid"}}}},
			wantDevices: []string{"gpu-0", "gpu-1"},
		},
		"a node that publishes the driver's slices already is left as it is": {
			node:   gpuNode("n", a100Labels(t), gpu),
			slices: pool("n", DriverNVIDIA, []resourceapi.Device{{Name: "gpu-0"}}, nil),
			want: Node{Name: "n", Why: "already publishes ResourceSlices for gpu.nvidia.com", Drivers: []Driver{{Driver: DriverNVIDIA,
				Resources: []corev1.ResourceName{"nvidia.com/gpu"}, NotForecast: "the node already publishes ResourceSlices for gpu.nvidia.com: left as it is"}}},
		},
		"unhealthy GPUs the device plugin does not offer are not forecast": {
			node: func() *corev1.Node {
				n := gpuNode("n", a100Labels(t), map[corev1.ResourceName]int64{"nvidia.com/gpu": 8})
				n.Status.Allocatable["nvidia.com/gpu"] = *resourceQuantity(7)
				return n
			}(),
			want: Node{Name: "n", Switched: true, Drivers: []Driver{{Driver: DriverNVIDIA, Devices: 7, Resources: []corev1.ResourceName{"nvidia.com/gpu"},
				Unknown: []string{"brand", "numaNode", "pciBusID", "pcieRoot", "uuid"},
				Notes:   []string{"nvidia.com/gpu: capacity 8, allocatable 7: the devices the device plugin does not offer (unhealthy) are not forecast"}}}},
			wantDevices: []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6"},
		},
		"renamed shares without a replicas label count the GPUs GFD counts": {
			shares: "4",
			node:   gpuNode("n", with(nil, "nvidia.com/gpu.count", "2"), map[corev1.ResourceName]int64{"nvidia.com/gpu.shared": 8}),
			want: Node{Name: "n", Switched: true, Drivers: []Driver{{Driver: DriverNVIDIA, Devices: 2, Resources: []corev1.ResourceName{"nvidia.com/gpu.shared"},
				Unknown: []string{"architecture", "brand", "cudaComputeCapability", "cudaDriverVersion", "driverVersion", "memory", "numaNode", "pciBusID", "pcieRoot", "productName", "uuid"},
				Notes: []string{"no sharing label: the 8 shares on 2 GPUs are taken as time-slicing 4 ways",
					"nvidia.com/gpu.shared: shares of GPUs; nvidia.com/gpu.count=2 GPUs are forecast",
					"time-slicing (4 ways): each GPU is forecast with 4 consumable shares (allowMultipleAllocations, capacity shares 4, default request 1), " +
						"as the NVIDIA DRA driver v0.5.0 or later publishes it with its ConsumableShares feature gate (alpha) and --consumable-shares=4 (declared: test), " +
						"on Kubernetes with DRAConsumableCapacity (beta since 1.36); one --consumable-shares per driver installation, so nodes shared differently " +
						"need an installation each; as with time-slicing, shares have no memory or fault isolation; the allocator fills one GPU's shares before the next, " +
						"where the device plugin spreads replicas over the GPUs"}}}},
			wantDevices: []string{"gpu-0", "gpu-1"},
		},
		"single strategy without a MIG profile is not forecast": {
			node: gpuNode("n", with(nil, "nvidia.com/mig.strategy", "single", "nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-INVALID"), gpu),
			want: Node{Name: "n", Why: "no accelerator the forecast knows", Drivers: []Driver{{Driver: DriverNVIDIA, Resources: []corev1.ResourceName{"nvidia.com/gpu"},
				NotForecast: "no device could be counted from the node's resources and labels",
				Notes:       []string{"nvidia.com/gpu: the node's labels make it a MIG device (DeviceClass mig.nvidia.com) but name no MIG profile; not forecast"}}}},
		},
		"a TPU node without a chip-count label counts its chips": {
			node: gpuNode("n", with(nil, "tpu.google.com/accelerator", "tpu-v6e-slice"), map[corev1.ResourceName]int64{"google.com/tpu": 4}),
			want: Node{Name: "n", Switched: true, Drivers: []Driver{{Driver: DriverTPU, Devices: 4, Resources: []corev1.ResourceName{"google.com/tpu"},
				Unknown: []string{"uuid"},
				Notes: []string{"chipCount: no chip-count label (cloud.google.com/gke-accelerator-count or tpu.google.com/chip-count); the driver needs one " +
					"(or its --tpu-chip-count flag) equal to the chips it finds: written as the 4 chips of google.com/tpu"}}}},
			wantDevices: []string{"tpu-0", "tpu-1", "tpu-2", "tpu-3"},
		},
		"the TPU driver's own labels win over GKE's, as it reads them": {
			node: gpuNode("n", with(nil, "cloud.google.com/gke-nodepool", "p", "cloud.google.com/gke-tpu-accelerator", "tpu-v5-lite-podslice",
				"tpu.google.com/accelerator", "tpu-v6e-slice", "cloud.google.com/gke-accelerator-count", "4"), map[corev1.ResourceName]int64{"google.com/tpu": 4}),
			want: Node{Name: "n", Switched: true, Drivers: []Driver{{Driver: DriverTPU, Devices: 4, Resources: []corev1.ResourceName{"google.com/tpu"},
				Unknown: []string{"uuid"}}}},
			wantDevices: []string{"tpu-0", "tpu-1", "tpu-2", "tpu-3"},
		},
		"a node whose device plugin has left offers no GPU and does not switch": {
			node: func() *corev1.Node {
				n := gpuNode("n", a100Labels(t), gpu)
				n.Status.Allocatable["nvidia.com/gpu"] = *resourceQuantity(0)
				return n
			}(),
			want: Node{Name: "n", Why: "no device plugin: its allocatable offers 0 nvidia.com/gpu (what the kubelet keeps once a device plugin has left, " +
				"until it restarts), so the switch replaces nothing there"},
		},
		"a TPU node whose chip count disagrees is not forecast": {
			node: gpuNode("n", with(nil, "tpu.google.com/accelerator", "tpu-v6e-slice", "tpu.google.com/chip-count", "8"), map[corev1.ResourceName]int64{"google.com/tpu": 4}),
			want: Node{Name: "n", Why: "no accelerator the forecast knows", Drivers: []Driver{{Driver: DriverTPU, Resources: []corev1.ResourceName{"google.com/tpu"},
				NotForecast: "the chip-count label says 8 chips and the node offers 4 google.com/tpu: the TPU driver checks the chips it finds against the label and does not start"}}},
		},
		"a TPU node with an accelerator the driver does not know is not forecast": {
			node: gpuNode("n", with(nil, "tpu.google.com/accelerator", "tpu-v9-mega"), map[corev1.ResourceName]int64{"google.com/tpu": 4}),
			want: Node{Name: "n", Why: "no accelerator the forecast knows", Drivers: []Driver{{Driver: DriverTPU, Resources: []corev1.ResourceName{"google.com/tpu"},
				NotForecast: "the TPU driver does not start: invalid accelerator type: tpu-v9-mega"}}},
		},
		"RDMA shares are not forecast": {
			node: gpuNode("n", nil, map[corev1.ResourceName]int64{"rdma/hca": 1000}),
			want: Node{Name: "n", Why: "no accelerator the forecast knows", Drivers: []Driver{{Driver: "dra.net", Resources: []corev1.ResourceName{"rdma/hca"},
				NotForecast: notForecast["dra.net"]}}},
		},
		"HAMi's class serves no driver the forecast knows": {
			policy: mustPolicy(t, "nvidia", "hami"),
			node:   gpuNode("n", a100Labels(t), map[corev1.ResourceName]int64{"nvidia.com/gpu": 2, "nvidia.com/gpumem": 81920}),
			want: Node{Name: "n", Why: "no accelerator the forecast knows", Drivers: []Driver{{Driver: "hami-core-gpu.project-hami.io",
				Resources:   []corev1.ResourceName{"nvidia.com/gpu", "nvidia.com/gpumem"},
				NotForecast: "DeviceClass hami-core-gpu.project-hami.io: the forecast knows no DRA driver that serves it"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := tc.policy
			if p == nil {
				p = translate.DefaultPolicy()
			}
			res, err := Forecast(&feasibility.Inventory{Nodes: []*corev1.Node{tc.node}, Slices: tc.slices}, Options{Policy: p, Platform: sharesPlatform(t, tc.shares)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]Node{tc.want}, res.Nodes); diff != "" {
				t.Errorf("summary (-want,+got):\n%s", diff)
			}
			var names []string
			for _, s := range res.After.Slices {
				if res.forecast[s.Name] {
					for _, d := range s.Spec.Devices {
						names = append(names, d.Name)
					}
				}
			}
			if diff := cmp.Diff(tc.wantDevices, names); diff != "" {
				t.Errorf("forecast devices (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestClasses: the classes of the options replace those of the same name
// and no default class is added; without them the forecast drivers'
// default classes join the inventory's.
func TestClasses(t *testing.T) {
	mine := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"}, Spec: resourceapi.DeviceClassSpec{
		ExtendedResourceName: ptr.To("nvidia.com/gpu"),
		Selectors:            []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`}}},
	}}
	old := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"}}
	other := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}}
	inv := &feasibility.Inventory{Nodes: []*corev1.Node{gpuNode("n", a100Labels(t), map[corev1.ResourceName]int64{"nvidia.com/gpu": 1})},
		Classes: []*resourceapi.DeviceClass{old, other}}
	names := func(cs []*resourceapi.DeviceClass) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}

	res, err := Forecast(inv, Options{Policy: translate.DefaultPolicy(), Classes: []*resourceapi.DeviceClass{mine}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"gpu.nvidia.com", "other"}, names(res.After.Classes)); diff != "" {
		t.Errorf("classes (-want,+got):\n%s", diff)
	}
	if res.After.Classes[0].Spec.ExtendedResourceName == nil {
		t.Error("the options' gpu.nvidia.com did not replace the inventory's")
	}

	res, err = Forecast(inv, Options{Policy: translate.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"gpu.nvidia.com", "mig.nvidia.com", "other"}, names(res.After.Classes)); diff != "" {
		t.Errorf("classes (-want,+got):\n%s", diff)
	}
	if len(res.After.Classes[0].Spec.Selectors) != 0 {
		t.Error("the inventory's gpu.nvidia.com was replaced by the default one")
	}
}

// TestGFDLabel: GFD's vocabulary goes, the GPU Operator's, NFD's and GKE's
// labels stay.
func TestGFDLabel(t *testing.T) {
	for key, want := range map[string]bool{
		"nvidia.com/gpu.product": true, "nvidia.com/gpu.clique": true, "nvidia.com/cuda.driver.major": true, "nvidia.com/mig-1g.10gb.count": true,
		"nvidia.com/mig.strategy": true, "nvidia.com/mig.capable": true, "nvidia.com/mps.capable": true, "nvidia.com/vgpu.present": true,
		"nvidia.com/gfd.timestamp": true, "nvidia.com/gpu.present": false, "nvidia.com/gpu.deploy.operands": false,
		"nvidia.com/gpu.workload.config": false, "nvidia.com/mig.config": false, "nvidia.com/mig.config.state": false,
		"feature.node.kubernetes.io/pci-10de.present": false, "cloud.google.com/gke-accelerator": false,
	} {
		if got := GFDLabel(key); got != want {
			t.Errorf("GFDLabel(%s) = %v, want %v", key, got, want)
		}
	}
}

// TestAcceleratorGen mirrors the TPU driver's AcceleratorGen examples.
func TestAcceleratorGen(t *testing.T) {
	for in, want := range map[string]string{"tpu-v3-device": "v3", "tpu-v4-podslice": "v4", "tpu-v4-lite-device": "v4lite",
		"tpu-v5-lite-device": "v5lite", "tpu-v5-lite-podslice": "v5litepod", "tpu-v5p-slice": "v5p", "tpu-v6e-slice": "v6e", "tpu7x": "tpu7x",
		"tpu-v4-device": "", "tpu-v4-lite-podslice": "", "gpu": "", "tpu-v9-slice": ""} {
		got, err := acceleratorGen(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("acceleratorGen(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestWriteYAMLComments: each forecast slice is headed by its node and what
// its driver will publish that the forecast does not know.
func TestWriteYAMLComments(t *testing.T) {
	res, err := Forecast(&feasibility.Inventory{Nodes: []*corev1.Node{gpuNode("n", a100Labels(t), map[corev1.ResourceName]int64{"nvidia.com/gpu": 1})}},
		Options{Policy: translate.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := res.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	want := "---\n# node n: 1 gpu.nvidia.com devices forecast from the node's labels and extended resources\n" +
		"# unknown (not in the devices): brand, numaNode, pciBusID, pcieRoot, uuid\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("WriteYAML does not head the slice with\n%s\ngot:\n%s", want, b.String())
	}
	if !slices.ContainsFunc(strings.Split(b.String(), "\n"), func(l string) bool { return l == "# node n: switched" }) {
		t.Errorf("WriteYAML does not say the node switched:\n%s", b.String())
	}
}

func mustPolicy(t *testing.T, profiles ...string) *translate.Policy {
	t.Helper()
	p, err := translate.ProfilePolicy(profiles...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLargePool: more devices than one slice holds make a pool of several
// slices, as a driver splits them.
func TestLargePool(t *testing.T) {
	res, err := Forecast(&feasibility.Inventory{Nodes: []*corev1.Node{gpuNode("big", nil, map[corev1.ResourceName]int64{"nvidia.com/gpu": 130})}},
		Options{Policy: translate.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range res.After.Slices {
		got = append(got, fmt.Sprintf("%s %d/%d", s.Name, len(s.Spec.Devices), s.Spec.Pool.ResourceSliceCount))
	}
	if diff := cmp.Diff([]string{"big-gpu.nvidia.com-forecast 128/2", "big-gpu.nvidia.com-2-forecast 2/2"}, got); diff != "" {
		t.Errorf("slices (-want,+got):\n%s", diff)
	}
	snap, err := feasibility.NewFleet(res.After, feasibility.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := snap.Snapshot.Summary(t.Context()).Devices; n != 130 {
		t.Errorf("the snapshot has %d devices, want 130", n)
	}
}
