package feasibility

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/feasibility/upstream"
	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
)

const (
	gpu = fleetgen.DriverGPU
	nic = fleetgen.DriverNIC
	tpu = fleetgen.DriverTPU
)

// checkCase is one feasibility question and its expected answer.
type checkCase struct {
	inventory func(t testing.TB) *Inventory
	pod       *corev1.Pod
	claims    []*resourceapi.ResourceClaimSpec

	wantKind        VerdictKind
	wantCode        ReasonCode
	wantNode        string
	wantResults     []resourceapi.DeviceRequestAllocationResult
	wantReasonParts []string // substrings that must appear in the reasons
}

func fleet(names ...string) func(t testing.TB) *Inventory {
	return func(t testing.TB) *Inventory { return inventoryOf(t, names...) }
}

// busyDGX is dgx-h100 with every GPU allocated to a running claim.
func busyDGX(t testing.TB) *Inventory {
	inv := inventoryOf(t, "dgx-h100")
	f := fleetgen.Fleet{Slices: inv.Slices}
	inv.Claims = fleetgen.AllocateAll(f, gpu, fleetgen.ClassGPU)
	return inv
}

// taintedDGX is dgx-h100 where a DeviceTaintRule takes gpu-0 of dgx-h100-0 out of service.
func taintedDGX(t testing.TB) *Inventory {
	inv := inventoryOf(t, "dgx-h100")
	inv.TaintRules = []*resourceapi.DeviceTaintRule{{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-0-xid-79"},
		Spec: resourceapi.DeviceTaintRuleSpec{
			DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To(gpu), Pool: ptr.To("dgx-h100-0"), Device: ptr.To("gpu-0")},
			Taint:          resourceapi.DeviceTaint{Key: "gpu.nvidia.com/xid", Value: "79", Effect: resourceapi.DeviceTaintEffectNoSchedule},
		},
	}}
	return inv
}

