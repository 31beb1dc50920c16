package decide_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// busyPool is the dgx-h100 fleet (16 H100 on DRA) with every GPU allocated,
// beside the legacy-gfd fleet (16 A100 on the device plugin, room for
// every pod unless legacyFull), its pods listed; pool labels the nodes whose
// names start with a key of pools with the value; cpu adds a node without
// GPUs ("cpu-0"), tpu the tpu-v5e fleet (TPU devices on DRA).
func busyPool(t *testing.T, pools map[string]map[string]string, legacyFull, cpu, tpu bool) (*feasibility.Inventory, *feasibility.Snapshot) {
	t.Helper()
	dirs := []string{"../examples/fleets/dgx-h100", "../examples/fleets/legacy-gfd"}
	if tpu {
		dirs = append(dirs, "../examples/fleets/tpu-v5e")
	}
	inv, err := feasibility.LoadInventory(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	inv.PodsListed = true
	if cpu {
		inv.Nodes = append(inv.Nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "cpu-0", Labels: map[string]string{corev1.LabelHostname: "cpu-0"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110"),
			}},
		})
	}
	for i, n := range inv.Nodes {
		n = n.DeepCopy()
		for prefix, labels := range pools {
			if strings.HasPrefix(n.Name, prefix) {
				for k, v := range labels {
					n.Labels[k] = v
				}
			}
		}
		inv.Nodes[i] = n
	}
	var results []resourceapi.DeviceRequestAllocationResult
	for _, sl := range inv.Slices {
		if sl.Spec.Driver != "gpu.nvidia.com" {
			continue
		}
		for _, d := range sl.Spec.Devices {
			results = append(results, resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: sl.Spec.Driver, Pool: sl.Spec.Pool.Name, Device: d.Name})
		}
	}
	if len(results) != 16 {
		t.Fatalf("%d DRA GPUs in the dgx-h100 fleet, want 16", len(results))
	}
	inv.Claims = append(inv.Claims, &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "every-gpu"},
		Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}},
	})
	if legacyFull {
		for i := range 2 {
			p := builders.MakePod(fmt.Sprintf("legacy-%d", i), "other").Container("c").Limit("nvidia.com/gpu", "8").Obj()
			p.Spec.NodeName = fmt.Sprintf("legacy-gfd-%d", i)
			inv.Pods = append(inv.Pods, p)
		}
	}
	snap, err := feasibility.NewSnapshot(inv, 1, feasibility.DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	return inv, snap
}

