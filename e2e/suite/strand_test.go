package suite

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// asStored is the pod as kube-apiserver stores it without the webhook: a
// server-side dry run of the same pod in a namespace claimbridge never sees.
// Volumes are left out: the ServiceAccount admission plugin names its
// projected token volume at random.
func asStored(t *testing.T, offNS string, pod *corev1.Pod) corev1.PodSpec {
	t.Helper()
	p := pod.DeepCopy()
	p.Namespace = offNS
	got, err := client.CoreV1().Pods(offNS).Create(t.Context(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	return withoutVolumes(got.Spec)
}

func withoutVolumes(s corev1.PodSpec) corev1.PodSpec {
	s = *s.DeepCopy()
	s.Volumes = nil
	for i := range s.Containers {
		s.Containers[i].VolumeMounts = nil
	}
	return s
}

func TestPodsATranslationWouldStrandAreAdmittedUnchangedInAnEnforceNamespace(t *testing.T) {
	ns, fl := setup(t, "enforce", "l4-inference")
	offNS := tc.Namespace(t, "strand-off-", nil)
	gpu := func(name string) *builders.PodWrapper {
		return builders.MakePod(name, ns).Container("app").Limit("nvidia.com/gpu", "1")
	}
	cases := []struct {
		pod *corev1.Pod
		// sent: kube-apiserver sends the pod to the webhook (the chart's
		// matchConditions filter the others out); reason is then the row's.
		// The others are counted all the same, from the pod informer:
		// Skipped, unseen, with the reason that kept them away among the
		// row's reasons; no node of this fleet offers nvidia.com/gpu, so
		// the decisive one is LegacyUnservable.
		sent   bool
		reason reason.Code
	}{
		{pod: gpu("bound-at-creation").NodeName(fl[0].NodeName("l4-inference-0")).Obj(), reason: translate.ReasonNodeNamePreset},
		{pod: gpu("for-volcano").SchedulerName("volcano").Obj(), reason: translate.ReasonSchedulerNotListed},
		{pod: gpu("hami-gpumem").Limit("nvidia.com/gpumem", "4000").Obj(), sent: true, reason: translate.ReasonUnmappedCompanionResource},
		{pod: builders.MakePod("time-sliced", ns).Container("app").Limit("nvidia.com/gpu.shared", "1").Obj(), sent: true, reason: translate.ReasonSharesUnavailable},
		{pod: gpu("shared-product").NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4-SHARED").Obj(), sent: true, reason: translate.ReasonSharesUnavailable},
	}
	for _, c := range cases {
		want := asStored(t, offNS, c.pod)
		got, ws := create(t, c.pod)
		if diff := cmp.Diff(want, withoutVolumes(got.Spec)); diff != "" {
			t.Errorf("%s: the pod was changed (-as without the webhook,+stored):\n%s", c.pod.Name, diff)
		}
		if _, ok := got.Annotations[api.AnnotationTemplate]; ok || hasClaim(got) {
			t.Errorf("%s: translated: %v", c.pod.Name, got.Spec.ResourceClaims)
		}
		if c.sent && !warned(ws, string(c.reason)+": kept as submitted") {
			t.Errorf("%s: warnings %q do not say %s", c.pod.Name, ws, c.reason)
		}
		if !c.sent && len(ws) != 0 {
			t.Errorf("%s: warnings %q: the webhook should not have seen the pod", c.pod.Name, ws)
		}
	}
	// The report's rows come from the pod informer: every pod is there
	// once the informer shows them.
	var rep report.Report
	eventually(t, "every pod in the report", func(context.Context) (bool, error) {
		rep = liveReport(t, ns)
		return len(rep.Items) == len(cases), nil
	})
	type row struct {
		outcome reason.Outcome
		code    reason.Code
		unseen  bool
		kept    bool // the reason that kept it away is among the row's
	}
	rows := map[string]row{}
	for _, r := range rep.Items {
		got := row{outcome: r.Outcome, unseen: r.Unseen}
		if r.Decisive != nil {
			got.code = r.Decisive.Code
		}
		for _, c := range cases {
			if c.pod.Name == r.Name {
				got.kept = slices.ContainsFunc(r.Reasons, func(x reason.Reason) bool { return x.Code == c.reason })
			}
		}
		rows[r.Name] = got
	}
	for _, c := range cases {
		want := row{outcome: reason.OutcomeKeepLegacy, code: c.reason, kept: true}
		if !c.sent {
			want = row{outcome: reason.OutcomeSkip, code: explain.ReasonLegacyUnservable, unseen: true, kept: true}
		}
		if got := rows[c.pod.Name]; got != want {
			t.Errorf("report: %s is %+v, want %+v", c.pod.Name, got, want)
		}
	}
	if templates, err := client.ResourceV1().ResourceClaimTemplates(ns).List(t.Context(), metav1.ListOptions{}); err != nil || len(templates.Items) != 0 {
		t.Errorf("templates were created: %v %v", templates, err)
	}
}

// policyOf is a policy document named name.
func policyOf(name string, spec v1alpha1.PolicySpec) *v1alpha1.TranslationPolicy {
	return &v1alpha1.TranslationPolicy{APIVersion: v1alpha1.PolicyAPIVersion, Kind: v1alpha1.PolicyKind,
		Metadata: v1alpha1.PolicyMetadata{Name: name}, Spec: spec}
}

// hamiPolicy is the nvidia profile with HAMi's DRA driver on top.
var hamiPolicy = policyOf("e2e-hami", v1alpha1.PolicySpec{Profiles: []string{"nvidia", "hami"}})

func TestHAMiGpumemPodsShareOneGPUThroughConsumableCapacity(t *testing.T) {
	usePolicy(t, hamiPolicy)
	ns, fl := setup(t, "enforce", "hami-t4")
	// The fleet's DeviceClass maps nvidia.com/gpu (as HAMi's driver chart
	// installs it); classes outlive fleets, so this one goes with the test.
	t.Cleanup(func() {
		for _, name := range fl[0].NewDeviceClasses {
			if err := client.ResourceV1().DeviceClasses().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete DeviceClass %s: %v", name, err)
			}
		}
		// Until claimbridge's inventory drops the class, it would leave
		// later tests' GPU pods to KEP-5004.
		probe := builders.MakePod("probe", ns).Container("app").Limit("nvidia.com/gpu", "1").Obj()
		afterwards(t, "claimbridge no longer sees HAMi's class", func(ctx context.Context) (bool, error) {
			mark := warnings.mark()
			if _, err := client.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				return false, err
			}
			return !warned(warnings.since(mark), "DeferToExtendedResource"), nil
		})
	})
	one := fl[0].NodeName("hami-t4-0") // a single T4: 15360 MiB, 100 cores
	// Three 5000 MiB shares fit one T4 (15000 MiB); three exclusive GPUs would not.
	var pods []*corev1.Pod
	for i := range 3 {
		pod := builders.MakePod(fmt.Sprintf("share-%d", i), ns).Container("app").
			Limit("nvidia.com/gpu", "1").Limit("nvidia.com/gpumem", "5000").
			NodeSelector("kubernetes.io/hostname", one).Obj()
		got, ws := create(t, pod)
		if !hasClaim(got) {
			t.Fatalf("%s not translated: %q", pod.Name, ws)
		}
		for _, k := range []corev1.ResourceName{"nvidia.com/gpu", "nvidia.com/gpumem"} {
			if _, ok := got.Spec.Containers[0].Resources.Limits[k]; ok {
				t.Errorf("%s: %s is still in the limits", pod.Name, k)
			}
		}
		if !warned(ws, "ExtendedResourceMappedByClass") {
			t.Errorf("%s: no warning that HAMi's class maps nvidia.com/gpu: %q", pod.Name, ws)
		}
		pods = append(pods, got)
		// The next verdict sees this share allocated.
		allocation(t, bound(t, ns, got.Name))
		waitInventory(t)
	}
	var memory resource.Quantity
	for _, p := range pods {
		p = bound(t, ns, p.Name)
		if p.Spec.NodeName != one {
			t.Errorf("%s bound to %s, want %s", p.Name, p.Spec.NodeName, one)
		}
		alloc := allocation(t, p)
		if len(alloc.Devices.Results) != 1 {
			t.Fatalf("%s: %d devices allocated", p.Name, len(alloc.Devices.Results))
		}
		r := alloc.Devices.Results[0]
		if r.Driver != "hami-core-gpu.project-hami.io" || r.Device != "hami-gpu-0" || r.ShareID == nil {
			t.Errorf("%s: allocated %s/%s/%s share %v, want a share of hami-gpu-0", p.Name, r.Driver, r.Pool, r.Device, r.ShareID)
		}
		want := map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("5000Mi"), "cores": resource.MustParse("0")}
		if diff := cmp.Diff(want, r.ConsumedCapacity, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
			t.Errorf("%s: consumed capacity (-want,+got):\n%s", p.Name, diff)
		}
		memory.Add(r.ConsumedCapacity["memory"])
	}
	if memory.Cmp(resource.MustParse("15360Mi")) > 0 {
		t.Errorf("the shares consume %s of a 15360Mi GPU", memory.String())
	}

	// A whole GPU (nvidia.com/gpu alone): translation would add nothing to
	// what HAMi's class serves through extendedResourceName, so the pod is
	// left to the scheduler (KEP-5004), which allocates the GPU itself.
	two := fl[0].NodeName("hami-t4-1")
	whole, ws := create(t, builders.MakePod("whole", ns).Container("app").Limit("nvidia.com/gpu", "1").NodeSelector("kubernetes.io/hostname", two).Obj())
	if hasClaim(whole) || !warned(ws, "DeferToExtendedResource: kept as submitted") {
		t.Fatalf("the whole-GPU pod was not left to KEP-5004: claims %v, warnings %q", whole.Spec.ResourceClaims, ws)
	}
	eventually(t, "the scheduler's extended-resource claim of whole is allocated", func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, whole.Name, metav1.GetOptions{})
		if err != nil || p.Spec.NodeName != two || p.Status.ExtendedResourceClaimStatus == nil {
			return false, err
		}
		c, err := client.ResourceV1().ResourceClaims(ns).Get(ctx, p.Status.ExtendedResourceClaimStatus.ResourceClaimName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return c.Status.Allocation != nil && len(c.Status.Allocation.Devices.Results) == 1, nil
	})
}