func checkCases() map[string]checkCase {
	pod := makePod("trainer", "ml").Obj()
	return map[string]checkCase{
		"one H100 fits on the first DGX node": {
			inventory:   fleet("dgx-h100"),
			pod:         pod,
			claims:      []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1).Obj()},
			wantKind:    FitsNow,
			wantCode:    ReasonFits,
			wantNode:    "dgx-h100-0",
			wantResults: []resourceapi.DeviceRequestAllocationResult{result("gpu", gpu, "dgx-h100-0", "gpu-0")},
		},
		"a count of zero is defaulted to one device": {
			inventory:   fleet("l4-inference"),
			pod:         pod,
			claims:      []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 0).Obj()},
			wantKind:    FitsNow,
			wantNode:    "l4-inference-0",
			wantResults: []resourceapi.DeviceRequestAllocationResult{result("gpu", gpu, "l4-inference-0", "gpu-0")},
		},
		"the first alternative wins where it fits": {
			inventory: fleet("dgx-h100", "l4-inference"),
			pod:       pod,
			claims: []*resourceapi.ResourceClaimSpec{makeClaim().FirstAvailable("gpu",
				sub("h100x2", fleetgen.ClassGPU, 2, h100), sub("a100x1", fleetgen.ClassGPU, 1, a100)).Obj()},
			wantKind: FitsNow,
			wantNode: "dgx-h100-0",
			wantResults: []resourceapi.DeviceRequestAllocationResult{
				result("gpu/h100x2", gpu, "dgx-h100-0", "gpu-0"), result("gpu/h100x2", gpu, "dgx-h100-0", "gpu-1"),
			},
		},
		"the second alternative wins where the first cannot fit": {
			inventory: fleet("a100-mig"),
			pod:       pod,
			claims: []*resourceapi.ResourceClaimSpec{makeClaim().FirstAvailable("gpu",
				sub("h100x2", fleetgen.ClassGPU, 2, h100), sub("a100x1", fleetgen.ClassGPU, 1, a100)).Obj()},
			wantKind:    FitsNow,
			wantNode:    "a100-mig-0",
			wantResults: []resourceapi.DeviceRequestAllocationResult{result("gpu/a100x1", gpu, "a100-mig-0", "gpu-2")},
		},
		"a MIG slice is preferred over a full GPU": {
			inventory: fleet("a100-mig"),
			pod:       pod,
			claims: []*resourceapi.ResourceClaimSpec{makeClaim().FirstAvailable("gpu",
				sub("mig", fleetgen.ClassMIG, 1, `device.attributes["gpu.nvidia.com"].profile == "3g.40gb"`),
				sub("full", fleetgen.ClassGPU, 1)).Obj()},
			wantKind:    FitsNow,
			wantNode:    "a100-mig-0",
			wantResults: []resourceapi.DeviceRequestAllocationResult{result("gpu/mig", gpu, "a100-mig-0", "gpu-1-mig-3g40gb-9-0")},
		},
		"MIG slices of one parent GPU are aligned on parentUUID": {
			inventory: fleet("a100-mig"),
			pod:       pod,
			claims: []*resourceapi.ResourceClaimSpec{makeClaim().
				Exactly("mig", fleetgen.ClassMIG, 2, `device.attributes["gpu.nvidia.com"].profile == "3g.40gb"`).
				MatchAttribute("gpu.nvidia.com/parentUUID").Obj()},
			wantKind: FitsNow,
			wantNode: "a100-mig-0",
			wantResults: []resourceapi.DeviceRequestAllocationResult{
				result("mig", gpu, "a100-mig-0", "gpu-1-mig-3g40gb-9-0"), result("mig", gpu, "a100-mig-0", "gpu-1-mig-3g40gb-9-4"),
			},
		},
		"a GPU gets the NIC on its PCIe root": {
			inventory: fleet("dgx-h100"),
			pod:       pod,
			claims: []*resourceapi.ResourceClaimSpec{makeClaim().
				Exactly("gpu", fleetgen.ClassGPU, 1, `device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:4d"`).
				Exactly("nic", fleetgen.ClassNIC, 1).
				MatchAttribute("resource.kubernetes.io/pcieRoot", "gpu", "nic").Obj()},
			wantKind: FitsNow,
			wantNode: "dgx-h100-0",
			wantResults: []resourceapi.DeviceRequestAllocationResult{
				result("gpu", gpu, "dgx-h100-0", "gpu-2"), result("nic", nic, "dgx-h100-0", "pci-0000-50-00-0"),
			},
		},
		"four GPUs, four NICs and CPUs align on one NUMA node": {
			inventory: fleet("dgx-h100"),
			pod:       pod,
			claims: []*resourceapi.ResourceClaimSpec{makeClaim().
				Exactly("gpu", fleetgen.ClassGPU, 4).Exactly("nic", fleetgen.ClassNIC, 4).CPU("cpu", "32").
				MatchAttribute("resource.kubernetes.io/numaNode").Obj()},
			wantKind: FitsNow,
			wantNode: "dgx-h100-0",
		},
		"two GPUs on one PCIe root never fit on a DGX": {
			inventory: fleet("dgx-h100"),
			pod:       pod,
			claims: []*resourceapi.ResourceClaimSpec{makeClaim().
				Exactly("gpu", fleetgen.ClassGPU, 2).Exactly("nic", fleetgen.ClassNIC, 1).
				MatchAttribute("resource.kubernetes.io/pcieRoot").Obj()},
			wantKind:        NeverFits,
			wantCode:        ReasonNoMatchingDevices,
			wantReasonParts: []string{"2 nodes (dgx-h100-0, dgx-h100-1) devices match but the allocator found no solution"},
		},
		"a busy fleet fits when its devices are free": {
			inventory:       busyDGX,
			pod:             pod,
			claims:          []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1).Obj()},
			wantKind:        FitsWhenFree,
			wantCode:        ReasonDevicesInUse,
			wantNode:        "dgx-h100-0",
			wantResults:     []resourceapi.DeviceRequestAllocationResult{result("gpu", gpu, "dgx-h100-0", "gpu-0")},
			wantReasonParts: []string{"have 0 free devices of class gpu.nvidia.com matching request gpu (needs 1)"},
		},
		"a legacy-only fleet never fits": {
			inventory:       fleet("legacy-gfd"),
			pod:             pod,
			claims:          []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 8).Obj()},
			wantKind:        NeverFits,
			wantCode:        ReasonNoCandidateNodes,
			wantReasonParts: []string{"2 nodes (legacy-gfd-0, legacy-gfd-1) publish no DRA devices"},
		},
		"a product no node publishes never fits": {
			inventory: fleet("mixed"),
			pod:       pod,
			claims: []*resourceapi.ResourceClaimSpec{makeClaim().
				Exactly("gpu", fleetgen.ClassGPU, 1, `device.attributes["gpu.nvidia.com"].productName == "NVIDIA B200"`).Obj()},
			wantKind: NeverFits,
			wantCode: ReasonNoMatchingDevices,
			wantReasonParts: []string{
				"(a100-mig-0, a100-mig-1, dgx-h100-0 and 5 more) have 0 devices of class gpu.nvidia.com matching request gpu (needs 1)",
				"publish no DRA devices", "had untolerated taint {google.com/tpu: present}",
			},
		},
		"a CEL runtime error is a reason, not a crash": {
			inventory: fleet("dgx-h100"),
			pod:       pod,
			claims: []*resourceapi.ResourceClaimSpec{makeClaim().
				Exactly("gpu", fleetgen.ClassGPU, 1, `device.attributes["gpu.nvidia.com"].gpuModuleID == 1`).Obj()},
			wantKind:        NeverFits,
			wantCode:        ReasonAllocatorError,
			wantReasonParts: []string{"allocator error on node dgx-h100-0", "CEL runtime error", "gpuModuleID"},
		},
		"an unknown device class never fits": {
			inventory:       fleet("dgx-h100"),
			pod:             pod,
			claims:          []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", "gpu.example.com", 1).Obj()},
			wantKind:        NeverFits,
			wantCode:        ReasonDeviceClassNotFound,
			wantReasonParts: []string{`the fleet has no DeviceClass gpu.example.com (request gpu): install`},
		},
		"tainted TPU nodes need a toleration": {
			inventory:       fleet("tpu-v5e"),
			pod:             pod,
			claims:          []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("tpu", fleetgen.ClassTPU, 8).Obj()},
			wantKind:        NeverFits,
			wantCode:        ReasonNoCandidateNodes,
			wantReasonParts: []string{"2 nodes (tpu-v5e-0, tpu-v5e-1) had untolerated taint {google.com/tpu: present}"},
		},
		"tolerating the TPU taint fits": {
			inventory: fleet("tpu-v5e"),
			pod:       makePod("tpu", "ml").Tolerate("google.com/tpu").Obj(),
			claims: []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("tpu", fleetgen.ClassTPU, 8,
				`device.attributes["tpu.google.com"].?topology.orValue("") == "2x4"`).Obj()},
			wantKind: FitsNow,
			wantNode: "tpu-v5e-0",
		},
		"the nodeSelector picks the node": {
			inventory:   fleet("l4-inference"),
			pod:         makePod("infer", "ml").NodeSelector("kubernetes.io/hostname", "l4-inference-3").Obj(),
			claims:      []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 2, l4).Obj()},
			wantKind:    FitsNow,
			wantNode:    "l4-inference-3",
			wantResults: []resourceapi.DeviceRequestAllocationResult{result("gpu", gpu, "l4-inference-3", "gpu-0"), result("gpu", gpu, "l4-inference-3", "gpu-1")},
		},
		"a nodeSelector on a node too small never fits": {
			inventory: fleet("l4-inference"),
			pod:       makePod("infer", "ml").NodeSelector("kubernetes.io/hostname", "l4-inference-0").Obj(),
			claims:    []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 2, l4).Obj()},
			wantKind:  NeverFits,
			wantCode:  ReasonNoMatchingDevices,
			wantReasonParts: []string{
				"3 nodes (l4-inference-2, l4-inference-3, l4-inference-1) didn't match Pod's node affinity/selector",
				"1 node (l4-inference-0) have 1 devices of class gpu.nvidia.com matching request gpu (needs 2)",
			},
		},
		"required node affinity excludes the only matching nodes": {
			inventory: fleet("mixed"),
			pod:       makePod("infer", "ml").RequiredNodeAffinity("topology.kubernetes.io/zone", corev1.NodeSelectorOpNotIn, "zone-a").Obj(),
			claims:    []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1, h100).Obj()},
			wantKind:  NeverFits,
			wantCode:  ReasonNoMatchingDevices,
			wantReasonParts: []string{
				"2 nodes (dgx-h100-0, dgx-h100-1) didn't match Pod's node affinity/selector",
				"6 nodes (a100-mig-0, a100-mig-1, l4-inference-0 and 3 more) have 0 devices of class gpu.nvidia.com matching request gpu (needs 1)",
			},
		},
		"a device taken out by a DeviceTaintRule is skipped": {
			inventory:   taintedDGX,
			pod:         pod,
			claims:      []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1).Obj()},
			wantKind:    FitsNow,
			wantNode:    "dgx-h100-0",
			wantResults: []resourceapi.DeviceRequestAllocationResult{result("gpu", gpu, "dgx-h100-0", "gpu-1")},
		},
		"two claims are allocated together": {
			inventory: fleet("l4-inference"),
			pod:       pod,
			claims: []*resourceapi.ResourceClaimSpec{
				makeClaim().Exactly("a", fleetgen.ClassGPU, 1).Obj(),
				makeClaim().Exactly("b", fleetgen.ClassGPU, 1).Obj(),
			},
			wantKind:    FitsNow,
			wantNode:    "l4-inference-2",
			wantResults: []resourceapi.DeviceRequestAllocationResult{result("a", gpu, "l4-inference-2", "gpu-0"), result("b", gpu, "l4-inference-2", "gpu-1")},
		},
	}
}

