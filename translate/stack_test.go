package translate

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/reason"
)

func mustPolicy(t *testing.T, spec string) *Policy {
	t.Helper()
	p, err := LoadPolicy([]byte("apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nmetadata: {name: test}\nspec:\n" + spec))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSchedulerEntriesReadAsNamesOrObjects(t *testing.T) {
	p := mustPolicy(t, `  profiles: [nvidia]
  schedulers:
  - default-scheduler
  - volcano
  - name: kai-scheduler
    classNameContains: []
  - {name: yunikorn, output: Full}
  - koord-scheduler
  - {name: my-scheduler, consumableCapacity: false}
`)
	noConsumableCapacity := false
	want := map[string]v1alpha1.SchedulerEntry{
		"default-scheduler": {Name: "default-scheduler", Output: v1alpha1.OutputFull},
		"volcano":           {Name: "volcano", Output: v1alpha1.OutputExactlyOnly},
		// An explicit empty list turns the built-in class rule off; the
		// rest of KAI's profile stays.
		"kai-scheduler":   {Name: "kai-scheduler", Output: v1alpha1.OutputExactlyOnly, ClassNameContains: []v1alpha1.ClassNameRule{}, ConsumableCapacity: &noConsumableCapacity},
		"yunikorn":        {Name: "yunikorn", Output: v1alpha1.OutputFull},
		"koord-scheduler": {Name: "koord-scheduler", Output: v1alpha1.OutputSkip},
		"my-scheduler":    {Name: "my-scheduler", Output: v1alpha1.OutputFull, ConsumableCapacity: &noConsumableCapacity},
	}
	for name, w := range want {
		got, listed := p.SchedulerProfile(name)
		if !listed {
			t.Errorf("%s: not listed", name)
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%s (-want,+got):\n%s", name, diff)
		}
	}
	kai, _ := DefaultPolicy().SchedulerProfile("kai-scheduler")
	if kai.ClassNameContains != nil {
		t.Errorf("an unlisted scheduler has no profile: %+v", kai)
	}
	if k := (v1alpha1.SchedulerEntry{Name: "kai-scheduler"}).Resolved(); len(k.ClassNameContains) != 1 || k.ClassNameContains[0].Value != "gpu" {
		t.Errorf("KAI's built-in profile counts GPUs on classes named gpu: %+v", k)
	}
	// Skip entries are not schedulers whose pods are translated.
	if diff := cmp.Diff([]string{"default-scheduler", "volcano", "kai-scheduler", "yunikorn", "my-scheduler"}, p.Schedulers()); diff != "" {
		t.Errorf("Schedulers (-want,+got):\n%s", diff)
	}
}

func TestSchedulerEntriesSurviveARoundTrip(t *testing.T) {
	p := mustPolicy(t, "  profiles: [nvidia]\n  schedulers: [default-scheduler, {name: kai-scheduler, classNameContains: []}, {name: volcano, output: Full}]\n")
	spec := p.Spec()
	data, err := yaml.Marshal(spec.Schedulers)
	if err != nil {
		t.Fatal(err)
	}
	want := "- default-scheduler\n- classNameContains: []\n  name: kai-scheduler\n- name: volcano\n  output: Full\n"
	if diff := cmp.Diff(want, string(data)); diff != "" {
		t.Errorf("YAML (-want,+got):\n%s", diff)
	}
	var back []v1alpha1.SchedulerEntry
	if err := yaml.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(spec.Schedulers, back); diff != "" {
		t.Errorf("round trip (-want,+got):\n%s", diff)
	}
	if _, err := json.Marshal(v1alpha1.SchedulerEntry{Name: "x", ClassNameContains: []v1alpha1.ClassNameRule{}}); err != nil {
		t.Fatal(err)
	}
}

func TestMatchConditionsLeaveOutSkippedSchedulers(t *testing.T) {
	p := mustPolicy(t, "  profiles: [nvidia]\n  schedulers: [default-scheduler, yunikorn, volcano]\n")
	var expr string
	for _, c := range p.MatchConditions() {
		if c.Name == "scheduler-allocates-claims" {
			expr = c.Expression
		}
	}
	if !strings.Contains(expr, `"volcano"`) || !strings.Contains(expr, `"default-scheduler"]`) && !strings.Contains(expr, `"default-scheduler",`) {
		t.Errorf("condition %q must list default-scheduler and volcano", expr)
	}
	if strings.Contains(expr, "yunikorn") {
		t.Errorf("condition %q lists yunikorn, whose output is Skip", expr)
	}
}

// kueuePod is a Kueue-managed pod asking for n of a resource.
func kueuePod(name string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ml", Labels: map[string]string{QueueLabel: "research"}}}
	pod.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceName(name): resource.MustParse("1")}}}}
	return pod
}

