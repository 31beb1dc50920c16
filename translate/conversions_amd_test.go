package translate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
)

// AMD GPUs as the AMD DRA driver publishes them (attribute names of
// ROCm/k8s-gpu-dra-driver cmd/gpu-kubeletplugin/deviceinfo.go at 08bc729c:
// type, productName, deviceID from sysfs's device file, memory the first
// memory bank's bytes). An MI300X's first bank holds 196592 MiB, which the
// node labeller writes as 192G; an MI210's 65520 MiB as 64G.
func amdGPU(product, id, memory string) device {
	return device{driver: "gpu.amd.com", attrs: map[string]any{"type": "amdgpu", "productName": product, "deviceID": id},
		caps: map[string]string{"memory": memory}}
}

// amdPartition is a partition of a GPU in the profile's mode (cpx_nps1):
// type amdgpu-partition, its GPU's productName and deviceID
// (AmdPartitionInfo.GetDevice), its own share of the memory.
func amdPartition(product, id, profile, memory string) device {
	d := amdGPU(product, id, memory)
	d.attrs["type"], d.attrs["partitionProfile"] = "amdgpu-partition", profile
	return d
}

var (
	mi300x     = withProfile(amdGPU("AMD_Instinct_MI300X_OAM", "0x74a1", "196592Mi"), "spx_nps1")
	mi300xCPX  = amdPartition("AMD_Instinct_MI300X_OAM", "0x74a1", "cpx_nps1", "24574Mi")
	mi210      = amdGPU("AMD_Instinct_MI210", "0x740f", "65520Mi")
	amdUpper   = amdGPU("AMD_Instinct_MI300X_OAM", "0x74A1", "196096Mi") // the lowest size labelled 192G
	amdTooLow  = amdGPU("AMD_Instinct_MI300X_OAM", "0x74a1", "196095Mi") // labelled 191G
	amdUnknown = device{driver: "gpu.amd.com", attrs: map[string]any{"type": "amdgpu"}}
)

// withProfile: a GPU that can be partitioned publishes its mode whole too.
func withProfile(d device, profile string) device {
	d.attrs["partitionProfile"] = profile
	return d
}

// amdSelectors translates an amd.com/gpu pod with the label requirements
// and returns the selectors of its request.
func amdSelectors(t *testing.T, reqs ...corev1.NodeSelectorRequirement) []string {
	t.Helper()
	pod := builders.MakePod("p", "ns").Container("c").Limit("amd.com/gpu", "1").RequiredTerm(reqs...).Obj()
	res, err := Pod(Input{Pod: pod, Policy: DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != reason.OutcomeTranslate {
		t.Fatalf("outcome %s: %v", res.Outcome, res.Reasons)
	}
	if a := res.Pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Errorf("node affinity left on the pod, want the labels translated: %v", a.NodeAffinity)
	}
	var out []string
	for _, s := range res.Template.Spec.Spec.Devices.Requests[0].Exactly.Selectors {
		out = append(out, s.CEL.Expression)
	}
	return out
}

// TestAMDLabelsSelectTheRightDevices: the node labeller's product-name,
// device-id and vram, on a pod, become selectors that match the devices
// the labeller gives that value and no other.
func TestAMDLabelsSelectTheRightDevices(t *testing.T) {
	req := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	cases := map[string]struct {
		req       corev1.NodeSelectorRequirement
		wantMatch []device
		wantNot   []device
	}{
		"product name as the labeller writes it, on a whole GPU and a partition": {
			req: req("amd.com/gpu.product-name", corev1.NodeSelectorOpIn, "AMD_Instinct_MI300X_OAM"), wantMatch: []device{mi300x, mi300xCPX}, wantNot: []device{mi210, amdUnknown},
		},
		"the beta product name label too": {
			req: req("beta.amd.com/gpu.product-name", corev1.NodeSelectorOpIn, "AMD_Instinct_MI210"), wantMatch: []device{mi210}, wantNot: []device{mi300x},
		},
		"device ID without 0x matches the driver's with it, in either case": {
			req: req("amd.com/gpu.device-id", corev1.NodeSelectorOpIn, "74a1"), wantMatch: []device{mi300x, amdUpper, mi300xCPX}, wantNot: []device{mi210, amdUnknown},
		},
		"the partition mode is the partitionProfile of partitions": {
			req: req("amd.com/gpu.compute-memory-partition", corev1.NodeSelectorOpIn, "cpx_nps1"), wantMatch: []device{mi300xCPX}, wantNot: []device{mi300x, mi210, amdUnknown},
		},
		"and of whole GPUs in SPX mode; one that cannot be partitioned has none": {
			req: req("amd.com/gpu.compute-memory-partition", corev1.NodeSelectorOpIn, "spx_nps1"), wantMatch: []device{mi300x}, wantNot: []device{mi300xCPX, mi210},
		},
		"a partition's memory as the labeller writes it on a partitioned node": {
			req: req("amd.com/gpu.vram", corev1.NodeSelectorOpIn, "24G"), wantMatch: []device{mi300xCPX}, wantNot: []device{mi300x},
		},
		"device ID NotIn admits devices without one, like nodes without the label": {
			req: req("amd.com/gpu.device-id", corev1.NodeSelectorOpNotIn, "74A1"), wantMatch: []device{mi210, amdUnknown}, wantNot: []device{mi300x},
		},
		"vram in rounded GiB matches every size the labeller rounds to it": {
			req: req("amd.com/gpu.vram", corev1.NodeSelectorOpIn, "192G"), wantMatch: []device{mi300x, amdUpper}, wantNot: []device{amdTooLow, mi210, amdUnknown},
		},
		"several vram sizes": {
			req: req("beta.amd.com/gpu.vram", corev1.NodeSelectorOpIn, "64G", "191G"), wantMatch: []device{mi210, amdTooLow}, wantNot: []device{mi300x},
		},
		"vram exists": {
			req: req("amd.com/gpu.vram", corev1.NodeSelectorOpExists), wantMatch: []device{mi300x}, wantNot: []device{amdUnknown},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sels := amdSelectors(t, tc.req)
			all := func(d device) bool {
				for _, s := range sels {
					if !matches(t, s, d) {
						return false
					}
				}
				return true
			}
			for _, d := range tc.wantMatch {
				if !all(d) {
					t.Errorf("%v does not match %s, want a match", d.attrs, sels)
				}
			}
			for _, d := range tc.wantNot {
				if all(d) {
					t.Errorf("%v matches %s, want no match", d.attrs, sels)
				}
			}
		})
	}
}

