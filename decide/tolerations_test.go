package decide_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/reason"
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
	p, err := translate.ProfilePolicy(v1alpha1.DefaultProfileNames()...)
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
			if d.Outcome != reason.OutcomeTranslate || d.Placement == nil || !d.Placement.Equal() {
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
// would let it in: a Warning when the policy does not say whether the
// cluster runs the plugin (ImplicitTolerationsUnknown), Info when it says
// it does not (ImplicitTolerationsOff); on GKE, name the gke profile.
func TestWithOnlyTaintedNodesAPlainGPUPodStaysAsSubmitted(t *testing.T) {
	inv, snap := taintedH100Fleet(t, true)
	off := false
	saysNo, err := translate.NewPolicy(&v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
		Spec: v1alpha1.PolicySpec{Profiles: []string{"nvidia"}, ImplicitTolerations: &off}})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		policy   *translate.Policy
		admitted bool
		want     reason.Code // "" for no hint
	}{
		"offline, a policy that says nothing: a warning":          {policy: translate.DefaultPolicy(), want: decide.ReasonImplicitTolerationsUnknown},
		"offline, a policy that says the plugin does not run":     {policy: saysNo, want: decide.ReasonImplicitTolerationsOff},
		"the webhook: the pod as admitted, nothing to tell":       {policy: translate.DefaultPolicy(), admitted: true},
		"the webhook, a policy that says the plugin does not run": {policy: saysNo, admitted: true},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: gpuPod(1, nil), Policy: tc.policy, Classes: inv.Classes,
				Checker: feasibility.NewChecker(feasibility.Options{}), Snapshot: snap, ListNodes: true, Admitted: tc.admitted})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != reason.OutcomeKeepLegacy || d.Verdict == nil || d.Verdict.Kind == feasibility.FitsNow {
				t.Fatalf("outcome %s (%s: %s), verdict %+v; want KeepLegacy, not fitting", d.Outcome, d.Decisive.Code, d.Decisive.Message, d.Verdict)
			}
			if d.Placement == nil || len(d.Placement.LegacyNodes) != 0 || len(d.Placement.TranslatedNodes) != 0 {
				t.Errorf("placement %+v: want neither side on a tainted node", d.Placement)
			}
			// Offline, the reason says what the plugin would change; the
			// webhook's pod has been through the cluster's admission.
			var got reason.Code
			for _, r := range d.Reasons {
				if (r.Code == decide.ReasonImplicitTolerationsOff || r.Code == decide.ReasonImplicitTolerationsUnknown) &&
					strings.Contains(r.Message, "nvidia.com/gpu") && strings.Contains(r.Message, "dgx-h100-") {
					got = r.Code
				}
			}
			if got != tc.want {
				t.Errorf("hint %q, want %q; reasons %v", got, tc.want, d.Reasons)
			}
			t.Logf("%s: %s", d.Decisive.Code, d.Decisive.Message)
		})
	}
}

