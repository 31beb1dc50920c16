//go:build unix

package rehearsal

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/claimbridge/claimbridge/feasibility"
)

// createPriorityClasses creates the input's PriorityClasses, so that the
// pods get the priorities the forecast ordered them by.
func createPriorityClasses(ctx context.Context, cs kubernetes.Interface, classes []*schedulingv1.PriorityClass) error {
	for _, pc := range classes {
		c := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: pc.Name}, Value: pc.Value, GlobalDefault: pc.GlobalDefault,
			PreemptionPolicy: pc.PreemptionPolicy, Description: pc.Description}
		if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create PriorityClass %s: %w", pc.Name, err)
		}
	}
	return nil
}

// created is what became of one workload's pods.
type created struct {
	pods int64
	err  error // the first creation that failed
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// generateName is a pod name prefix for a workload.
func generateName(name string) string {
	s := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(s) > 40 {
		s = strings.Trim(s[:40], "-")
	}
	return cmp.Or(s, "pod") + "-"
}

// createAll creates every pod of every workload at once (a few creations
// in flight at a time), as the controllers of a cluster recreate them after
// the switch, each through the webhook.
func createAll(ctx context.Context, cs kubernetes.Interface, ws []workload) map[int]created {
	type job struct {
		w workload
		i int64
	}
	jobs := make(chan job)
	var mu sync.Mutex
	out := map[int]created{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for j := range jobs {
				p := j.w.pod.DeepCopy()
				p.ObjectMeta = metav1.ObjectMeta{GenerateName: generateName(j.w.name), Namespace: j.w.ns,
					Labels: maps.Clone(j.w.pod.Labels), Annotations: maps.Clone(j.w.pod.Annotations)}
				if p.Labels == nil {
					p.Labels = map[string]string{}
				}
				p.Labels[rehearsalLabel] = strconv.Itoa(j.w.row)
				p.Status = corev1.PodStatus{}
				_, err := cs.CoreV1().Pods(j.w.ns).Create(ctx, p, metav1.CreateOptions{})
				mu.Lock()
				c := out[j.w.row]
				if err == nil {
					c.pods++
				} else if c.err == nil {
					c.err = err
				}
				out[j.w.row] = c
				mu.Unlock()
			}
		})
	}
	for _, w := range ws {
		for i := range w.pods {
			jobs <- job{w, i}
		}
	}
	close(jobs)
	wg.Wait()
	return out
}

// settle waits until no pod of the rehearsal has been bound for settle
// (at most timeout), and counts the pods each workload has running: bound
// by kube-scheduler, or, for the workloads pinned to a node at creation
// (pinned rows), bound to a node that offers what they ask for (its
// kubelet would admit them).
func settle(ctx context.Context, cs kubernetes.Interface, after *feasibility.Snapshot, pinned map[int]bool, settle, timeout time.Duration) (map[int]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		last    string
		changed = time.Now()
		pods    []corev1.Pod
	)
	for {
		list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: rehearsalLabel})
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		if err == nil {
			pods = list.Items
			sig := make([]string, 0, len(pods))
			for _, p := range pods {
				sig = append(sig, p.Namespace+"/"+p.Name+"="+p.Spec.NodeName)
			}
			slices.Sort(sig)
			if s := strings.Join(sig, ","); s != last {
				last, changed = s, time.Now()
			}
		}
		if time.Since(changed) >= settle || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	bound := map[int]int64{}
	for i := range pods {
		p := &pods[i]
		row, err := strconv.Atoi(p.Labels[rehearsalLabel])
		if err != nil || p.Spec.NodeName == "" {
			continue
		}
		if pinned[row] && len(after.LegacyUnservable(p)) > 0 {
			continue // its node does not offer what it asks for: the kubelet refuses it
		}
		bound[row]++
	}
	return bound, nil
}