func TestCheck(t *testing.T) {
	for name, tc := range checkCases() {
		t.Run(name, func(t *testing.T) {
			snap, err := NewSnapshot(tc.inventory(t), 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			got := NewChecker(Options{}).Check(t.Context(), snap, tc.pod, tc.claims)
			if got.Kind != tc.wantKind {
				t.Fatalf("kind: want %s, got %s (reasons %q)", tc.wantKind, got.Kind, got.Reasons)
			}
			if tc.wantCode != "" && got.Code != tc.wantCode {
				t.Errorf("code: want %s, got %s (reasons %q)", tc.wantCode, got.Code, got.Reasons)
			}
			if got.Node != tc.wantNode {
				t.Errorf("node: want %q, got %q", tc.wantNode, got.Node)
			}
			if tc.wantResults != nil {
				if diff := cmp.Diff(tc.wantResults, got.Results); diff != "" {
					t.Errorf("results (-want,+got):\n%s", diff)
				}
			}
			for _, part := range tc.wantReasonParts {
				if !slices.ContainsFunc(got.Reasons, func(r string) bool { return strings.Contains(r, part) }) {
					t.Errorf("no reason contains %q; reasons:\n%s", part, strings.Join(got.Reasons, "\n"))
				}
			}
			if got.Cached {
				t.Errorf("first check is cached")
			}
		})
	}
}

// TestCheckAgreesWithAllocator runs the upstream allocator over every node, without pruning,
// caching or parallelism, and fails if the checker's verdict differs.
func TestCheckAgreesWithAllocator(t *testing.T) {
	cases := checkCases()
	// A synthetic fleet with some busy nodes and claims of every shape.
	synthetic := func(testing.TB) *Inventory {
		f := fleetgen.Synthetic(12)
		inv := inventoryFrom(f)
		half := fleetgen.Fleet{Slices: slices.DeleteFunc(slices.Clone(f.Slices), func(s *resourceapi.ResourceSlice) bool {
			return *s.Spec.NodeName >= "node-00006"
		})}
		inv.Claims = fleetgen.AllocateAll(half, gpu, fleetgen.ClassGPU)
		return inv
	}
	for name, claim := range map[string]*resourceapi.ResourceClaimSpec{
		"eight H100s":                  makeClaim().Exactly("gpu", fleetgen.ClassGPU, 8, h100).Obj(),
		"eight A100s":                  makeClaim().Exactly("gpu", fleetgen.ClassGPU, 8, a100).Obj(),
		"one L4":                       makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1, l4).Obj(),
		"seven 1g.10gb slices":         makeClaim().Exactly("mig", fleetgen.ClassMIG, 7, `device.attributes["gpu.nvidia.com"].profile == "1g.10gb"`).Obj(),
		"all MIG devices":              {Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "mig", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: fleetgen.ClassMIG, AllocationMode: resourceapi.DeviceAllocationModeAll}}}}},
		"an H100 with an aligned NIC":  makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1, h100).Exactly("nic", fleetgen.ClassNIC, 1).MatchAttribute("resource.kubernetes.io/pcieRoot").Obj(),
		"H100 or two L4 or any":        makeClaim().FirstAvailable("gpu", sub("h100", fleetgen.ClassGPU, 1, h100), sub("l4", fleetgen.ClassGPU, 2, l4), sub("any", fleetgen.ClassGPU, 1)).Obj(),
		"memory at least 40Gi":         makeClaim().Exactly("gpu", fleetgen.ClassGPU, 4, `device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`).Obj(),
		"compute capability 8.9":       makeClaim().Exactly("gpu", fleetgen.ClassGPU, 2, `device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("8.9.0")) >= 0`).Obj(),
		"a bound domain map (opaque)":  makeClaim().Exactly("gpu", fleetgen.ClassGPU, 2, `cel.bind(g, device.attributes["gpu.nvidia.com"], g.architecture == "Ampere")`).Obj(),
		"NUMA-aligned GPUs, NICs, CPU": makeClaim().Exactly("gpu", fleetgen.ClassGPU, 4).Exactly("nic", fleetgen.ClassNIC, 4).CPU("cpu", "100").MatchAttribute("resource.kubernetes.io/numaNode").Obj(),
	} {
		cases["synthetic fleet: "+name] = checkCase{inventory: synthetic, pod: makePod("p", "ns").Obj(), claims: []*resourceapi.ResourceClaimSpec{claim}}
	}

	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inv := tc.inventory(t)
			snap, err := NewSnapshot(inv, 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			got := NewChecker(Options{Parallelism: 3}).Check(t.Context(), snap, tc.pod, tc.claims)
			want := rawVerdict(t, snap, tc.pod, tc.claims)
			// Shares of consumable capacity get random IDs.
			ignoreShareID := cmpopts.IgnoreFields(resourceapi.DeviceRequestAllocationResult{}, "ShareID")
			if diff := cmp.Diff(want, Verdict{Kind: got.Kind, Node: got.Node, Results: got.Results}, ignoreShareID); diff != "" {
				t.Errorf("checker disagrees with the allocator (-want,+got):\n%s\nreasons: %q", diff, got.Reasons)
			}
		})
	}
}

