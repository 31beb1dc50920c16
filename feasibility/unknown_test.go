package feasibility

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/translate"
)

// unknownFleet: node f-0's slice is a forecast's (8 A100s whose
// driverVersion, pcieRoot and numaNode it leaves unknown, as its
// claimbridge.io/unknown-attributes says), node r-0's a driver's (8 H100s
// on driver 550.54.15, two per PCIe root). forecastNodes more forecast
// nodes like f-0 are added (f-1, …).
func unknownFleet(forecastNodes int) *Inventory {
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"cpu": resource.MustParse("64"), "pods": resource.MustParse("110")}}}
	}
	slice := func(name, product string, known bool) *resourceapi.ResourceSlice {
		s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-gpus"},
			Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: ptr.To(name), Pool: resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1}}}
		for i := range 8 {
			d := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"type": {StringValue: ptr.To("gpu")}, "productName": {StringValue: ptr.To(product)}},
				Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}}
			if known {
				d.Attributes["driverVersion"] = resourceapi.DeviceAttribute{VersionValue: ptr.To("550.54.15")}
				d.Attributes["resource.kubernetes.io/pcieRoot"] = resourceapi.DeviceAttribute{StringValue: ptr.To(fmt.Sprintf("pci0000:%02d", i/2))}
			}
			s.Spec.Devices = append(s.Spec.Devices, d)
		}
		if !known {
			s.Annotations = map[string]string{api.AnnotationUnknownAttributes: "resource.kubernetes.io/pcieRoot, gpu.nvidia.com/driverVersion,resource.kubernetes.io/numaNode"}
		}
		return s
	}
	inv := &Inventory{Classes: []*resourceapi.DeviceClass{{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"},
		Spec: resourceapi.DeviceClassSpec{Selectors: celSelectors([]string{`device.driver == "gpu.nvidia.com"`})}}}}
	inv.Nodes = append(inv.Nodes, node("r-0"))
	inv.Slices = append(inv.Slices, slice("r-0", "NVIDIA H100 80GB HBM3", true))
	for i := range forecastNodes {
		name := fmt.Sprintf("f-%d", i)
		inv.Nodes = append(inv.Nodes, node(name))
		inv.Slices = append(inv.Slices, slice(name, "NVIDIA A100-SXM4-80GB", false))
	}
	return inv
}

const (
	driver550  = `has(device.attributes["gpu.nvidia.com"].driverVersion) && device.attributes["gpu.nvidia.com"].driverVersion.major() == 550`
	driver580  = `has(device.attributes["gpu.nvidia.com"].driverVersion) && device.attributes["gpu.nvidia.com"].driverVersion.major() == 580`
	a100Spaced = `device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100-SXM4-80GB"`
)

