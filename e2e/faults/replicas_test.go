package faults

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/e2e/binary"
	"github.com/claimbridge/claimbridge/e2e/cluster"
)

// shardLabel splits pods between the two replicas, as a Service splits
// the apiserver's calls between the pods behind it.
const shardLabel = "faults.claimbridge.io/replica"

// secondReplica runs another claimbridge process beside cb and has
// kube-apiserver send it the pods labelled shardLabel=b, and cb every other
// pod; both are put back when the test ends.
func secondReplica(t *testing.T) *binary.Server {
	t.Helper()
	ports, err := cluster.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--namespace", ownNamespace, "--tls-mode", "cert-manager", "--cert-dir", cb.CertDir,
		"--webhook-port", strconv.Itoa(ports[0]),
		"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(ports[1]), "--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(ports[2]),
		"--leader-elect=false", "--log-format", "text", "--stranded-after=2s", "--metrics-secure=false"}
	b, err := binary.Run(t.Context(), tc, cb.Bin, args, nil, "127.0.0.1:"+strconv.Itoa(ports[2]))
	if err != nil {
		t.Fatal(err)
	}
	b.MetricsAddr = "127.0.0.1:" + strconv.Itoa(ports[1])
	t.Cleanup(func() { b.Process().Stop() })

	hooks := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	var name string
	list, err := hooks.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		if len(c.Webhooks) > 0 && c.Webhooks[0].Name == cb.WebhookName {
			name = c.Name
		}
	}
	orig, err := hooks.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		_ = hooks.Delete(ctx, name+"-b", metav1.DeleteOptions{})
		if cur, err := hooks.Get(ctx, name, metav1.GetOptions{}); err == nil {
			cur.Webhooks = orig.Webhooks
			_, _ = hooks.Update(ctx, cur, metav1.UpdateOptions{})
		}
	})
	second := orig.DeepCopy()
	second.ObjectMeta = metav1.ObjectMeta{Name: name + "-b"}
	for i := range second.Webhooks {
		second.Webhooks[i].ClientConfig.URL = new("https://127.0.0.1:" + strconv.Itoa(ports[0]) + "/mutate-v1-pod")
		second.Webhooks[i].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{shardLabel: "b"}}
	}
	if _, err := hooks.Create(t.Context(), second, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := orig.DeepCopy()
	for i := range first.Webhooks {
		first.Webhooks[i].ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: shardLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"b"}}}}
	}
	if _, err := hooks.Update(t.Context(), first, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTwoReplicasSplittingABurstLeaveNoPodPending: two replicas, each
// sent one of two Deployments of 8 two-GPU pods created at once, on 16 DRA
// and 16 device-plugin GPUs, in a namespace labelled
// claimbridge.io/repair=Recreate. Each replica holds what it translated and
// takes over what the other did once the pods reach its informer; pods that
// both translated inside that window — the race a burst split between
// replicas runs — wait past --stranded-after (2s on the second replica) and
// are created again by their ReplicaSets. The burst settles with exactly
// the 8 pods DRA holds translated and bound there, 8 on the device plugin,
// none Pending. The test logs how many pods the race over-admitted and how
// long the burst took to settle.
func TestTwoReplicasSplittingABurstLeaveNoPodPending(t *testing.T) {
	tc.DumpLogsOnFailure(t)
	ns := tc.Namespace(t, "replicas-", map[string]string{cluster.ModeLabel: "enforce", "claimbridge.io/repair": "Recreate"})
	onDRA, onLegacy := mixedFleet(t)
	b := secondReplica(t)
	for _, shard := range []string{"a", "b"} {
		eventually(t, "replica "+shard+" translates", func(ctx context.Context) (bool, error) {
			p := twoGPUs(ns, "probe-"+shard, false)
			p.Labels = map[string]string{shardLabel: shard}
			got, _, err := createPod(ctx, p, true)
			return err == nil && translated(got), nil
		})
	}

	start := time.Now()
	var wg sync.WaitGroup
	for _, shard := range []string{"a", "b"} {
		wg.Go(func() {
			labels := map[string]string{shardLabel: shard, "app": "trainer-" + shard}
			tmpl := twoGPUs(ns, "", false)
			_, err := client.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "trainer-" + shard},
				Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](8), Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Errorf("create deployment %s: %v", shard, err)
			}
		})
	}
	wg.Wait()

	firstTranslated := map[string]bool{}
	var translatedN, legacyN int
	eventually(t, "every pod bound", func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		translatedN, legacyN = 0, 0
		for _, p := range pods.Items {
			if translated(&p) {
				firstTranslated[string(p.UID)] = true
			}
			switch {
			case p.DeletionTimestamp != nil || p.Spec.NodeName == "":
			case translated(&p) && onDRA[p.Spec.NodeName]:
				translatedN++
			case legacy(&p) && onLegacy[p.Spec.NodeName]:
				legacyN++
			default:
				return false, fmt.Errorf("pod %s (translated: %t) was bound to %s", p.Name, translated(&p), p.Spec.NodeName)
			}
		}
		return translatedN+legacyN == 16 && len(pods.Items) == 16, nil
	})
	if translatedN != 8 || legacyN != 8 {
		t.Errorf("%d translated and %d kept, want 8 and 8", translatedN, legacyN)
	}
	t.Logf("two replicas: %d pods translated in all, %d over what DRA holds (the race, repaired); settled in %s; taken over from the other replica: a %d, b %d",
		len(firstTranslated), len(firstTranslated)-8, time.Since(start).Round(time.Millisecond), takenOverAt(t, cb.MetricsAddr), takenOverAt(t, b.MetricsAddr))
}
