package decide_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/translate"
)

// taintedH100Fleet is the gpus fleet with its two DGX H100 nodes tainted
// nvidia.com/gpu:NoSchedule (dedicated to pods that tolerate it); with
// onlyTainted, the DGX nodes alone.
func taintedH100Fleet(t *testing.T, onlyTainted bool) (*feasibility.Inventory, *feasibility.Snapshot) {
	t.Helper()
	base, _ := gpusFleet(t)
	inv := *base
	inv.Nodes, inv.Slices = nil, nil
	dgx := func(name string) bool { return strings.HasPrefix(name, "dgx-h100-") }
	for _, n := range base.Nodes {
		if !dgx(n.Name) {
			if !onlyTainted {
				inv.Nodes = append(inv.Nodes, n)
			}
			continue
		}
		n = n.DeepCopy()
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule})
		inv.Nodes = append(inv.Nodes, n)
	}
	for _, s := range base.Slices {
		if !onlyTainted || (s.Spec.NodeName != nil && dgx(*s.Spec.NodeName)) {
			inv.Slices = append(inv.Slices, s)
		}
	}
	snap, err := feasibility.NewSnapshot(&inv, 1, feasibility.DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	return &inv, snap
}

func gkePolicy(t *testing.T) *translate.Policy {
	t.Helper()
	p, err := translate.ProfilePolicy(translate.DefaultProfileNames()...)
	if err != nil {
		t.Fatal(err)
	}
	if !p.ImplicitTolerations() {
		t.Fatal("a policy that names the gke profile must say the cluster runs ExtendedResourceToleration")
	}
	return p
}

func anyTainted(nodes []string) bool {
	return slices.ContainsFunc(nodes, func(n string) bool { return strings.HasPrefix(n, "dgx-h100-") })
}

// A plain GPU pod that tolerates nothing never reaches the dedicated,
// tainted H100 nodes by being translated: on a cluster without
// ExtendedResourceToleration (the default policy offline, or any policy in
// the webhook, whose pod carries what admission gave it) the translation
// adds no toleration, and both sides of the placement check stay off the
// tainted nodes. Where the policy says the cluster runs the plugin
// (offline, the gke profile named), both sides reach them.
func TestATranslationAddsNoTolerationTheClusterWouldNotAdd(t *testing.T) {
	inv, snap := taintedH100Fleet(t, false)
	pod := gpuPod(1, nil)
	for name, tc := range map[string]struct {
		policy      *translate.Policy
		admitted    bool
		wantTainted bool // both sides reach the tainted nodes
	}{
		"offline, the default policy: no toleration, off the tainted nodes":                        {policy: translate.DefaultPolicy()},
		"the webhook, the default policy: no toleration, off the tainted nodes":                    {policy: translate.DefaultPolicy(), admitted: true},
		"the webhook, a policy naming gke: the pod as admitted has none, nor does its translation": {policy: gkePolicy(t), admitted: true},
		"offline, a policy naming gke: the plugin's toleration on both sides":                      {policy: gkePolicy(t), wantTainted: true},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: pod, Policy: tc.policy, Classes: inv.Classes,
				Checker: feasibility.NewChecker(feasibility.Options{}), Snapshot: snap, ListNodes: true, Admitted: tc.admitted})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != translate.OutcomeTranslate || d.Placement == nil || !d.Placement.Equal() {
				t.Fatalf("outcome %s (%s: %s), placement %+v; want Translate, placement proven", d.Outcome, d.Decisive.Code, d.Decisive.Message, d.Placement)
			}
			tolerations := d.Translation.Pod.Spec.Tolerations
			if got := len(tolerations) > 0; got != tc.wantTainted {
				t.Errorf("translated pod's tolerations %v, want a toleration: %v", tolerations, tc.wantTainted)
			}
			if got := anyTainted(d.Placement.LegacyNodes); got != tc.wantTainted {
				t.Errorf("the pod as submitted lands on %v; tainted nodes among them: %v, want %v", d.Placement.LegacyNodes, got, tc.wantTainted)
			}
			if got := anyTainted(d.Placement.TranslatedNodes); got != tc.wantTainted {
				t.Errorf("the translation lands on %v; tainted nodes among them: %v, want %v", d.Placement.TranslatedNodes, got, tc.wantTainted)
			}
			if !tc.wantTainted && strings.HasPrefix(d.Verdict.Node, "dgx-h100-") {
				t.Errorf("the verdict names the tainted node %s", d.Verdict.Node)
			}
		})
	}
}