func TestKueueMappingsFromAConfigurationTranslateKueuePods(t *testing.T) {
	base := DefaultPolicy()
	res, err := Pod(Input{Pod: kueuePod("nvidia.com/gpu"), Policy: base})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != reason.OutcomeKeepLegacy || !slices.ContainsFunc(res.Reasons, func(r reason.Reason) bool { return r.Code == ReasonKueueClassNotMapped }) {
		t.Fatalf("without mappings: %s %v", res.Outcome, res.Reasons)
	}
	withMappings := base.WithKueueMappings([]v1alpha1.KueueDeviceClassMapping{{Name: "nvidia.com/gpu", DeviceClassNames: []string{"gpu.nvidia.com"}}})
	if withMappings.Fingerprint() == base.Fingerprint() {
		t.Error("the mappings must change the policy's fingerprint (placement cache keys)")
	}
	if len(base.Spec().Kueue.DeviceClassMappings) != 0 {
		t.Error("WithKueueMappings changed the policy it was called on")
	}
	res, err = Pod(Input{Pod: kueuePod("nvidia.com/gpu"), Policy: withMappings})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != reason.OutcomeTranslate || res.Output != v1alpha1.OutputExactlyOnly {
		t.Fatalf("with mappings: %s %s %v", res.Outcome, res.Output, res.Reasons)
	}
	// A MIG slice's class is not mapped.
	res, err = Pod(Input{Pod: kueuePod("nvidia.com/mig-1g.10gb"), Policy: withMappings})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != reason.OutcomeKeepLegacy {
		t.Fatalf("MIG with only gpu.nvidia.com mapped: %s %v", res.Outcome, res.Reasons)
	}
}

func TestSingleAlternativeCombinationsFollowTheAllocatorsOrder(t *testing.T) {
	// Two containers, each with an In list of two products: four
	// combinations, the first container's preference first.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ml"}}
	pod.Spec.SchedulerName = "volcano"
	for _, n := range []string{"a", "b"} {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: n, Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}})
	}
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpIn, Values: []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-L4"}}}}}}}}
	p := mustPolicy(t, "  profiles: [nvidia]\n  schedulers: [default-scheduler, volcano]\n")
	var got []string
	for i := range 4 {
		res, err := Pod(Input{Pod: pod, Policy: p, Alternative: i})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != reason.OutcomeTranslate || res.Combinations != 4 || res.FaithfulCombination != -1 {
			t.Fatalf("alternative %d: %s, %d combinations, faithful %d: %v", i, res.Outcome, res.Combinations, res.FaithfulCombination, res.Reasons)
		}
		for _, r := range res.Template.Spec.Spec.Devices.Requests {
			if r.Exactly == nil {
				t.Fatalf("alternative %d: request %s is not exactly", i, r.Name)
			}
		}
		got = append(got, strings.Join(res.Chosen, " + "))
	}
	h100, l4 := "1× gpu.nvidia.com (nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3)", "1× gpu.nvidia.com (nvidia.com/gpu.product=NVIDIA-L4)"
	want := []string{
		"a/nvidia.com/gpu: " + h100 + " + b/nvidia.com/gpu: " + h100,
		"a/nvidia.com/gpu: " + h100 + " + b/nvidia.com/gpu: " + l4,
		"a/nvidia.com/gpu: " + l4 + " + b/nvidia.com/gpu: " + h100,
		"a/nvidia.com/gpu: " + l4 + " + b/nvidia.com/gpu: " + l4,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("combinations (-want,+got):\n%s", diff)
	}
	res, err := Pod(Input{Pod: pod, Policy: p, Alternative: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != reason.OutcomeKeepLegacy || res.Reasons[len(res.Reasons)-1].Code != ReasonNoSingleAlternative {
		t.Errorf("alternative out of range: %s %v", res.Outcome, res.Reasons)
	}
}

func TestPreferredAlignmentUnderExactlyOnly(t *testing.T) {
	// One GPU and one NIC, aligned by PCIe root when possible: the aligned
	// variant alone keeps the constraint on the whole requests; the
	// unaligned one (the faithful one) has none.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ml"}}
	pod.Spec.SchedulerName = "volcano"
	pod.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
		"nvidia.com/gpu": resource.MustParse("1"), "rdma/hca": resource.MustParse("1")}}}}
	p := mustPolicy(t, `  profiles: [nvidia]
  schedulers: [default-scheduler, volcano]
  resources:
  - {name: rdma/hca, family: rdma-nic, deviceClassName: dranet-rdma, requestName: nic}
  alignment:
  - {name: pcie, families: [nvidia-gpu, rdma-nic], attribute: resource.kubernetes.io/pcieRoot, mode: Preferred, maxCount: 1}
`)
	first, err := Pod(Input{Pod: pod, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if first.Outcome != reason.OutcomeTranslate || first.Combinations != 2 || first.FaithfulCombination != 1 {
		t.Fatalf("%s, %d combinations, faithful %d: %v", first.Outcome, first.Combinations, first.FaithfulCombination, first.Reasons)
	}
	cs := first.Template.Spec.Spec.Devices.Constraints
	if len(cs) != 1 || len(cs[0].Requests) != 2 || slices.ContainsFunc(cs[0].Requests, func(n string) bool { return strings.Contains(n, "/") }) {
		t.Errorf("aligned variant: constraints %+v, want one on both whole requests", cs)
	}
	second, err := Pod(Input{Pod: pod, Policy: p, Alternative: 1})
	if err != nil {
		t.Fatal(err)
	}
	if second.Outcome != reason.OutcomeTranslate || len(second.Template.Spec.Spec.Devices.Constraints) != 0 {
		t.Errorf("unaligned alternative: %s, constraints %+v", second.Outcome, second.Template.Spec.Spec.Devices.Constraints)
	}
}