// TestUnknownAttributesMakeUnknownVerdicts: on a fleet whose devices leave
// attributes unknown, a claim served on no node is Unknown, naming what it
// reads of them, when it would be served there without what reads them;
// NeverFits when it would not be even then, or reads nothing unknown.
func TestUnknownAttributesMakeUnknownVerdicts(t *testing.T) {
	cases := map[string]struct {
		forecastNodes int
		claim         *resourceapi.ResourceClaimSpec
		wantKind      VerdictKind
		wantCode      ReasonCode
		wantNode      string
		wantDepends   []string
	}{
		"a driver version the forecast does not know is Unknown": {
			forecastNodes: 1, claim: makeClaim().Exactly("gpu", "gpu.nvidia.com", 1, a100Spaced, driver580).Obj(),
			wantKind: Unknown, wantCode: ReasonAttributesUnknown, wantDepends: []string{"gpu.nvidia.com/driverVersion"},
		},
		"the same claim fits where the driver publishes the version": {
			forecastNodes: 1, claim: makeClaim().Exactly("gpu", "gpu.nvidia.com", 1, driver550).Obj(),
			wantKind: FitsNow, wantCode: ReasonFits, wantNode: "r-0",
		},
		"what the forecast knows still decides: nine GPUs fit no node, whatever the version": {
			forecastNodes: 1, claim: makeClaim().Exactly("gpu", "gpu.nvidia.com", 9, driver580).Obj(),
			wantKind: NeverFits, wantCode: ReasonNoMatchingDevices,
		},
		"a product the forecast knows is not there decides too": {
			forecastNodes: 1, claim: makeClaim().Exactly("gpu", "gpu.nvidia.com", 1, `device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"`, driver580).Obj(),
			wantKind: NeverFits, wantCode: ReasonNoMatchingDevices,
		},
		"a node whose devices publish the version decides on it: an H100 on 580 is NeverFits": {
			forecastNodes: 1, claim: makeClaim().Exactly("gpu", "gpu.nvidia.com", 1, h100, driver580).Obj(),
			wantKind: NeverFits, wantCode: ReasonNoMatchingDevices,
		},
		"a claim that reads nothing unknown is NeverFits": {
			forecastNodes: 1, claim: makeClaim().Exactly("gpu", "gpu.nvidia.com", 1, `device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"`).Obj(),
			wantKind: NeverFits, wantCode: ReasonNoMatchingDevices,
		},
		"without forecast nodes the driver's answer stands": {
			forecastNodes: 0, claim: makeClaim().Exactly("gpu", "gpu.nvidia.com", 1, driver580).Obj(),
			wantKind: NeverFits, wantCode: ReasonNoMatchingDevices,
		},
		"alignment on an unknown PCIe root is Unknown": {
			forecastNodes: 1,
			claim: makeClaim().Exactly("a", "gpu.nvidia.com", 1, a100Spaced).Exactly("b", "gpu.nvidia.com", 1, a100Spaced).
				MatchAttribute("resource.kubernetes.io/pcieRoot", "a", "b").Obj(),
			wantKind: Unknown, wantCode: ReasonAttributesUnknown, wantDepends: []string{"resource.kubernetes.io/pcieRoot"},
		},
		"alignment the driver publishes fits there": {
			forecastNodes: 1,
			claim: makeClaim().Exactly("a", "gpu.nvidia.com", 1).Exactly("b", "gpu.nvidia.com", 1).
				MatchAttribute("resource.kubernetes.io/pcieRoot", "a", "b").Obj(),
			wantKind: FitsNow, wantCode: ReasonFits, wantNode: "r-0",
		},
		"an unguarded selector on an unknown attribute is Unknown, not an allocator error": {
			forecastNodes: 1, claim: makeClaim().Exactly("gpu", "gpu.nvidia.com", 1, a100Spaced, `device.attributes["gpu.nvidia.com"].driverVersion.major() == 580`).Obj(),
			wantKind: Unknown, wantCode: ReasonAttributesUnknown, wantDepends: []string{"gpu.nvidia.com/driverVersion"},
		},
		"a selector that reads the device as a whole may read anything unknown": {
			forecastNodes: 1, claim: makeClaim().Exactly("gpu", "gpu.nvidia.com", 1, a100Spaced,
				`cel.bind(g, device.attributes["gpu.nvidia.com"], has(g.driverVersion) && g.driverVersion.major() == 580)`).Obj(),
			wantKind: Unknown, wantCode: ReasonAttributesUnknown,
			wantDepends: []string{"gpu.nvidia.com/driverVersion", "resource.kubernetes.io/numaNode", "resource.kubernetes.io/pcieRoot"},
		},
		"many forecast nodes: the answer names one and counts the others": {
			forecastNodes: 3, claim: makeClaim().Exactly("gpu", "gpu.nvidia.com", 2, a100Spaced, driver580).Obj(),
			wantKind: Unknown, wantCode: ReasonAttributesUnknown, wantDepends: []string{"gpu.nvidia.com/driverVersion"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			snap, err := NewSnapshot(unknownFleet(tc.forecastNodes), 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			c := NewChecker(Options{})
			v := c.Check(t.Context(), snap, makePod("p", "ns").Obj(), []*resourceapi.ResourceClaimSpec{tc.claim})
			if again := c.Check(t.Context(), snap, makePod("p", "ns").Obj(), []*resourceapi.ResourceClaimSpec{tc.claim}); !again.Cached || again.Kind != v.Kind {
				t.Errorf("asked again: %s, cached %v; want the same answer from the cache", again.Kind, again.Cached)
			}
			if v.Kind != tc.wantKind || v.Code != tc.wantCode || v.Node != tc.wantNode {
				t.Fatalf("verdict %s (%s) on %q, want %s (%s) on %q: %v", v.Kind, v.Code, v.Node, tc.wantKind, tc.wantCode, tc.wantNode, v.Reasons)
			}
			if diff := cmp.Diff(tc.wantDepends, v.DependsOn); diff != "" {
				t.Errorf("DependsOn (-want,+got):\n%s", diff)
			}
			if v.Kind == Unknown {
				if len(v.Reasons) != 1 || !strings.Contains(v.Reasons[0], "f-0") || !strings.Contains(v.Reasons[0], strings.Join(tc.wantDepends, ", ")) {
					t.Errorf("reasons %q, want the node and the attributes named", v.Reasons)
				}
				if tc.forecastNodes > 1 && !strings.Contains(v.Reasons[0], fmt.Sprintf("and %d more like it", tc.forecastNodes-1)) {
					t.Errorf("reasons %q, want the other nodes counted", v.Reasons)
				}
			}
		})
	}
}

// TestUnknownAttributesInThePlacementCheck: where the translation lands
// on a node whose devices leave attributes it reads unknown is not known:
// the placement says so and names them; elsewhere it is proven as before.
func TestUnknownAttributesInThePlacementCheck(t *testing.T) {
	p := translate.DefaultPolicy()
	cases := map[string]struct {
		claim       *resourceapi.ResourceClaimSpec
		wantDepends []string
		wantEqual   bool
	}{
		"a claim on the driver's version depends on it on the forecast node": {
			claim: makeClaim().Exactly("gpu", "gpu.nvidia.com", 1, driver580).Obj(), wantDepends: []string{"gpu.nvidia.com/driverVersion"},
		},
		"a claim that reads nothing unknown is compared as before": {
			claim: makeClaim().Exactly("gpu", "gpu.nvidia.com", 1).Obj(), wantEqual: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			snap, err := NewSnapshot(unknownFleet(2), 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			legacy := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}}}
			pl := NewChecker(Options{}).Placement(t.Context(), snap, PlacementInput{Policy: p, Legacy: legacy, Translated: makePod("p", "ns").Obj(),
				Claims: []*resourceapi.ResourceClaimSpec{tc.claim}})
			if diff := cmp.Diff(tc.wantDepends, pl.DependsOn); diff != "" {
				t.Errorf("DependsOn (-want,+got):\n%s", diff)
			}
			if pl.Equal() != tc.wantEqual {
				t.Errorf("Equal %v, want %v: %+v", pl.Equal(), tc.wantEqual, pl)
			}
			if len(tc.wantDepends) > 0 && !strings.Contains(pl.Unknown, "and 1 more like it") {
				t.Errorf("Unknown %q, want the node class named", pl.Unknown)
			}
		})
	}
}