// rawVerdict is the reference: every node in name order that the pod may use, one Allocate each.
func rawVerdict(t *testing.T, snap *Snapshot, pod *corev1.Pod, specs []*resourceapi.ResourceClaimSpec) Verdict {
	t.Helper()
	claims, err := upstream.DefaultClaims(pod, specs)
	if err != nil {
		return Verdict{Kind: NeverFits}
	}
	for _, c := range claims {
		for _, r := range c.Spec.Devices.Requests {
			classes := []string{}
			if r.Exactly != nil {
				classes = append(classes, r.Exactly.DeviceClassName)
			}
			for _, s := range r.FirstAvailable {
				classes = append(classes, s.DeviceClassName)
			}
			for _, cl := range classes {
				if _, ok := snap.classes[cl]; !ok {
					return Verdict{Kind: NeverFits}
				}
			}
		}
	}
	allocs, err := snap.allocatorsFor(t.Context(), NewChecker(Options{}).celCache(snap.features))
	if err != nil {
		t.Fatal(err)
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, alloc := range []struct {
		kind VerdictKind
		a    interface {
			Allocate(context.Context, *corev1.Node, []*resourceapi.ResourceClaim) ([]resourceapi.AllocationResult, error)
		}
	}{{FitsNow, allocs.now}, {FitsWhenFree, allocs.free}} {
		// Like kube-scheduler: among the nodes where the claims fit, the one
		// whose allocation scores best (8 minus the index of the alternative
		// each firstAvailable request got); the first in name order on a tie.
		var best *Verdict
		bestScore := int64(-1)
		for _, ni := range snap.nodes {
			if upstream.NodeRejects(required, pod, ni.node) != "" {
				continue
			}
			out, err := alloc.a.Allocate(t.Context(), ni.node, claims)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					t.Fatal(err)
				}
				// Fatal (per-node failures are not expected in these fleets).
				return Verdict{Kind: NeverFits}
			}
			if len(out) != len(claims) {
				continue
			}
			var sc int64
			for ci, c := range claims {
				for _, r := range c.Spec.Devices.Requests {
					for i, sub := range r.FirstAvailable {
						if slices.ContainsFunc(out[ci].Devices.Results, func(res resourceapi.DeviceRequestAllocationResult) bool {
							return res.Request == r.Name+"/"+sub.Name
						}) {
							sc += int64(8 - i)
						}
					}
				}
			}
			if sc > bestScore {
				v := Verdict{Kind: alloc.kind, Node: ni.node.Name}
				for _, r := range out {
					v.Results = append(v.Results, r.Devices.Results...)
				}
				best, bestScore = &v, sc
			}
		}
		if best != nil {
			return *best
		}
	}
	return Verdict{Kind: NeverFits}
}

