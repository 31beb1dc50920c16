package suite

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/translate"
)

const gpuDevicesQuota corev1.ResourceName = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"

// quotaPolicy is the default policy with a fallback from one L4 to two: a
// pod asking for one L4 gets the claim [1× L4 | 2× L4], which quota charges
// the worst case, 2.
var quotaPolicy = policyOf("e2e-quota", v1alpha1.PolicySpec{
	Profiles: v1alpha1.DefaultProfileNames(),
	Fallbacks: []v1alpha1.FallbackRule{{
		Name:         "l4-then-two",
		Match:        v1alpha1.LegacyShape{Resource: "nvidia.com/gpu", NodeSelector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-L4"}},
		Alternatives: []v1alpha1.LegacyShape{{CountMultiplier: 2}},
	}},
})

// gpuQuota creates a quota of n GPU devices in ns and waits until the quota
// controller has given it a status (before that, quota admission refuses
// every claim in the namespace).
func gpuQuota(t *testing.T, ns string, n int64) {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "gpus", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{gpuDevicesQuota: *resource.NewQuantity(n, resource.DecimalSI)}}}
	if _, err := client.CoreV1().ResourceQuotas(ns).Create(t.Context(), q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "quota status of "+ns, func(ctx context.Context) (bool, error) {
		got, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, "gpus", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, ok := got.Status.Used[gpuDevicesQuota]
		return ok, nil
	})
}