// The placement check is what would catch a toleration the cluster never
// adds: a translation that tolerates the GPU taint while the pod as
// submitted does not gains the tainted H100 nodes.
func TestThePlacementCheckCatchesAnInventedToleration(t *testing.T) {
	inv, snap := taintedH100Fleet(t, false)
	pod := gpuPod(1, nil)
	d, err := decide.Pod(t.Context(), decide.Input{Pod: pod, Policy: translate.DefaultPolicy(), Classes: inv.Classes})
	if err != nil {
		t.Fatal(err)
	}
	invented := d.Translation.Pod.DeepCopy()
	invented.Spec.Tolerations = append(invented.Spec.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	pl := feasibility.NewChecker(feasibility.Options{}).Placement(t.Context(), snap, feasibility.PlacementInput{
		Policy: translate.DefaultPolicy(), Legacy: pod, Translated: invented,
		Claims: []*resourceapi.ResourceClaimSpec{&d.Translation.Template.Spec.Spec}, ListNodes: true,
	})
	if pl.Equal() || !anyTainted(pl.TranslatedNodes) || anyTainted(pl.LegacyNodes) {
		t.Fatalf("placement %+v: want the translation to gain the tainted nodes", pl)
	}
	gained := slices.ContainsFunc(pl.Gained, func(g feasibility.NodeGroup) bool { return strings.HasPrefix(g.Example, "dgx-h100-") })
	if !gained {
		t.Errorf("gained %v, want the tainted DGX H100 nodes", pl.Gained)
	}
}

// With only the tainted nodes, a pod that tolerates nothing stays as
// submitted: the scheduler would not place it there as it is, and its
// translation, which adds no toleration, could not go there either. Offline
// a reason says that the ExtendedResourceToleration plugin's toleration
// would let it in (ImplicitTolerationsOff): on GKE, name the gke profile.
func TestWithOnlyTaintedNodesAPlainGPUPodStaysAsSubmitted(t *testing.T) {
	inv, snap := taintedH100Fleet(t, true)
	for name, admitted := range map[string]bool{"offline": false, "the webhook": true} {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: gpuPod(1, nil), Policy: translate.DefaultPolicy(), Classes: inv.Classes,
				Checker: feasibility.NewChecker(feasibility.Options{}), Snapshot: snap, ListNodes: true, Admitted: admitted})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != translate.OutcomeKeepLegacy || d.Verdict == nil || d.Verdict.Kind == feasibility.FitsNow {
				t.Fatalf("outcome %s (%s: %s), verdict %+v; want KeepLegacy, not fitting", d.Outcome, d.Decisive.Code, d.Decisive.Message, d.Verdict)
			}
			if d.Placement == nil || len(d.Placement.LegacyNodes) != 0 || len(d.Placement.TranslatedNodes) != 0 {
				t.Errorf("placement %+v: want neither side on a tainted node", d.Placement)
			}
			// Offline, the reason says what the plugin would change; the
			// webhook's pod has been through the cluster's admission.
			hint := slices.ContainsFunc(d.Reasons, func(r translate.Reason) bool {
				return r.Code == decide.ReasonImplicitTolerationsOff && strings.Contains(r.Message, "nvidia.com/gpu") && strings.Contains(r.Message, "dgx-h100-")
			})
			if hint == admitted {
				t.Errorf("ImplicitTolerationsOff given: %v, want %v; reasons %v", hint, !admitted, d.Reasons)
			}
			t.Logf("%s: %s", d.Decisive.Code, d.Decisive.Message)
		})
	}
}