func TestCheckCachesVerdicts(t *testing.T) {
	snap, err := NewSnapshot(inventoryOf(t, "dgx-h100"), 7, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	c := NewChecker(Options{})
	claims := []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 2).Obj()}
	first := c.Check(t.Context(), snap, makePod("a-1", "ns").Obj(), claims)
	second := c.Check(t.Context(), snap, makePod("a-2", "ns").Obj(), claims)
	if first.Cached || !second.Cached {
		t.Fatalf("want first uncached and second cached, got %v and %v", first.Cached, second.Cached)
	}
	second.Cached = false
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("cached verdict differs (-want,+got):\n%s", diff)
	}

	next, err := NewSnapshot(inventoryOf(t, "dgx-h100"), 8, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Check(t.Context(), next, makePod("a-3", "ns").Obj(), claims); v.Cached {
		t.Errorf("a new inventory generation was served from the cache")
	}
	other := makePod("a-4", "ns").NodeSelector("kubernetes.io/hostname", "dgx-h100-1").Obj()
	if v := c.Check(t.Context(), snap, other, claims); v.Cached || v.Node != "dgx-h100-1" {
		t.Errorf("a pod with other node constraints: cached %v, node %q", v.Cached, v.Node)
	}
}

func TestCheckIsUnknownWithoutInventoryOrTime(t *testing.T) {
	claims := []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 2, h100).Exactly("nic", fleetgen.ClassNIC, 1).MatchAttribute("resource.kubernetes.io/pcieRoot").Obj()}
	snap, err := NewSnapshot(inventoryFrom(fleetgen.Synthetic(400)), 1, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		snap     *Snapshot
		ctx      func() context.Context
		wantCode ReasonCode
	}{
		"a nil snapshot means the inventory is not synced": {
			ctx: t.Context, wantCode: ReasonInventoryNotSynced,
		},
		"an expired context hits the deadline": {
			snap: snap,
			ctx: func() context.Context {
				ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
				t.Cleanup(cancel)
				return ctx
			},
			wantCode: ReasonDeadlineExceeded,
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := NewChecker(Options{})
			got := c.Check(tc.ctx(), tc.snap, makePod("p", "ns").Obj(), claims)
			if got.Kind != Unknown || got.Code != tc.wantCode {
				t.Errorf("want Unknown/%s, got %s/%s (%q)", tc.wantCode, got.Kind, got.Code, got.Reasons)
			}
			if again := c.Check(t.Context(), tc.snap, makePod("p", "ns").Obj(), claims); again.Cached {
				t.Errorf("an Unknown verdict was cached")
			}
		})
	}
}

