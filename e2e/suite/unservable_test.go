package suite

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/e2e/cluster"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
)

// sharedGPU asks for one time-slicing replica of a GPU: where no DRA GPU
// publishes consumable shares claimbridge keeps it as submitted
// (SharesUnavailable), and on a fleet that switched to DRA no node offers
// nvidia.com/gpu.shared any more.
func sharedGPU(name, ns string) *corev1.Pod {
	return builders.MakePod(name, ns).Container("app").Limit("nvidia.com/gpu.shared", "1").Obj()
}

// sharedDeployment is a Deployment of one such pod.
func sharedDeployment(ctx context.Context, ns string) error {
	pod := sharedGPU("", "")
	_, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "notebook"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "notebook"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "notebook"}}, Spec: pod.Spec}},
	}, metav1.CreateOptions{})
	return err
}

// ownerEvents lists the events of a reason about ReplicaSets of ns.
func ownerEvents(ctx context.Context, ns, reason string) ([]corev1.Event, error) {
	sel := fields.Set{"involvedObject.kind": "ReplicaSet", "reason": reason}.AsSelector().String()
	list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// TestAPodNoNodeCanServeAfterTheSwitchIsToldOrRefused: on a fleet that
// switched to DRA (the L4 nodes publish slices, none advertises a GPU or a
// share of one), a Deployment of a time-sliced GPU pod in an enforce
// namespace is admitted as submitted and its pod, Pending, gets a
// LegacyUnservable Warning Event, as does its ReplicaSet; a bare pod gets
// the admission warning; both count in the metrics. In a namespace labelled
// claimbridge.io/on-unservable=Deny the Deployment's ReplicaSet records
// FailedCreate with claimbridge's message and no pod exists, a server-side
// dry run shows the refusal, and in an audit namespace with the label the
// pod is created with a warning that it would be refused.
func TestAPodNoNodeCanServeAfterTheSwitchIsToldOrRefused(t *testing.T) {
	ns, _ := setup(t, "enforce", "l4-inference")
	const gone = "LegacyUnservable: no node offers nvidia.com/gpu.shared any more (DRA replaced the device plugin); this pod stays Pending"
	// Warnings lead with the code and the remedy.
	const told = "LegacyUnservable: make the pod translatable (see why it is not), ask for what nodes offer, or restore the device plugin; no node offers nvidia.com/gpu.shared any more (DRA replaced the device plugin); this pod stays Pending"
	_, ws := create(t, sharedGPU("solo", ns))
	if !warned(ws, "SharesUnavailable: kept as submitted") || !warned(ws, "claimbridge: "+told) {
		t.Errorf("admission warnings %q, want SharesUnavailable and %q", ws, told)
	}
	start := time.Now()
	if err := sharedDeployment(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	eventually(t, "the Deployment's pod created as submitted", func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=notebook"})
		if err != nil || len(pods.Items) != 1 {
			return false, err
		}
		pod = pods.Items[0]
		if _, translated := pod.Annotations[api.AnnotationTemplate]; translated {
			return false, fmt.Errorf("pod %s was translated", pod.Name)
		}
		return true, nil
	})
	eventually(t, "a LegacyUnservable Warning on the pod and on its ReplicaSet", func(ctx context.Context) (bool, error) {
		onPod := events(t, ns, pod.Name, "LegacyUnservable")
		onOwner, err := ownerEvents(ctx, ns, "LegacyUnservable")
		if err != nil || len(onPod) == 0 || len(onOwner) == 0 {
			return false, err
		}
		owner := metav1.GetControllerOf(&pod)
		if onOwner[0].InvolvedObject.Name != owner.Name || onPod[0].Type != corev1.EventTypeWarning || onOwner[0].Type != corev1.EventTypeWarning {
			return false, fmt.Errorf("events %+v on the pod and %+v on the owner, want Warnings on the pod and on %s", onPod[0], onOwner[0], owner.Name)
		}
		for _, e := range []corev1.Event{onPod[0], onOwner[0]} {
			if !strings.Contains(e.Message, strings.TrimPrefix(gone, "LegacyUnservable: ")) {
				return false, fmt.Errorf("event message %q", e.Message)
			}
		}
		return true, nil
	})
	t.Logf("Events on the pod and its ReplicaSet %s after the Deployment was created", time.Since(start).Round(time.Millisecond))
	if got := metric(t, "claimbridge_unservable_pods_total", `mode="enforce"`, `resource="nvidia.com/gpu.shared"`); got < 2 {
		t.Errorf("claimbridge_unservable_pods_total{enforce,nvidia.com/gpu.shared} = %g, want at least 2", got)
	}
	eventually(t, "claimbridge_unservable_pods counts both pods", func(context.Context) (bool, error) {
		return metricSum(t, "claimbridge_unservable_pods") >= 2, nil
	})
	row, err := reportRow(t.Context(), ns, "solo")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(reasonCodes(row.Reasons), ","), "LegacyUnservable") {
		t.Errorf("report row of solo has reasons %v, want LegacyUnservable", reasonCodes(row.Reasons))
	}

	deny := tc.Namespace(t, "unservable-deny-", map[string]string{cluster.ModeLabel: "enforce", api.LabelOnUnservable: "Deny"})
	const refused = "claimbridge: LegacyUnservable: no node offers nvidia.com/gpu.shared any more (DRA replaced the device plugin); this pod would stay Pending; denied (namespace label claimbridge.io/on-unservable=Deny)"
	_, err = client.CoreV1().Pods(deny).Create(t.Context(), sharedGPU("dry", deny), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), refused) {
		t.Errorf("server-side dry run: %v, want Invalid with %q", err, refused)
	}
	t.Run("kubectl says who refused, why and what chose Deny", func(t *testing.T) {
		// kubectl prints an Invalid refusal by its causes, not its message.
		manifest := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"notebook"},"spec":{"containers":[{"name":"app","image":"registry.example/app:1","resources":{"limits":{"nvidia.com/gpu.shared":"1"}}}]}}`
		cmd := exec.CommandContext(t.Context(), tc.Kubectl(), "--kubeconfig", tc.Kubeconfig, "-n", deny, "create", "-f", "-")
		cmd.Stdin = strings.NewReader(manifest)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		t.Logf("kubectl create -f pod.yaml (exit %v):\n%s", err, stderr.String())
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("kubectl create: %v, want a refusal", err)
		}
		for _, want := range []string{"claimbridge", "LegacyUnservable", "no node offers nvidia.com/gpu.shared", "namespace label claimbridge.io/on-unservable=Deny"} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("kubectl's message lacks %q", want)
			}
		}
	})
	if err := sharedDeployment(t.Context(), deny); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ReplicaSet's FailedCreate with claimbridge's message", func(ctx context.Context) (bool, error) {
		evs, err := ownerEvents(ctx, deny, "FailedCreate")
		if err != nil || len(evs) == 0 {
			return false, err
		}
		if !strings.Contains(evs[0].Message, refused) {
			return false, fmt.Errorf("FailedCreate %q, want %q in it", evs[0].Message, refused)
		}
		t.Logf("FailedCreate: %s", evs[0].Message)
		return true, nil
	})
	if pods, err := client.CoreV1().Pods(deny).List(t.Context(), metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
		t.Errorf("pods in the Deny namespace: %d (%v), want none", len(pods.Items), err)
	}
	if got := metric(t, "claimbridge_admissions_total", `mode="enforce"`, `outcome="Deny"`, `reason="LegacyUnservable"`); got < 1 {
		t.Errorf("claimbridge_admissions_total{enforce,Deny,LegacyUnservable} = %g, want at least 1", got)
	}

	audit := tc.Namespace(t, "unservable-audit-", map[string]string{cluster.ModeLabel: "audit", api.LabelOnUnservable: "Deny"})
	watched, ws := create(t, sharedGPU("watched", audit))
	// The warning leads with the code and the remedy; the whole of it is
	// in the pod's decision (and its Event).
	if !warned(ws, "claimbridge (audit): "+told[:60]) ||
		!strings.Contains(watched.Annotations["claimbridge.io/decision-message"], "it would be denied in enforce mode (namespace label claimbridge.io/on-unservable=Deny)") {
		t.Errorf("admission warnings in audit mode %q and decision %q, want that it would be denied", ws, watched.Annotations["claimbridge.io/decision-message"])
	}
}

func reasonCodes(rs []reason.Reason) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, string(r.Code))
	}
	return out
}
