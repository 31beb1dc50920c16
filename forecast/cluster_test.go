package forecast

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// legacyNodes are nodes of the before-cutover example fleet, renamed: the
// device plugin and GPU Feature Discovery's labels, no ResourceSlice.
func legacyNodes(t *testing.T, names map[string]string) *feasibility.Inventory {
	t.Helper()
	src, err := feasibility.LoadInventory("../examples/fleets/before-cutover")
	if err != nil {
		t.Fatal(err)
	}
	inv := &feasibility.Inventory{}
	for _, n := range src.Nodes {
		name, ok := names[n.Name]
		if !ok {
			continue
		}
		c := n.DeepCopy()
		c.Name = name
		c.Labels[corev1.LabelHostname] = name
		inv.Nodes = append(inv.Nodes, c)
	}
	if len(inv.Nodes) != len(names) {
		t.Fatalf("%d of the nodes %v in the example fleet", len(inv.Nodes), names)
	}
	return inv
}

// job is a workload of the tests: a key, its pod, how many, its priority.
type job struct {
	key      string
	source   string
	pod      *corev1.Pod
	pods     int64
	priority int32
}

// forecastJobs forecasts the cutover of the jobs, each decided by
// decide.Pod against the fleet after the switch (as audit --forecast
// decides manifests).
func forecastJobs(t *testing.T, before *feasibility.Inventory, jobs []job, opts Options) *CutoverForecast {
	t.Helper()
	if opts.Policy == nil {
		opts.Policy = translate.DefaultPolicy()
	}
	j, err := ForecastCutover(t.Context(), CutoverInput{Before: before, Options: opts, Decide: func(ctx context.Context, after *feasibility.Fleet) ([]Workload, error) {
		var out []Workload
		for _, jb := range jobs {
			w := Workload{Key: jb.key, Source: jb.source, Pod: jb.pod, Pods: jb.pods, Priority: jb.priority}
			if jb.pod == nil {
				w.Decision = &decide.Decision{Outcome: reason.OutcomeKeepLegacy, Requested: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8}}
				out = append(out, w)
				continue
			}
			d, err := decide.Pod(ctx, decide.Input{Pod: jb.pod, Policy: opts.Policy, Classes: after.Inventory.Classes, Checker: after.Checker, Snapshot: after.Snapshot})
			if err != nil {
				return nil, err
			}
			w.Decision = d
			out = append(out, w)
		}
		return out, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// got is what the tests compare of a judgment: key → result, served/pods
// (alone), competitors.
func got(j *CutoverForecast) map[string]string {
	out := map[string]string{}
	for i, w := range j.Workloads {
		c := j.Cutovers[i]
		out[w.Key] = fmt.Sprintf("%s %d/%d alone %d %v", c.Result, c.Served, c.Pods, c.Alone, c.Competes)
	}
	return out
}

func gpus(n string) *builders.PodWrapper {
	return builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", n)
}

func h100(n string) *builders.PodWrapper {
	return gpus(n).NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")
}

// TestTheWholeClusterIsPlacedTogether: every pod of every workload is placed
// on one forecast fleet, each holding its devices for the next, in the
// queue's order (priority, then creation, then input); a workload that gets
// fewer pods than alone, or would after the workloads that can take the
// same nodes, is OrderDependent and names them; a fleet too small is
// Partial; a workload no node serves today is NotServedToday, not Breaks;
// one without a pod template is Unjudged.
func TestTheWholeClusterIsPlacedTogether(t *testing.T) {
	contended := map[string]string{"cutover-h100-0": "c-h100-0", "cutover-a100-0": "c-a100-0"}
	cases := map[string]struct {
		nodes map[string]string
		jobs  []job
		want  map[string]string
	}{
		"a workload that can take the only H100 node first makes the H100 workload depend on the order": {
			nodes: contended,
			jobs: []job{
				{key: "any", pod: gpus("4").Obj(), pods: 3},
				{key: "serve-h100", pod: h100("8").Obj(), pods: 1},
			},
			want: map[string]string{
				// In the input's order the any-GPU pods fill the A100 node,
				// then half the H100 node: the H100 workload gets nothing.
				"any":        "OrderDependent 3/3 alone 3 [serve-h100]",
				"serve-h100": "OrderDependent 0/1 alone 1 [any]",
			},
		},
		"priority goes first: the H100 workload is placed before the other, which then falls short": {
			nodes: contended,
			jobs: []job{
				{key: "any", pod: gpus("4").Obj(), pods: 3},
				{key: "serve-h100", pod: h100("8").Obj(), pods: 1, priority: 1000},
			},
			want: map[string]string{
				"any":        "OrderDependent 2/3 alone 3 [serve-h100]",
				"serve-h100": "OrderDependent 1/1 alone 1 [any]",
			},
		},
		"workloads that need different nodes do not compete": {
			nodes: contended,
			jobs: []job{
				{key: "a100", pod: gpus("4").NodeSelector("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB").Obj(), pods: 2},
				{key: "serve-h100", pod: h100("8").Obj(), pods: 1},
			},
			want: map[string]string{
				"a100":       "Moves 2/2 alone 0 []",
				"serve-h100": "Moves 1/1 alone 0 []",
			},
		},
		"a fleet too small for a workload alone: Partial": {
			nodes: contended,
			jobs:  []job{{key: "big", pod: gpus("8").Obj(), pods: 3}},
			want:  map[string]string{"big": "Partial 2/3 alone 2 []"},
		},
		"a workload no node serves today is not broken by the switch": {
			nodes: contended,
			jobs: []job{
				{key: "k80", pod: gpus("1").NodeSelector("nvidia.com/gpu.product", "Tesla-K80").Obj(), pods: 1},
				{key: "pinned", pod: gpus("1").NodeName("c-a100-0").Obj(), pods: 1},
			},
			want: map[string]string{
				"k80":    "NotServedToday 0/1 alone 0 []",
				"pinned": "Breaks 0/1 alone 0 []",
			},
		},
		"the device plugin's nodes the switch leaves alone hold what they offer, once": {
			nodes: map[string]string{"cutover-optout-0": "c-optout-0", "cutover-h100-0": "c-h100-0"},
			jobs: []job{
				{key: "first", pod: gpus("8").NodeSelector(corev1.LabelHostname, "c-optout-0").Obj(), pods: 1},
				{key: "second", pod: gpus("8").NodeSelector(corev1.LabelHostname, "c-optout-0").Obj(), pods: 1},
			},
			want: map[string]string{
				"first":  "OrderDependent 1/1 alone 1 [second]",
				"second": "OrderDependent 0/1 alone 1 [first]",
			},
		},
		"an object without a pod template is Unjudged": {
			nodes: contended,
			jobs:  []job{{key: "trainjob", pods: 1}},
			want:  map[string]string{"trainjob": "Unjudged 0/0 alone 0 []"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := forecastJobs(t, legacyNodes(t, tc.nodes), tc.jobs, Options{})
			if diff := cmp.Diff(tc.want, got(j)); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
			for i, c := range j.Cutovers {
				if c.Result != cutover.Moves && c.Result != cutover.StaysLegacy && c.Result != cutover.NotAffected && c.Why == "" {
					t.Errorf("%s is %s without saying why", j.Workloads[i].Key, c.Result)
				}
			}
			if j.Summary == nil || j.Summary.Order == "" {
				t.Error("the summary does not say the order of the placement")
			}
		})
	}
}

// TestASuggestedClassIsConfirmedByARerun: a DeviceClass with
// extendedResourceName is suggested for a resource of workloads not
// served only when a re-run of the whole forecast with it serves them, and
// the suggestion says what else the re-run changes.
func TestASuggestedClassIsConfirmedByARerun(t *testing.T) {
	before := legacyNodes(t, map[string]string{"cutover-a100-0": "c-a100-0"})
	optedOut := gpus("2").Annotation(api.AnnotationSkip, "true").Obj()
	pinned := gpus("1").NodeName("c-a100-0").Obj()
	j := forecastJobs(t, before, []job{
		{key: "opted-out", pod: optedOut, pods: 2},
		{key: "pinned", pod: pinned, pods: 1},
		{key: "moves", pod: gpus("2").Obj(), pods: 1},
	}, Options{})
	if got := got(j); got["opted-out"] != "Breaks 0/2 alone 0 []" || got["pinned"] != "Breaks 0/1 alone 0 []" {
		t.Fatalf("before any class: %v", got)
	}
	s := j.Summary.Suggested
	if len(s) != 1 || s[0].Resource != "nvidia.com/gpu" || s[0].YAML == "" {
		t.Fatalf("suggested %+v, want one class for nvidia.com/gpu", s)
	}
	// The opted-out pods are served through the class (2 pods × 2
	// devices); the pod bound at creation is not (no scheduler makes its
	// claim); the pod that moved now defers to the class.
	if s[0].Rows != 1 || s[0].Devices != 4 {
		t.Errorf("the re-run serves %d workloads, %d devices more; want 1 and 4", s[0].Rows, s[0].Devices)
	}
	// Changes lists every workload the re-run judges otherwise, the one
	// served more too; the one pinned to its node stays as it was.
	want := []cutover.Change{
		{Object: "opted-out", Was: cutover.Breaks, Now: cutover.ServedByClass, WasServed: 0, NowServed: 2, Pods: 2},
		{Object: "moves", Was: cutover.Moves, Now: cutover.ServedByClass, WasServed: 1, NowServed: 1, Pods: 1},
	}
	if diff := cmp.Diff(want, s[0].Changes); diff != "" {
		t.Errorf("changes (-want,+got):\n%s", diff)
	}

	// Nothing to serve: no class is promised.
	j = forecastJobs(t, before, []job{{key: "k80", pod: gpus("1").NodeSelector("nvidia.com/gpu.product", "Tesla-K80").Obj(), pods: 1},
		{key: "pinned", pod: pinned, pods: 1}}, Options{})
	if len(j.Summary.Suggested) != 0 {
		t.Errorf("suggested %+v for workloads no class serves", j.Summary.Suggested)
	}
}

// TestSuggestedChangesNameWorkloadsByFileAndObject: two workloads of one
// name in two files are two workloads: a suggested class compares each with
// itself in the re-run, so the one it serves is counted and listed, and the
// one it does not serve is not listed as changed (matched by name alone,
// both would be compared with the last of them and the class would not
// even be suggested).
func TestSuggestedChangesNameWorkloadsByFileAndObject(t *testing.T) {
	before := legacyNodes(t, map[string]string{"cutover-a100-0": "c-a100-0"})
	optedOut := gpus("2").Annotation(api.AnnotationSkip, "true").Obj()
	pinned := gpus("1").NodeName("c-a100-0").Obj()
	j := forecastJobs(t, before, []job{
		{key: "default/Pod/gpu-pod", source: "team-a/pod.yaml#0", pod: optedOut, pods: 2},
		{key: "default/Pod/gpu-pod", source: "team-b/pod.yaml#0", pod: pinned, pods: 1},
	}, Options{})
	s := j.Summary.Suggested
	if len(s) != 1 {
		t.Fatalf("suggested %+v, want one class", s)
	}
	want := []cutover.Change{{Object: "default/Pod/gpu-pod", Source: "team-a/pod.yaml#0", Was: cutover.Breaks, Now: cutover.ServedByClass, NowServed: 2, Pods: 2}}
	if diff := cmp.Diff(want, s[0].Changes); diff != "" {
		t.Errorf("changes (-want,+got):\n%s", diff)
	}
	if s[0].Rows != 1 || s[0].Devices != 4 {
		t.Errorf("the re-run serves %d workloads, %d devices more; want 1 and 4", s[0].Rows, s[0].Devices)
	}
	if got, want := s[0].ChangeLines(), []string{"default/Pod/gpu-pod (team-a/pod.yaml#0): Breaks → ServedByClass (0 → 2 of 2 pods)"}; !slices.Equal(got, want) {
		t.Errorf("change lines %q, want %q", got, want)
	}
}

// TestHoldingPlacesEveryPodOnce: the placer's pods hold their devices: a
// fleet of 8 GPUs serves four 2-GPU pods and no fifth, and placing alone
// starts from a free fleet again.
func TestHoldingPlacesEveryPodOnce(t *testing.T) {
	j := forecastJobs(t, legacyNodes(t, map[string]string{"cutover-a100-0": "c-a100-0"}), []job{
		{key: "pairs", pod: gpus("2").Obj(), pods: 5},
		{key: "single", pod: gpus("1").Obj(), pods: 1, priority: -1},
	}, Options{})
	if diff := cmp.Diff(map[string]string{
		"pairs":  "OrderDependent 4/5 alone 4 [single]",
		"single": "OrderDependent 0/1 alone 1 [pairs]",
	}, got(j)); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

// TestManyRivalsAreCountedNotListed: a workload that competes with many
// others names the first ten in the queue's order that took devices on its
// nodes, and counts the rest.
func TestManyRivalsAreCountedNotListed(t *testing.T) {
	before := legacyNodes(t, map[string]string{"cutover-a100-0": "c-a100-0", "cutover-a100-1": "c-a100-1"})
	jobs := []job{{key: "whole", pod: gpus("8").Obj(), pods: 2, priority: -1}}
	for i := range 20 {
		jobs = append(jobs, job{key: fmt.Sprintf("single-%02d", i), pod: gpus("1").Obj(), pods: 1})
	}
	j := forecastJobs(t, before, jobs, Options{})
	var whole cutover.Effect
	for i, w := range j.Workloads {
		if w.Key == "whole" {
			whole = j.Cutovers[i]
		}
	}
	// The 16 GPUs of the two nodes go to the first 16 singles.
	want := []string{"single-00", "single-01", "single-02", "single-03", "single-04", "single-05", "single-06", "single-07", "single-08", "single-09"}
	if whole.Result != cutover.OrderDependent || whole.Served != 0 || whole.Alone != 2 ||
		!slices.Equal(whole.Competes, want) || whole.CompetesMore != 6 {
		t.Errorf("whole: %s %d/%d alone %d, competes %v and %d more; want OrderDependent 0/2 alone 2, competes %v and 6 more",
			whole.Result, whole.Served, whole.Pods, whole.Alone, whole.Competes, whole.CompetesMore, want)
	}
	if !strings.Contains(whole.Why, "single-09 and 6 more take what they can") {
		t.Errorf("whole: why %q does not count the rivals it does not name", whole.Why)
	}
}

// TestAutoscalingLostIsMarked: a workload that moves to claims with more
// pods than the fleet after the switch serves, whose pods as submitted may
// run today on nodes of a Karpenter NodePool, is marked autoscaling lost
// (its Why says so first) and the summary has the autoscaling caveat; not
// a workload served in full, one kept as submitted, one whose nodes are in
// no pool, nor any once the policy says the autoscaler provisions for
// claims.
func TestAutoscalingLostIsMarked(t *testing.T) {
	pooled := func(t *testing.T) *feasibility.Inventory {
		inv := legacyNodes(t, map[string]string{"cutover-a100-0": "c-a100-0", "cutover-a100-1": "c-a100-1", "cutover-h100-0": "c-h100-0"})
		for _, n := range inv.Nodes {
			if strings.HasPrefix(n.Name, "c-a100-") {
				n.Labels[v1alpha1.KarpenterNodePoolLabel] = "gpu"
			}
		}
		return inv
	}
	on := func(node, n string) *corev1.Pod { return gpus(n).NodeSelector(corev1.LabelHostname, node).Obj() }
	jobs := []job{
		{key: "big", pod: on("c-a100-0", "8"), pods: 2},    // a node of 8 GPUs in the pool: 1 of 2 served
		{key: "fits", pod: on("c-a100-1", "4"), pods: 2},   // the other node of the pool: served in full
		{key: "short-h100", pod: h100("8").Obj(), pods: 2}, // short, on no pool's node
		{key: "pinned", pod: gpus("1").NodeName("c-a100-0").Obj(), pods: 1},
	}
	draAware, err := translate.NewPolicy(&v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
		Spec: v1alpha1.PolicySpec{Profiles: v1alpha1.DefaultProfileNames(), Autoscaling: v1alpha1.AutoscalingRule{DRAAware: true}}})
	if err != nil {
		t.Fatal(err)
	}
	karpenterDRA := func(dra bool) *platform.Platform {
		return builders.Platform(t, v1alpha1.PlatformSpec{
			Pools: []v1alpha1.PoolPlatform{{Label: v1alpha1.KarpenterNodePoolLabel, Name: "gpu", Autoscaler: v1alpha1.AutoscalerKarpenter, DRA: &dra}}})
	}
	const remedy = "turn on Karpenter's DRA support (--ignore-dra-requests=false; on AWS settings.enableDRA)"
	for name, tc := range map[string]struct {
		policy     *translate.Policy
		platform   *platform.Platform
		wantMarked map[string]*cutover.AutoscaledPool
		wantCaveat bool
	}{
		"Karpenter's default: it does not provision for claims": {
			wantMarked: map[string]*cutover.AutoscaledPool{"big": {Label: "karpenter.sh/nodepool", Name: "gpu", Nodes: 1, Remedy: remedy}},
			wantCaveat: true,
		},
		"declared: the pool's Karpenter does not provision for claims": {
			platform:   karpenterDRA(false),
			wantMarked: map[string]*cutover.AutoscaledPool{"big": {Label: "karpenter.sh/nodepool", Name: "gpu", Nodes: 1, Remedy: remedy}},
			wantCaveat: true,
		},
		"declared: the pool's Karpenter provisions for claims, nothing is lost": {platform: karpenterDRA(true)},
		"autoscaling.draAware: nothing is lost":                                 {policy: draAware},
	} {
		t.Run(name, func(t *testing.T) {
			j := forecastJobs(t, pooled(t), jobs, Options{Policy: tc.policy, Platform: tc.platform})
			res := got(j)
			for key, want := range map[string]string{"big": "Partial 1/2 alone 1 []", "fits": "Moves 2/2 alone 0 []", "short-h100": "Partial 1/2 alone 1 []", "pinned": "Breaks 0/1 alone 0 []"} {
				if res[key] != want {
					t.Errorf("%s: %s, want %s", key, res[key], want)
				}
			}
			marked := map[string]*cutover.AutoscaledPool{}
			for i, c := range j.Cutovers {
				if c.AutoscalingLost != nil {
					marked[j.Workloads[i].Key] = c.AutoscalingLost
					if !strings.HasPrefix(c.Why, "autoscaling lost in pool karpenter.sh/nodepool=gpu: today its autoscaler adds nodes for the pods that do not fit (1 node of the pool can run them)") ||
						!strings.Contains(c.Why, "1 of 2 pods served") {
						t.Errorf("%s: why %q", j.Workloads[i].Key, c.Why)
					}
				}
			}
			if diff := cmp.Diff(tc.wantMarked, marked, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("marked autoscaling lost (-want,+got):\n%s", diff)
			}
			// The pool's row says whether its autoscaler adds a first node
			// for claims, and how to make it.
			wantPool := cutover.PoolScale{Pool: "karpenter.sh/nodepool=gpu", Nodes: 2, FromZero: "no", Remedy: remedy}
			if tc.platform != nil && len(tc.wantMarked) == 0 {
				wantPool.FromZero, wantPool.Remedy = "yes", ""
			}
			if len(j.Summary.Pools) != 1 || j.Summary.Pools[0].Pool != wantPool.Pool || j.Summary.Pools[0].Nodes != wantPool.Nodes ||
				j.Summary.Pools[0].FromZero != wantPool.FromZero || j.Summary.Pools[0].Remedy != wantPool.Remedy || !strings.HasPrefix(j.Summary.Pools[0].Autoscaler, "Karpenter (") {
				t.Errorf("pools %+v, want one like %+v", j.Summary.Pools, wantPool)
			}
			caveat := slices.ContainsFunc(j.Summary.Caveats, func(c cutover.Caveat) bool {
				return strings.HasPrefix(c.Text, "Autoscaling: 2 of the nodes are in autoscaled pools (karpenter.sh/nodepool=gpu)") && strings.Contains(c.Source, "ignore-dra-requests") &&
					strings.Contains(c.Text, "to make it provision for them: "+remedy)
			})
			if caveat != tc.wantCaveat {
				t.Errorf("the autoscaling caveat: %t, want %t (%+v)", caveat, tc.wantCaveat, j.Summary.Caveats)
			}
		})
	}
}
