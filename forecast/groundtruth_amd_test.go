package forecast

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/internal/testing/vendortruth"
)

// amdDetermined are the attributes and capacities the node labeller's
// labels determine on an AMD device, whole or a partition: the forecast
// must carry each and agree with the vendor's device (memory within the
// labeller's rounding to whole GiB).
var amdDetermined = []string{"computeUnits", "deviceID", "driverVersion", "driverVersionFull", "memory", "partitionProfile",
	"productName", "simdUnits", "type"}

// amdUndetermined are what no label tells: absent from the forecast, and
// Unknown.
var amdUndetermined = []string{"numaNode", "pciBusID", "pcieRoot"}

// TestAMDForecastAgreesWithTheVendorsDevices: a node of 8 MI300X labelled
// by AMD's node labeller, offering the device plugin's amd.com/gpu — 8
// whole GPUs, or 64 partitions in CPX mode — is forecast as the AMD DRA
// driver's devices as AMD published them (vendortruth): whole GPUs only,
// or partitions only, equal to the vendor's device on every attribute and
// capacity the labels determine. Without the labeller's
// compute-memory-partition a partitioned node is still its partitions,
// told by the labeller's count of GPUs; only partitionProfile is then
// unknown.
func TestAMDForecastAgreesWithTheVendorsDevices(t *testing.T) {
	cases := map[string]struct {
		model string
		gpus  int64
		// drop removes labels, add adds some.
		drop        []string
		add         map[string]string
		wantUnknown []string
	}{
		"whole GPUs in SPX mode": {model: "mi300x", gpus: 8},
		"a node in CPX mode":     {model: "mi300x-cpx", gpus: 64},
		"a node in CPX mode, without the partition label": {model: "mi300x-cpx", gpus: 64, drop: []string{"amd.com/gpu.compute-memory-partition"},
			add: map[string]string{"beta.amd.com/gpu.product-name.AMD_Instinct_MI300X_OAM": "8"}, wantUnknown: []string{"partitionProfile"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			labels, err := vendortruth.AMDLabels(tc.model)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.drop {
				delete(labels, k)
			}
			maps.Copy(labels, tc.add)
			vendor, ok, err := vendortruth.Devices("amd-" + tc.model)
			if err != nil || !ok || len(vendor) != 1 {
				t.Fatalf("vendortruth amd-%s: %d devices, %v, %v", tc.model, len(vendor), ok, err)
			}
			want := vendor[0]
			summary, got := forecastOne(t, gpuNode("gt-"+tc.model, labels, map[corev1.ResourceName]int64{"amd.com/gpu": tc.gpus}), DriverAMD)
			if int64(len(got)) != tc.gpus {
				t.Fatalf("%d devices forecast, want %d", len(got), tc.gpus)
			}
			drv := summary.Drivers[0]
			if u := append(slices.Clone(amdUndetermined), tc.wantUnknown...); !sameSet(u, drv.Unknown) {
				t.Errorf("Unknown %v, want %v", drv.Unknown, u)
			}
			for _, d := range got {
				for _, a := range amdDetermined {
					_, isAttr := d.Attributes[resourceapi.QualifiedName(a)]
					_, isCap := d.Capacity[resourceapi.QualifiedName(a)]
					if !isAttr && !isCap && !slices.Contains(tc.wantUnknown, a) {
						t.Errorf("%s: the labels determine %s, the forecast lacks it", d.Name, a)
					}
				}
				for name, a := range d.Attributes {
					wa, ok := want.Attributes[name]
					switch {
					case !ok:
						t.Errorf("%s: the forecast has %s, the vendor's device does not", d.Name, name)
					case attrString(a) != attrString(wa):
						t.Errorf("%s: %s is %s, the vendor's device says %s", d.Name, name, attrString(a), attrString(wa))
					}
				}
				for name, c := range d.Capacity {
					wc, ok := want.Capacity[name]
					if !ok {
						t.Errorf("%s: the forecast has capacity %s, the vendor's device does not", d.Name, name)
						continue
					}
					if name == "memory" {
						// The labeller's n G is any size in [n·1024−512, n·1024+512) MiB.
						gotMi, wantMi := c.Value.Value()>>20, wc.Value.Value()>>20
						if wantMi < gotMi-512 || wantMi >= gotMi+512 {
							t.Errorf("%s: memory %s, the vendor's %s is not a size the labeller rounds to it", d.Name, c.Value.String(), wc.Value.String())
						}
						continue
					}
					if c.Value.Cmp(wc.Value) != 0 {
						t.Errorf("%s: %s is %s, the vendor's device says %s", d.Name, name, c.Value.String(), wc.Value.String())
					}
				}
			}
		})
	}
}

// sameSet: a and b hold the same strings.
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