// TestUnknownAttributesAnnotation: the annotation is read as qualified
// names, trimmed, sorted and once each; devices of slices without it have
// none, and the devices' class keys differ by it.
func TestUnknownAttributesAnnotation(t *testing.T) {
	sl := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		api.AnnotationUnknownAttributes: " gpu.amd.com/numaNode,resource.kubernetes.io/pcieRoot,, gpu.amd.com/numaNode"}}}
	if got, want := unknownAttributes(sl), []string{"gpu.amd.com/numaNode", "resource.kubernetes.io/pcieRoot"}; !slices.Equal(got, want) {
		t.Errorf("unknownAttributes = %q, want %q", got, want)
	}
	if got := unknownAttributes(&resourceapi.ResourceSlice{}); got != nil {
		t.Errorf("unknownAttributes of a slice without the annotation = %q", got)
	}
	inv := unknownFleet(1)
	same := inv.Slices[1].DeepCopy()
	same.Name, same.Spec.NodeName, same.Spec.Pool.Name = "f-9-gpus", ptr.To("f-9"), "f-9"
	delete(same.Annotations, api.AnnotationUnknownAttributes)
	n := inv.Nodes[1].DeepCopy()
	n.Name, n.Labels = "f-9", map[string]string{"kubernetes.io/hostname": "f-9"}
	inv.Nodes, inv.Slices = append(inv.Nodes, n), append(inv.Slices, same)
	snap, err := NewSnapshot(inv, 1, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, c := range snap.nodeClassList(&classMemo{}) {
		for _, m := range c.members {
			keys[m.node.Name] = c.key
		}
	}
	if keys["f-0"] == keys["f-9"] {
		t.Error("a node whose devices leave attributes unknown is in the class of one with the same devices known to lack them")
	}
}