func TestPruningIsCounted(t *testing.T) {
	snap, err := NewSnapshot(inventoryOf(t, "mixed"), 1, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	got := NewChecker(Options{}).Check(t.Context(), snap, makePod("p", "ns").Obj(),
		[]*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 2, l4).Obj()})
	want := Verdict{Kind: FitsNow, Code: ReasonFits, Node: "l4-inference-2", NodesConsidered: 12, NodesPruned: 10}
	got.Results, got.Reasons = nil, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestLoadInventory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, tc := range map[string]struct {
		content   string
		wantErr   string
		wantNodes int
	}{
		"a list and comments are read": {
			content:   "# fleet\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Node\n  metadata: {name: b}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: ignored}\n",
			wantNodes: 2,
		},
		"an unknown field names the file and document": {
			content: "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec: {driverr: x}\n",
			wantErr: "bad.yaml: document 1: resource slice: error unmarshaling JSON",
		},
		"an old API version is rejected": {
			content: "apiVersion: resource.k8s.io/v1beta1\nkind: DeviceClass\nmetadata: {name: c}\n",
			wantErr: "document 0: unsupported version resource.k8s.io/v1beta1 of DeviceClass",
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := write("bad.yaml", tc.content)
			inv, err := LoadInventory(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(inv.Nodes) != tc.wantNodes {
				t.Errorf("want %d nodes, got %d", tc.wantNodes, len(inv.Nodes))
			}
		})
	}
}