// A pod whose own node selection requires a label only GKE nodes carry runs
// on GKE, which runs ExtendedResourceToleration: offline, under a policy
// that says nothing about the cluster, its translation carries the
// plugin's toleration and the pod as submitted is judged with it, so both
// reach the tainted GPU nodes of its node pool. A policy that says the
// cluster does not run the plugin wins over the label.
func TestAGKEOnlyLabelSaysThePodRunsOnGKE(t *testing.T) {
	base, _ := taintedH100Fleet(t, false)
	inv := *base
	inv.Nodes = nil
	for _, n := range base.Nodes {
		if anyTainted([]string{n.Name}) {
			n = n.DeepCopy()
			n.Labels["cloud.google.com/gke-nodepool"] = "a3-high"
		}
		inv.Nodes = append(inv.Nodes, n)
	}
	snap, err := feasibility.NewSnapshot(&inv, 1, feasibility.DefaultFeatures())
	if err != nil {
		t.Fatal(err)
	}
	pod := gpuPod(1, map[string]string{"cloud.google.com/gke-nodepool": "a3-high"})
	off := false
	saysNo, err := translate.NewPolicy(&v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
		Spec: v1alpha1.PolicySpec{Profiles: v1alpha1.DefaultProfileNames(), ImplicitTolerations: &off}})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		policy  *translate.Policy
		fleet   bool
		want    reason.Outcome
		toleary bool
	}{
		"with the fleet: translated onto the tainted node pool, placement proven": {policy: translate.DefaultPolicy(), fleet: true, want: reason.OutcomeTranslate, toleary: true},
		"without a fleet: translated with the toleration, no warning":             {policy: translate.DefaultPolicy(), want: reason.OutcomeTranslate, toleary: true},
		"a policy that says the plugin does not run: no toleration, kept":         {policy: saysNo, fleet: true, want: reason.OutcomeKeepLegacy},
	} {
		t.Run(name, func(t *testing.T) {
			in := decide.Input{Pod: pod, Policy: tc.policy, Classes: inv.Classes, ListNodes: true}
			if tc.fleet {
				in.Checker, in.Snapshot = feasibility.NewChecker(feasibility.Options{}), snap
			}
			d, err := decide.Pod(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.want {
				t.Fatalf("outcome %s (%s: %s), want %s", d.Outcome, d.Decisive.Code, d.Decisive.Message, tc.want)
			}
			has := slices.ContainsFunc(d.Translation.Pod.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Key == "nvidia.com/gpu" })
			if has != tc.toleary {
				t.Errorf("translation's tolerations %v, want the plugin's: %v", d.Translation.Pod.Spec.Tolerations, tc.toleary)
			}
			if slices.ContainsFunc(d.Reasons, func(r reason.Reason) bool { return r.Code == decide.ReasonImplicitTolerationsUnknown }) {
				t.Errorf("the pod tells its cluster, yet %s: %v", decide.ReasonImplicitTolerationsUnknown, d.Reasons)
			}
			if tc.fleet && tc.want == reason.OutcomeTranslate && (!d.Placement.Equal() || !anyTainted(d.Placement.LegacyNodes)) {
				t.Errorf("placement %+v: want both sides on the tainted node pool", d.Placement)
			}
			admitted := decide.AsAdmitted(pod, tc.policy)
			if got := len(admitted.Spec.Tolerations) > 0; got != tc.toleary {
				t.Errorf("the pod as admitted has tolerations %v, want the plugin's: %v", admitted.Spec.Tolerations, tc.toleary)
			}
		})
	}
}

// Offline without a fleet, a translation for a cluster of which neither the
// policy nor the pod tells whether it runs ExtendedResourceToleration says
// that it carries no toleration for what it removed; one whose policy says
// either way does not.
func TestWithoutAFleetAnUnknownClusterIsSaid(t *testing.T) {
	off := false
	saysNo, err := translate.NewPolicy(&v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
		Spec: v1alpha1.PolicySpec{Profiles: []string{"nvidia"}, ImplicitTolerations: &off}})
	if err != nil {
		t.Fatal(err)
	}
	tolerating := gpuPod(1, nil)
	tolerating.Spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}
	for name, tc := range map[string]struct {
		pod    *corev1.Pod
		policy *translate.Policy
		want   bool
	}{
		"the default policy, no platform label: a warning":        {pod: gpuPod(1, nil), policy: translate.DefaultPolicy(), want: true},
		"the default policy, the pod tolerates the taint already": {pod: tolerating, policy: translate.DefaultPolicy()},
		"a policy that says the plugin does not run":              {pod: gpuPod(1, nil), policy: saysNo},
		"a policy that says the plugin runs":                      {pod: gpuPod(1, nil), policy: gkePolicy(t)},
		"a GKE-only label":                                        {pod: gpuPod(1, map[string]string{"cloud.google.com/gke-spot": "true"}), policy: translate.DefaultPolicy()},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: tc.pod, Policy: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != reason.OutcomeTranslate {
				t.Fatalf("outcome %s (%s: %s)", d.Outcome, d.Decisive.Code, d.Decisive.Message)
			}
			got := slices.ContainsFunc(d.Reasons, func(r reason.Reason) bool {
				return r.Code == decide.ReasonImplicitTolerationsUnknown && r.Severity == reason.SeverityWarning
			})
			if got != tc.want {
				t.Errorf("%s given: %v, want %v; reasons %v", decide.ReasonImplicitTolerationsUnknown, got, tc.want, d.Reasons)
			}
		})
	}
}
