package suite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

// trainerTemplate is a pod template that asks for two GPUs the
// device-plugin way, with no node labels: the DRA nodes and the
// device-plugin nodes of the mixed fleet below both serve it.
func trainerTemplate(app string) corev1.PodTemplateSpec {
	pod := builders.MakePod("", "").Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}}, Spec: pod.Spec}
}

// settled waits until every pod selected by app is bound, and returns how
// many are translated and on which kind of node each landed.
func settled(t *testing.T, ns, app string, want int, dra, legacy map[string]bool) (translated, onLegacy int) {
	t.Helper()
	start := time.Now()
	var pending []string
	defer func() {
		if !t.Failed() {
			return
		}
		t.Logf("pending: %v", pending)
		rep, err := fetchReport(context.Background(), ns)
		if err != nil {
			t.Logf("report: %v", err)
			return
		}
		seen := map[string]int{}
		for _, r := range rep.Items {
			if r.Decisive != nil {
				seen[fmt.Sprintf("%s %s: %s", r.Outcome, r.Decisive.Code, r.Decisive.Message)]++
			}
		}
		for k, n := range seen {
			t.Logf("%d× %s", n, k)
		}
	}()
	eventually(t, fmt.Sprintf("%d pods of %s bound", want, app), func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return false, err
		}
		translated, onLegacy, pending = 0, 0, nil
		bound := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			if p.Spec.NodeName == "" {
				pending = append(pending, p.Name)
				continue
			}
			bound++
			_, isTranslated := p.Annotations[api.AnnotationTemplate]
			switch {
			case isTranslated && dra[p.Spec.NodeName]:
				translated++
			case !isTranslated && legacy[p.Spec.NodeName]:
				onLegacy++
			default:
				return false, fmt.Errorf("pod %s (translated: %t) was bound to %s", p.Name, isTranslated, p.Spec.NodeName)
			}
		}
		return bound == want && len(pending) == 0, nil
	})
	t.Logf("%s: %d pods bound in %s: %d translated on DRA nodes, %d as submitted on device-plugin nodes", app, want, time.Since(start).Round(time.Millisecond), translated, onLegacy)
	return translated, onLegacy
}