func TestShippedFleetsLoad(t *testing.T) {
	for name, want := range map[string][4]int{ // nodes, slices, classes, devices
		"dgx-h100":     {2, 6, 4, 36},
		"a100-mig":     {2, 2, 2, 24},
		"l4-inference": {4, 4, 2, 6},
		"tpu-v5e":      {2, 2, 1, 16},
		"legacy-gfd":   {2, 0, 2, 0},
		"mixed":        {12, 14, 5, 82},
	} {
		t.Run(name, func(t *testing.T) {
			inv := inventoryOf(t, name)
			snap, err := NewSnapshot(inv, 1, DefaultFeatures())
			if err != nil {
				t.Fatal(err)
			}
			got := [4]int{len(inv.Nodes), len(inv.Slices), len(inv.Classes), snap.devices}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestBusyCheckerAnswersUnknownButServesCachedVerdicts(t *testing.T) {
	snap, err := NewSnapshot(inventoryOf(t, "l4-inference"), 1, DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	c := NewChecker(Options{MaxSearches: 1, Timeout: 200 * time.Millisecond})
	pod := makePod("p", "ns").Obj()
	l4 := []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 1).Obj()}
	if v := c.Check(t.Context(), snap, pod, l4); v.Kind != FitsNow {
		t.Fatalf("first check: %s %q", v.Kind, v.Reasons)
	}
	c.searches <- struct{}{} // every slot taken by a long search
	defer func() { <-c.searches }()
	other := []*resourceapi.ResourceClaimSpec{makeClaim().Exactly("gpu", fleetgen.ClassGPU, 2).Obj()}
	if v := c.Check(t.Context(), snap, pod, other); v.Kind != Unknown || v.Code != ReasonBusy {
		t.Errorf("uncached check with no free slot: %s %s, want Unknown Busy", v.Kind, v.Code)
	}
	if v := c.Check(t.Context(), snap, pod, l4); v.Kind != FitsNow || !v.Cached {
		t.Errorf("cached verdict while busy: %s cached=%v", v.Kind, v.Cached)
	}
}