// TestAMDLabelsNotTranslatable: what the labeller's forms cannot say stays
// on the pod with a reason.
func TestAMDLabelsNotTranslatable(t *testing.T) {
	for name, req := range map[string]corev1.NodeSelectorRequirement{
		"vram Gt compares integers":   {Key: "amd.com/gpu.vram", Operator: corev1.NodeSelectorOpGt, Values: []string{"100"}},
		"vram without its unit":       {Key: "amd.com/gpu.vram", Operator: corev1.NodeSelectorOpIn, Values: []string{"192"}},
		"a device ID that is not hex": {Key: "amd.com/gpu.device-id", Operator: corev1.NodeSelectorOpIn, Values: []string{"mi300x"}},
	} {
		t.Run(name, func(t *testing.T) {
			pod := builders.MakePod("p", "ns").Container("c").Limit("amd.com/gpu", "1").RequiredTerm(req).Obj()
			res, err := Pod(Input{Pod: pod, Policy: DefaultPolicy()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome == reason.OutcomeTranslate {
				t.Errorf("translated with %v", res.Template.Spec.Spec.Devices.Requests[0].Exactly.Selectors)
			}
		})
	}
}

// TestAMDLabelsBothWays: a node's labeller labels read as devices
// (ForecastDevices) give those labels back (LegacyLabel), in canonical form.
func TestAMDLabelsBothWays(t *testing.T) {
	p := DefaultPolicy()
	labels := map[string]string{
		"amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM", "beta.amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM",
		"amd.com/gpu.device-id": "74a1", "beta.amd.com/gpu.device-id": "74a1",
		"amd.com/gpu.vram": "192G", "beta.amd.com/gpu.vram": "192G",
		"amd.com/gpu.family": "AI", "amd.com/gpu.cu-count": "304",
	}
	fd := p.ForecastDevices("amd-gpu", labels)
	product, id := "AMD_Instinct_MI300X_OAM", "0x74a1"
	want := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"gpu.amd.com/productName": {StringValue: &product}, "gpu.amd.com/deviceID": {StringValue: &id}}
	if diff := cmp.Diff(want, fd.Attributes); diff != "" {
		t.Errorf("attributes (-want,+got):\n%s", diff)
	}
	if q := fd.Capacity["gpu.amd.com/memory"]; q.Cmp(resource.MustParse("192Gi")) != 0 {
		t.Errorf("memory %s, want 192Gi", q.String())
	}
	if len(fd.Notes) != 1 || !strings.Contains(fd.Notes[0], "written as 192Gi, the driver publishes the exact size (at least 196096Mi, under 197120Mi)") {
		t.Errorf("notes %q, want one on the rounding", fd.Notes)
	}
	d := LegacyDevice{Name: "gpu-0", Driver: "gpu.amd.com", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}, Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}}
	for k, v := range fd.Attributes {
		d.Attributes[k] = v
	}
	// The exact size the driver publishes, not the forecast's.
	d.Capacity["gpu.amd.com/memory"] = resourceapi.DeviceCapacity{Value: resource.MustParse("196592Mi")}
	devices := func(f string) []LegacyDevice {
		if f == "amd-gpu" {
			return []LegacyDevice{d}
		}
		return nil
	}
	for k, v := range labels {
		got, ok := p.LegacyLabel(k, nil, devices)
		switch k {
		case "amd.com/gpu.family", "amd.com/gpu.cu-count":
			if ok {
				t.Errorf("%s derives as %q, want no rule", k, got)
			}
			continue
		}
		if !ok || got != p.CanonicalLabelValue(k, v) {
			t.Errorf("%s derives as %q (%v), the node has %q", k, got, ok, v)
		}
	}
	if got := p.CanonicalLabelValue("amd.com/gpu.device-id", "0x74A1"); got != "74a1" {
		t.Errorf("canonical device ID %q, want 74a1", got)
	}
}