// TestAScaleUpPastWhatDRAHoldsLeavesNoPodPending: on a mixed fleet of 16
// DRA GPUs (two DGX H100 nodes) and 16 free device-plugin GPUs (two A100
// nodes), a Deployment created at 16 replicas of two GPUs each and a
// StatefulSet scaled to 16 in one step each end with exactly the 8 pods DRA
// holds translated and bound to DRA nodes, the other 8 as submitted on the
// device-plugin nodes; a Job of parallelism 20 of one GPU each with 16 and
// 4; and no pod Pending.
func TestAScaleUpPastWhatDRAHoldsLeavesNoPodPending(t *testing.T) {
	const replicas, draPods = 16, 8
	cases := []struct {
		name string
		// pods and onDRA: the pods of the workload and those DRA holds (one
		// GPU each for the Job: 20 pods, 16 on DRA and 4 on the device plugin).
		pods, onDRA int
		create      func(ctx context.Context, ns string) error
		remove      func(ctx context.Context, ns string) error
	}{
		{
			name: "deployment", pods: replicas, onDRA: draPods,
			create: func(ctx context.Context, ns string) error {
				_, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
					ObjectMeta: metav1.ObjectMeta{Name: "trainer"},
					Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "deployment"}},
						Template: trainerTemplate("deployment")},
				}, metav1.CreateOptions{})
				return err
			},
			remove: func(ctx context.Context, ns string) error {
				return client.AppsV1().Deployments(ns).Delete(ctx, "trainer", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
			},
		},
		{
			name: "job", pods: 20, onDRA: 16,
			create: func(ctx context.Context, ns string) error {
				tmpl := trainerTemplate("job")
				tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
				tmpl.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("1")
				_, err := client.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
					ObjectMeta: metav1.ObjectMeta{Name: "sweep"},
					Spec:       batchv1.JobSpec{Parallelism: ptr.To[int32](20), Completions: ptr.To[int32](20), Template: tmpl},
				}, metav1.CreateOptions{})
				return err
			},
			remove: func(ctx context.Context, ns string) error {
				return client.BatchV1().Jobs(ns).Delete(ctx, "sweep", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
			},
		},
		{
			name: "statefulset", pods: replicas, onDRA: draPods,
			create: func(ctx context.Context, ns string) error {
				sts, err := client.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
					ObjectMeta: metav1.ObjectMeta{Name: "serve"},
					Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0), PodManagementPolicy: appsv1.ParallelPodManagement,
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "statefulset"}}, Template: trainerTemplate("statefulset")},
				}, metav1.CreateOptions{})
				if err != nil {
					return err
				}
				sts.Spec.Replicas = ptr.To[int32](replicas) // the scale-up, in one step
				_, err = client.AppsV1().StatefulSets(ns).Update(ctx, sts, metav1.UpdateOptions{})
				return err
			},
			remove: func(ctx context.Context, ns string) error {
				return client.AppsV1().StatefulSets(ns).Delete(ctx, "serve", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A fleet of its own: nothing of the case before is still
			// allocated, bound or in the caches.
			ns, fl := setup(t, "enforce", "dgx-h100", "legacy-gfd")
			dra, legacy := nodeNames(fl[:1]), nodeNames(fl[1:])
			if err := tc.create(t.Context(), ns); err != nil {
				t.Fatal(err)
			}
			translated, onLegacy := settled(t, ns, tc.name, tc.pods, dra, legacy)
			if translated != tc.onDRA || onLegacy != tc.pods-tc.onDRA {
				t.Errorf("%d translated and %d kept, want %d and %d", translated, onLegacy, tc.onDRA, tc.pods-tc.onDRA)
			}
			if err := tc.remove(t.Context(), ns); err != nil {
				t.Fatal(err)
			}
			// No kubelet confirms a graceful deletion here: the pods go at once.
			eventually(t, "the pods of "+tc.name+" gone", func(ctx context.Context) (bool, error) {
				err := client.CoreV1().Pods(ns).DeleteCollection(ctx, *metav1.NewDeleteOptions(0), metav1.ListOptions{LabelSelector: "app=" + tc.name})
				if err != nil {
					return false, err
				}
				pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + tc.name})
				return err == nil && len(pods.Items) == 0, err
			})
			waitNoClaims(t, ns)
		})
	}
}

// TestAPodStaysOnTheDevicePluginWhileDRAIsFullUnlessItsNamespaceWaits: with
// every DRA GPU taken, a new pod stays as submitted and binds to a
// device-plugin node; in a namespace labelled when-dra-busy=Wait it is
// translated, its warning says it waits, and it stays Pending.
func TestAPodStaysOnTheDevicePluginWhileDRAIsFullUnlessItsNamespaceWaits(t *testing.T) {
	ns, fl := setup(t, "enforce", "dgx-h100", "legacy-gfd")
	dra, legacy := nodeNames(fl[:1]), nodeNames(fl[1:])
	takeEveryDRAGPU(t, ns, dra)
	pod := builders.MakePod("late", ns).Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
	got, warns := create(t, pod)
	if _, ok := got.Annotations[api.AnnotationTemplate]; ok {
		t.Fatalf("the pod was translated while DRA is full; warnings %q", warns)
	}
	if !strings.Contains(strings.Join(warns, "\n"), "DRABusyLegacyFree") {
		t.Errorf("warnings %q do not say why the pod stays legacy", warns)
	}
	if p := bound(t, ns, "late"); !legacy[p.Spec.NodeName] {
		t.Errorf("late was bound to %s, not a device-plugin node", p.Spec.NodeName)
	}

	waitNS := tc.Namespace(t, "burst-wait-", map[string]string{cluster.ModeLabel: "enforce", api.LabelWhenDRABusy: string(v1alpha1.WhenDRABusyWait)})
	pod = builders.MakePod("waits", waitNS).Container("trainer").Limit("nvidia.com/gpu", "2").Obj()
	got, warns = create(t, pod)
	if _, ok := got.Annotations[api.AnnotationTemplate]; !ok {
		t.Fatalf("the pod of a Wait namespace was not translated; warnings %q", warns)
	}
	if !strings.Contains(strings.Join(warns, "\n"), "DRABusyWaiting") || !strings.Contains(strings.Join(warns, "\n"), "wait") {
		t.Errorf("warnings %q do not say the pod waits", warns)
	}
	// The scheduler has had time to try it: the devices it waits for are taken.
	time.Sleep(3 * time.Second)
	if p, err := client.CoreV1().Pods(waitNS).Get(t.Context(), "waits", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Errorf("the waiting pod: %v, bound to %q; want it Pending", err, p.Spec.NodeName)
	}
}