func events(t *testing.T, ns, pod, reason string) []corev1.Event {
	t.Helper()
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": pod, "reason": reason}.AsSelector().String()
	list, err := client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestAClaimTheQuotaWouldRefuseIsNotMadeAndOneWithinIsBound: a namespace
// quota on the GPU class's devices that the firstAvailable charge (the
// worst case, 2) exceeds keeps the pod as submitted, where the translation
// would have waited Pending with FailedResourceClaimCreation (shown by a
// control pod that refers to the same template unasked); under a quota of 2
// the same pod is translated, bound, and charged 2.
func TestAClaimTheQuotaWouldRefuseIsNotMadeAndOneWithinIsBound(t *testing.T) {
	usePolicy(t, quotaPolicy)
	over, _ := setup(t, "enforce", "l4-inference")
	within := tc.Namespace(t, "quota-within-", map[string]string{cluster.ModeLabel: "enforce"})
	// The informer delivers the quotas in order: once claimbridge sees the
	// second, it has the first.
	gpuQuota(t, within, 2)
	gpuQuota(t, over, 1)
	pod := func(ns string) *corev1.Pod {
		return builders.MakePod("infer", ns).Container("server").Limit("nvidia.com/gpu", "1").NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj()
	}
	eventually(t, "claimbridge sees the quota of "+over, func(ctx context.Context) (bool, error) {
		mark := warnings.mark()
		if _, err := client.CoreV1().Pods(over).Create(ctx, pod(over), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			return false, err
		}
		return warned(warnings.since(mark), "QuotaWouldBlockClaim"), nil
	})

	// Over quota: kept as submitted, with the charge in the warning and the report.
	kept, ws := create(t, pod(over))
	if hasClaim(kept) || kept.Annotations[api.AnnotationTemplate] != "" {
		t.Fatalf("translated although its claim would be over quota: %v", kept.Spec.ResourceClaims)
	}
	// The warning leads with the code and the remedy; the charge is in
	// the pod's decision (and its Event).
	if !warned(ws, "QuotaWouldBlockClaim: kept as submitted") ||
		!strings.Contains(kept.Annotations["claimbridge.io/decision-message"], string(gpuDevicesQuota)+": 2 (ResourceQuota gpus: hard 1, used 0)") {
		t.Errorf("warnings %q and decision %q do not give the reason and the charge", ws, kept.Annotations["claimbridge.io/decision-message"])
	}
	row, err := reportRow(t.Context(), over, kept.Name)
	if err != nil {
		t.Fatal(err)
	}
	if row.Decisive == nil || row.Decisive.Code != translate.ReasonQuotaWouldBlockClaim || row.Charge[string(gpuDevicesQuota)] != 2 {
		t.Errorf("report row: decisive %+v, charge %v; want QuotaWouldBlockClaim and a charge of 2", row.Decisive, row.Charge)
	}

	// Within quota: translated, allocated, bound, and charged the worst case.
	got, ws := create(t, pod(within))
	if !hasClaim(got) {
		t.Fatalf("not translated within its quota: %q", ws)
	}
	tmpl, err := client.ResourceV1().ResourceClaimTemplates(within).Get(t.Context(), got.Annotations[api.AnnotationTemplate], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tmpl.Spec.Spec.Devices.Requests[0].FirstAvailable); n != 2 {
		t.Fatalf("the template has %d alternatives, want [1× L4 | 2× L4]", n)
	}
	allocation(t, bound(t, within, got.Name))
	eventually(t, "the claim is charged 2 GPU devices", func(ctx context.Context) (bool, error) {
		q, err := client.CoreV1().ResourceQuotas(within).Get(ctx, "gpus", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		used := q.Status.Used[gpuDevicesQuota]
		return used.Value() == 2, nil
	})

	// The control: the same template in the over-quota namespace, referred
	// to by a pod claimbridge leaves alone, is what the translation would
	// have been; the resourceclaim controller cannot create its claim.
	control := tmpl.DeepCopy()
	control.ObjectMeta = metav1.ObjectMeta{Name: tmpl.Name, Namespace: over}
	if _, err := client.ResourceV1().ResourceClaimTemplates(over).Create(t.Context(), control, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cp := got.DeepCopy()
	cp.ObjectMeta = metav1.ObjectMeta{Name: "control", Namespace: over, Annotations: map[string]string{api.AnnotationSkip: "true"}}
	cp.Spec.NodeName = ""
	cp.Status = corev1.PodStatus{}
	if _, err := client.CoreV1().Pods(over).Create(t.Context(), cp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { podGone(context.Background(), over, "control") })
	eventually(t, "the control pod's claim is refused by the quota", func(ctx context.Context) (bool, error) {
		return len(events(t, over, "control", "FailedResourceClaimCreation")) > 0, nil
	})
	if e := events(t, over, "control", "FailedResourceClaimCreation"); !strings.Contains(e[0].Message, "exceeded quota") {
		t.Errorf("control event %q, want a quota refusal", e[0].Message)
	}
	// By now the resourceclaim controller has long looked at the kept pod.
	if e := events(t, over, kept.Name, "FailedResourceClaimCreation"); len(e) > 0 {
		t.Errorf("the pod kept as submitted has FailedResourceClaimCreation events: %v", e)
	}
	claims, err := client.ResourceV1().ResourceClaims(over).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 0 {
		t.Errorf("claims were created in the over-quota namespace: %d", len(claims.Items))
	}
}

// TestAPodThatCouldPreemptIsTranslatedWithTheWarning: a pod whose
// PriorityClass gives it priority 1000 may preempt; translated (the
// default) it gets the warning PreemptionLost, because a pod cannot preempt
// for devices of a claim in Kubernetes 1.37.
func TestAPodThatCouldPreemptIsTranslatedWithTheWarning(t *testing.T) {
	ns, _ := setup(t, "enforce", "l4-inference")
	never := corev1.PreemptNever
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-training-high-" + ns}, Value: 1000}
	calmClass := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-training-calm-" + ns}, Value: 1000, PreemptionPolicy: &never}
	for _, c := range []*schedulingv1.PriorityClass{pc, calmClass} {
		if _, err := client.SchedulingV1().PriorityClasses().Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := client.SchedulingV1().PriorityClasses().Delete(context.Background(), c.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete PriorityClass: %v", err)
			}
		})
	}
	pod := builders.MakePod("train", ns).Container("worker").Limit("nvidia.com/gpu", "1").Obj()
	pod.Spec.PriorityClassName = pc.Name
	got, ws := create(t, pod)
	if got.Spec.Priority == nil || *got.Spec.Priority != 1000 {
		t.Fatalf("priority %v, want 1000 from the PriorityClass", got.Spec.Priority)
	}
	if !hasClaim(got) {
		t.Fatalf("not translated: %q", ws)
	}
	// The code and its remedy lead; the details follow as far as they fit.
	if !warned(ws, "PreemptionLost: raise preemption.keepLegacyAbovePriority") || !warned(ws, "spec.priority: with priority 1000 the pod may preempt") {
		t.Errorf("warnings %q do not say the pod can no longer preempt for its GPU", ws)
	}
	allocation(t, bound(t, ns, got.Name))
	// The same priority with preemptionPolicy Never: nothing to lose, no warning.
	calm := builders.MakePod("calm", ns).Container("worker").Limit("nvidia.com/gpu", "1").Obj()
	calm.Spec.PriorityClassName = calmClass.Name
	got, ws = create(t, calm)
	if !hasClaim(got) || slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, "PreemptionLost") }) {
		t.Errorf("a pod that never preempts: translated %v, warnings %q", hasClaim(got), ws)
	}
}
