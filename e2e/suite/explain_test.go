package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
)

// describeEvents lists the Events kubectl describe pod shows for a pod: those
// whose involvedObject is the pod's UID.
func describeEvents(ctx context.Context, p *corev1.Pod) ([]corev1.Event, error) {
	sel := fields.Set{"involvedObject.uid": string(p.UID)}.AsSelector().String()
	list, err := client.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// claimbridgeEvent waits for claimbridge's Event of a reason on the pod and
// returns it.
func claimbridgeEvent(t *testing.T, p *corev1.Pod, reason string) corev1.Event {
	t.Helper()
	var found corev1.Event
	eventually(t, "claimbridge's "+reason+" Event on pod "+p.Name, func(ctx context.Context) (bool, error) {
		evs, err := describeEvents(ctx, p)
		if err != nil {
			return false, err
		}
		i := slices.IndexFunc(evs, func(e corev1.Event) bool { return e.Source.Component == "claimbridge" && e.Reason == reason })
		if i < 0 {
			return false, nil
		}
		found = evs[i]
		return true, nil
	})
	return found
}

// TestEveryPodExplainsItselfInKubectlDescribe: a translated pod, a pod kept
// as submitted and pods the chart's matchConditions keep from the webhook
// (bound at creation; for a scheduler the policy does not list) each show
// claimbridge's Event among the pod's Events, leading with the reason code
// and its remedy; the decided ones carry the decision's annotations, the
// others none, and count in claimbridge_undecided_pods. The pods the
// webhook does not see run on the device-plugin nodes of legacy-gfd (one
// that no node could serve is told LegacyUnservable instead:
// TestForecastAndClusterAgreeAtTheSwitch).
func TestEveryPodExplainsItselfInKubectlDescribe(t *testing.T) {
	ns, fl := setup(t, "enforce", "l4-inference", "legacy-gfd")

	translated, _ := create(t, builders.MakePod("infer", ns).Container("server").Limit("nvidia.com/gpu", "1").
		NodeSelector("nvidia.com/gpu.product", "NVIDIA-L4").Obj())
	tmpl := translated.Annotations[api.AnnotationTemplate]
	if !hasClaim(translated) || tmpl == "" {
		t.Fatalf("pod was not translated: %v", translated.Spec.ResourceClaims)
	}
	kept, ws := create(t, builders.MakePod("notebook", ns).Container("app").Limit("nvidia.com/gpu.shared", "1").Obj())
	if hasClaim(kept) || !warned(ws, "claimbridge: SharesUnavailable: kept as submitted; ") {
		t.Fatalf("pod was translated or not told why it was kept: %q", ws)
	}
	// The chart's matchConditions keep these from the webhook.
	pinned, ws := create(t, builders.MakePod("pinned", ns).Container("app").Limit("nvidia.com/gpu", "1").
		NodeName(fl[1].NodeName("legacy-gfd-0")).Obj())
	other, _ := create(t, builders.MakePod("batch", ns).Container("app").Limit("nvidia.com/gpu", "1").SchedulerName("volcano").Obj())
	if len(ws) > 0 {
		t.Errorf("a pod bound at creation reached the webhook (warnings %q): the suite's webhook configuration has no matchConditions", ws)
	}

	for _, c := range []struct {
		pod                 *corev1.Pod
		decision, reason    string
		eventType, eventWhy string
		message             []string
	}{
		{pod: translated, decision: "Translated", reason: "Translated", eventType: corev1.EventTypeNormal, eventWhy: "Translated",
			message: []string{"Translated: uses ResourceClaimTemplate " + tmpl + " (FitsNow, e.g. on "}},
		{pod: kept, decision: "KeptLegacy", reason: "SharesUnavailable", eventType: corev1.EventTypeWarning, eventWhy: "KeptLegacy",
			message: []string{"SharesUnavailable: publish the GPUs as consumable shares", "asks for 1 share (nvidia.com/gpu.shared) of a time-sliced GPU"}},
		{pod: pinned, eventType: corev1.EventTypeWarning, eventWhy: "Undecided",
			message: []string{`NodeNamePreset: bound to node "` + pinned.Spec.NodeName + `" at creation: the webhook's matchConditions do not send pods that no scheduler places — let a scheduler place the pod`}},
		{pod: other, eventType: corev1.EventTypeWarning, eventWhy: "Undecided",
			message: []string{`SchedulerNotListed: scheduler "volcano" is not one the policy lists`, "add it to the policy's schedulers"}},
	} {
		if got := c.pod.Annotations["claimbridge.io/decision"]; got != c.decision || c.pod.Annotations["claimbridge.io/reason"] != c.reason {
			t.Errorf("pod %s: decision %q reason %q, want %q %q", c.pod.Name, got, c.pod.Annotations["claimbridge.io/reason"], c.decision, c.reason)
		}
		if c.decision != "" && !strings.HasPrefix(c.pod.Annotations["claimbridge.io/decision-message"], c.reason+": ") {
			t.Errorf("pod %s: decision message %q, want it to lead with %s", c.pod.Name, c.pod.Annotations["claimbridge.io/decision-message"], c.reason)
		}
		e := claimbridgeEvent(t, c.pod, c.eventWhy)
		if e.Type != c.eventType || e.InvolvedObject.Kind != "Pod" || e.InvolvedObject.Name != c.pod.Name {
			t.Errorf("pod %s: Event %s %s about %s %s, want %s about the pod", c.pod.Name, e.Type, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, c.eventType)
		}
		for _, m := range c.message {
			if !strings.Contains(e.Message, m) {
				t.Errorf("pod %s: Event message %q, want it to contain %q", c.pod.Name, e.Message, m)
			}
		}
		if !strings.HasPrefix(e.Message, strings.SplitN(c.message[0], ":", 2)[0]+": ") {
			t.Errorf("pod %s: Event message %q does not lead with the reason code", c.pod.Name, e.Message)
		}
	}
	eventually(t, "the undecided pods are counted", func(context.Context) (bool, error) {
		return metric(t, "claimbridge_undecided_pods", `reason="NodeNamePreset"`) >= 1 &&
			metric(t, "claimbridge_undecided_devices", `reason="SchedulerNotListed"`, `resource="nvidia.com/gpu"`) >= 1, nil
	})
}

// TestAnOwnerGetsOneEventForItsPodsDecisions: the ReplicaSet of a
// Deployment whose pods are kept as submitted gets claimbridge's
// aggregated Event ("N pods: KeptLegacy <code>: …") counting every pod,
// beside each pod's own Event.
func TestAnOwnerGetsOneEventForItsPodsDecisions(t *testing.T) {
	ns, _ := setup(t, "enforce")
	pod := builders.MakePod("", "").Container("app").Limit("nvidia.com/gpu.shared", "1").Obj()
	_, err := client.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "notebooks"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "notebooks"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "notebooks"}}, Spec: pod.Spec}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "one KeptLegacy Event per pod and the ReplicaSet's counting all 3", func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=notebooks"})
		if err != nil || len(pods.Items) != 3 {
			return false, err
		}
		for i := range pods.Items {
			evs, err := describeEvents(ctx, &pods.Items[i])
			if err != nil || !slices.ContainsFunc(evs, func(e corev1.Event) bool { return e.Reason == "KeptLegacy" }) {
				return false, err
			}
		}
		evs, err := ownerEvents(ctx, ns, "KeptLegacy")
		if err != nil {
			return false, err
		}
		counted := 0
		for _, e := range evs {
			var n int
			var noun string
			if _, err := fmt.Sscanf(e.Message, "%d %s KeptLegacy SharesUnavailable: ", &n, &noun); err != nil || e.Source.Component != "claimbridge" {
				return false, fmt.Errorf("owner Event %q", e.Message)
			}
			counted += n * int(max(e.Count, 1))
		}
		return counted == 3, nil
	})
}