// waitNoClaims waits until the namespace has no ResourceClaim left.
func waitNoClaims(t *testing.T, ns string) {
	t.Helper()
	eventually(t, "the claims of "+ns+" gone", func(ctx context.Context) (bool, error) {
		claims, err := client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(claims.Items) == 0, err
	})
}

// TestAStrandedPodIsToldAndRecreatedWhereItsNamespaceAsks: DRA and the
// device plugin are both full when a Deployment's pod comes, so it is
// translated and waits (DRABusyWaiting); then a device-plugin node frees
// up. After --stranded-after the pod and its ReplicaSet get a StrandedPod
// Warning and claimbridge_stranded_pods counts it; once the namespace is
// labelled claimbridge.io/repair=Recreate the pod is deleted, its
// ReplicaSet creates it again, and the new pod stays as submitted and is
// bound to the device-plugin node: nothing is left Pending.
func TestAStrandedPodIsToldAndRecreatedWhereItsNamespaceAsks(t *testing.T) {
	ns, fl := setup(t, "enforce", "dgx-h100", "legacy-gfd")
	dra, legacy := nodeNames(fl[:1]), nodeNames(fl[1:])
	offNS := tc.Namespace(t, "stranded-off-", nil)
	eight := builders.MakePod("", "").Container("app").Limit("nvidia.com/gpu", "8").Obj()
	for i := range 2 {
		p := eight.DeepCopy()
		p.Namespace, p.Name = offNS, fmt.Sprintf("legacy-%d", i)
		create(t, p)
		if got := bound(t, offNS, p.Name); !legacy[got.Spec.NodeName] {
			t.Fatalf("%s bound to %s, not a device-plugin node", p.Name, got.Spec.NodeName)
		}
		p = eight.DeepCopy()
		p.Namespace, p.Name = ns, fmt.Sprintf("dra-%d", i)
		create(t, p)
		if got := bound(t, ns, p.Name); !dra[got.Spec.NodeName] {
			t.Fatalf("%s bound to %s, not a DRA node", p.Name, got.Spec.NodeName)
		}
	}
	if _, err := client.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "late"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "late"}},
			Template: trainerTemplate("late")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var first corev1.Pod
	eventually(t, "the late pod translated and waiting", func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=late"})
		if err != nil || len(pods.Items) != 1 {
			return false, err
		}
		first = pods.Items[0]
		_, translated := first.Annotations[api.AnnotationTemplate]
		return translated && first.Spec.NodeName == "", nil
	})

	podGone(t.Context(), offNS, "legacy-0")
	eventually(t, "a StrandedPod Warning on the pod and its ReplicaSet", func(ctx context.Context) (bool, error) {
		if len(events(t, ns, first.Name, "StrandedPod")) == 0 {
			return false, nil
		}
		owner := metav1.GetControllerOf(&first)
		list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=ReplicaSet,involvedObject.name=" + owner.Name + ",reason=StrandedPod"})
		return err == nil && len(list.Items) > 0, err
	})
	if got := metric(t, "claimbridge_stranded_pods"); got < 1 {
		t.Errorf("claimbridge_stranded_pods = %g, want at least 1", got)
	}

	nsObj, err := client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["claimbridge.io/repair"] = "Recreate"
	if _, err := client.CoreV1().Namespaces().Update(t.Context(), nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stranded pod recreated as submitted and bound on the device plugin", func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=late"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.UID == first.UID && p.DeletionTimestamp == nil {
				return false, nil
			}
		}
		for _, p := range pods.Items {
			if p.UID == first.UID {
				continue
			}
			if _, translated := p.Annotations[api.AnnotationTemplate]; translated {
				return false, fmt.Errorf("the recreated pod %s was translated again", p.Name)
			}
			return legacy[p.Spec.NodeName], nil
		}
		return false, nil
	})
	if got := metric(t, "claimbridge_stranded_pods_recreated_total"); got < 1 {
		t.Errorf("claimbridge_stranded_pods_recreated_total = %g, want at least 1", got)
	}
}