func autoscalingPolicy(t *testing.T, rule v1alpha1.AutoscalingRule) *translate.Policy {
	t.Helper()
	p, err := translate.NewPolicy(&v1alpha1.TranslationPolicy{
		APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
		Spec: v1alpha1.PolicySpec{Profiles: v1alpha1.DefaultProfileNames(), Autoscaling: rule},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAPodNeverWaitsForDRAInAnAutoscaledPool: with every DRA GPU taken, a
// pod that may run in a Karpenter pool whose nodes run it as submitted
// stays as submitted (AutoscalerIgnoresClaims), where whenDRABusy: Wait
// would translate it and where no device-plugin node has room (the
// autoscaler sees it Pending as submitted and adds a node); a pool that
// offers no GPUs, one the pod's selector excludes, labels the policy does
// not name and a policy whose autoscalers provision for claims leave the
// rules as they were (the pod waits for DRA: DRABusyWaiting), and so does
// a pool whose nodes only its translation could use — no node like them
// runs the pod as submitted — with the pool named in the warning. The
// test fails if the decision ignores the pool, its devices or the pod's
// node selection.
func TestAPodNeverWaitsForDRAInAnAutoscaledPool(t *testing.T) {
	karpenter := map[string]string{v1alpha1.KarpenterNodePoolLabel: "gpu"}
	eks := map[string]string{"eks.amazonaws.com/nodegroup": "gpu-ng"}
	pod := builders.MakePod("p", "ns").Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
	tolerant := pod.DeepCopy()
	tolerant.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	h100Pod := builders.MakePod("p", "ns").Container("trainer").Limit("nvidia.com/gpu", "2").NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").Obj()
	for name, tc := range map[string]struct {
		pools      map[string]map[string]string
		legacyFull bool
		cpu, tpu   bool
		pod        *corev1.Pod
		rule       v1alpha1.WhenDRABusy
		autoscale  v1alpha1.AutoscalingRule
		platform   *platform.Platform
		want       reason.Code
		wantSays   []string
	}{
		"the platform's Karpenter provisions for claims (detected or declared): the pod waits for DRA": {
			pools: map[string]map[string]string{"dgx-": karpenter, "legacy-": karpenter}, rule: v1alpha1.WhenDRABusyWait,
			platform: karpenterPlatform(t, true),
			want:     decide.ReasonDRABusyWaiting,
		},
		"the platform's Karpenter ignores claims, as declared: kept as submitted": {
			pools: map[string]map[string]string{"dgx-": karpenter, "legacy-": karpenter}, rule: v1alpha1.WhenDRABusyWait,
			platform: karpenterPlatform(t, false),
			want:     decide.ReasonAutoscalerIgnoresClaims,
		},
		"Wait acts as KeepLegacy where the whole fleet is one Karpenter pool": {
			pools: map[string]map[string]string{"dgx-": karpenter, "legacy-": karpenter}, rule: v1alpha1.WhenDRABusyWait,
			want: decide.ReasonAutoscalerIgnoresClaims, wantSays: []string{"karpenter.sh/nodepool=gpu (2 nodes such as legacy-gfd-0)", "the device plugin runs it now on 2 nodes such as legacy-gfd-0", "Wait acts as KeepLegacy"},
		},
		"with no device-plugin room the pod waits as submitted, for the autoscaler": {
			pools: map[string]map[string]string{"dgx-": karpenter, "legacy-": karpenter}, legacyFull: true,
			want: decide.ReasonAutoscalerIgnoresClaims, wantSays: []string{"no device-plugin node has room for it now", "the autoscaler adds a node"},
		},
		"device-plugin nodes of a Karpenter pool count": {
			pools: map[string]map[string]string{"legacy-": karpenter}, rule: v1alpha1.WhenDRABusyWait,
			want: decide.ReasonAutoscalerIgnoresClaims, wantSays: []string{"(2 nodes such as legacy-gfd-0)"},
		},
		"a pool whose nodes run only the translation does not grow for the pod as submitted either: it waits, and is told": {
			pools: map[string]map[string]string{"dgx-": karpenter}, legacyFull: true,
			want: decide.ReasonDRABusyWaiting, wantSays: []string{"the autoscaled pool karpenter.sh/nodepool=gpu (2 nodes such as dgx-h100-0) adds no node for it"},
		},
		"the pool labels the policy names count": {
			pools: map[string]map[string]string{"legacy-": eks}, rule: v1alpha1.WhenDRABusyWait,
			autoscale: v1alpha1.AutoscalingRule{PoolLabels: []string{"eks.amazonaws.com/nodegroup"}},
			want:      decide.ReasonAutoscalerIgnoresClaims, wantSays: []string{"eks.amazonaws.com/nodegroup=gpu-ng"},
		},
		"a node-group label the policy does not name does not count": {
			pools: map[string]map[string]string{"dgx-": eks, "legacy-": eks}, rule: v1alpha1.WhenDRABusyWait,
			want: decide.ReasonDRABusyWaiting,
		},
		"a Karpenter pool without GPUs does not count": {
			pools: map[string]map[string]string{"cpu-": karpenter}, cpu: true, rule: v1alpha1.WhenDRABusyWait,
			want: decide.ReasonDRABusyWaiting,
		},
		"a Karpenter pool of TPUs does not count for a GPU pod that tolerates its taint": {
			pools: map[string]map[string]string{"tpu-": karpenter}, tpu: true, pod: tolerant, rule: v1alpha1.WhenDRABusyWait,
			want: decide.ReasonDRABusyWaiting,
		},
		"a pool the pod's node selector excludes does not count": {
			pools: map[string]map[string]string{"legacy-": karpenter}, pod: h100Pod, rule: v1alpha1.WhenDRABusyWait,
			want: decide.ReasonDRABusyWaiting,
		},
		"autoscalers that provision for claims: the pod waits for DRA": {
			pools: map[string]map[string]string{"dgx-": karpenter, "legacy-": karpenter}, rule: v1alpha1.WhenDRABusyWait,
			autoscale: v1alpha1.AutoscalingRule{DRAAware: true},
			want:      decide.ReasonDRABusyWaiting,
		},
		"the device plugin's room still decides first under KeepLegacy": {
			pools: map[string]map[string]string{"dgx-": karpenter, "legacy-": karpenter},
			want:  decide.ReasonDRABusyLegacyFree,
		},
	} {
		t.Run(name, func(t *testing.T) {
			inv, snap := busyPool(t, tc.pools, tc.legacyFull, tc.cpu, tc.tpu)
			p := pod
			if tc.pod != nil {
				p = tc.pod
			}
			d, err := decide.Pod(t.Context(), decide.Input{Pod: p, Policy: autoscalingPolicy(t, tc.autoscale), Classes: inv.Classes,
				Checker: feasibility.NewChecker(feasibility.Options{}), Snapshot: snap, WhenDRABusy: tc.rule, Admitted: true, Platform: tc.platform})
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict == nil || d.Verdict.Kind != feasibility.FitsWhenFree {
				t.Fatalf("verdict %+v, want FitsWhenFree: the test's DRA GPUs must all be taken", d.Verdict)
			}
			if d.Decisive.Code != tc.want {
				t.Fatalf("decided by %s (%s), want %s", d.Decisive.Code, d.Decisive.Message, tc.want)
			}
			wantOutcome := reason.OutcomeKeepLegacy
			if tc.want == decide.ReasonDRABusyWaiting {
				wantOutcome = reason.OutcomeTranslate
			}
			if d.Outcome != wantOutcome {
				t.Errorf("outcome %s, want %s", d.Outcome, wantOutcome)
			}
			for _, s := range tc.wantSays {
				if !strings.Contains(d.Decisive.Message, s) {
					t.Errorf("the reason %q does not say %q", d.Decisive.Message, s)
				}
			}
		})
	}
}

// TestAPodNoDRANodeServesStaysAsSubmittedInAnAutoscaledPool: a pod no DRA
// node could ever serve (an A100 where DRA has H100 only) stays as
// submitted, for the device plugin and the autoscaler, as anywhere
// (Infeasible): the pool changes nothing there.
func TestAPodNoDRANodeServesStaysAsSubmittedInAnAutoscaledPool(t *testing.T) {
	karpenter := map[string]string{v1alpha1.KarpenterNodePoolLabel: "gpu"}
	inv, snap := busyPool(t, map[string]map[string]string{"dgx-": karpenter, "legacy-": karpenter}, true, false, false)
	a100 := builders.MakePod("p", "ns").Container("trainer").Limit("nvidia.com/gpu", "2").NodeSelector("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB").Obj()
	d, err := decide.Pod(t.Context(), decide.Input{Pod: a100, Policy: translate.DefaultPolicy(), Classes: inv.Classes,
		Checker: feasibility.NewChecker(feasibility.Options{}), Snapshot: snap, WhenDRABusy: v1alpha1.WhenDRABusyWait, Admitted: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != reason.OutcomeKeepLegacy || d.Decisive.Code == decide.ReasonAutoscalerIgnoresClaims {
		t.Errorf("outcome %s decided by %s (%s), want KeepLegacy for a pod DRA never serves", d.Outcome, d.Decisive.Code, d.Decisive.Message)
	}
}

// karpenterPlatform declares Karpenter, its DRA support on or off, for
// every NodePool.
func karpenterPlatform(t *testing.T, dra bool) *platform.Platform {
	return builders.Platform(t, v1alpha1.PlatformSpec{
		Pools: []v1alpha1.PoolPlatform{{Label: v1alpha1.KarpenterNodePoolLabel, Autoscaler: v1alpha1.AutoscalerKarpenter, DRA: &dra}}})
}

// TestNoDeferenceWhereKarpenterProvisionsForClaims: a plain GPU pod of a
// Karpenter NodePool, with a DeviceClass that maps nvidia.com/gpu, is left
// to the class (DeferToExtendedResource) while nothing says Karpenter
// provisions for claims; where the platform says it does, the pod is
// translated — Karpenter provisions only for a pod's own claims, so a pod
// served through the class would get no new node — and says why.
func TestNoDeferenceWhereKarpenterProvisionsForClaims(t *testing.T) {
	pod := builders.MakePod("p", "ns").Container("app").Limit("nvidia.com/gpu", "1").NodeSelector(v1alpha1.KarpenterNodePoolLabel, "gpu").Obj()
	mapped := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"}, Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To("nvidia.com/gpu")}}
	for name, tc := range map[string]struct {
		platform *platform.Platform
		want     reason.Outcome
		code     reason.Code
	}{
		"no platform: deferred":                       {want: reason.OutcomeKeepLegacy, code: translate.ReasonDeferToExtendedResource},
		"Karpenter ignores claims: deferred":          {platform: karpenterPlatform(t, false), want: reason.OutcomeKeepLegacy, code: translate.ReasonDeferToExtendedResource},
		"Karpenter provisions for claims: translated": {platform: karpenterPlatform(t, true), want: reason.OutcomeTranslate, code: translate.ReasonExtendedResourceMappedByClass},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: pod, Policy: translate.DefaultPolicy(), Classes: []*resourceapi.DeviceClass{mapped}, Platform: tc.platform})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.want || !slices.ContainsFunc(d.Reasons, func(r reason.Reason) bool { return r.Code == tc.code }) {
				t.Errorf("%s, reasons %v; want %s with %s", d.Outcome, d.Reasons, tc.want, tc.code)
			}
			if tc.want == reason.OutcomeTranslate && !slices.ContainsFunc(d.Reasons, func(r reason.Reason) bool { return strings.Contains(r.Message, "Karpenter NodePool gpu") }) {
				t.Errorf("the translated pod does not say why it was not left to the class: %v", d.Reasons)
			}
		})
	}
}
