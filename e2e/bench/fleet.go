package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
)

// dgxFleet returns n nodes with 16 devices each (8 H100 GPUs and 8 RDMA
// NICs): the DGX H100 nodes of fleetgen.Synthetic without their two CPU
// devices.
func dgxFleet(n int) fleetgen.Fleet {
	g := fleetgen.Synthetic(4 * n) // every fourth node is a DGX H100
	f := fleetgen.Fleet{Name: fmt.Sprintf("dgx-%d", n), Classes: g.Classes}
	keep := map[string]bool{}
	for _, node := range g.Nodes {
		if node.Labels[fleetgen.SyntheticShapeLabel] == "dgx-h100" {
			keep[node.Name] = true
			f.Nodes = append(f.Nodes, node)
		}
	}
	for _, s := range g.Slices {
		if s.Spec.NodeName != nil && keep[*s.Spec.NodeName] && s.Spec.Driver != fleetgen.DriverCPU {
			f.Slices = append(f.Slices, s)
		}
	}
	return f
}

func devices(slices []*resourceapi.ResourceSlice) int {
	n := 0
	for _, s := range slices {
		n += len(s.Spec.Devices)
	}
	return n
}

// fastClient lifts client-go's rate limit so that the client is not what
// limits a measurement.
func fastClient(cfg *rest.Config) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.WarningHandler = rest.NoWarnings{}
	return kubernetes.NewForConfig(cfg)
}

// publish creates the fleet the way kubelets and a DRA driver would leave it:
// Nodes with their status (Ready, no not-ready taint) and ResourceSlices,
// workers requests at a time.
func publish(ctx context.Context, cfg *rest.Config, f fleetgen.Fleet, workers int) error {
	client, err := fastClient(cfg)
	if err != nil {
		return err
	}
	for _, dc := range f.Classes {
		if _, err := client.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create device class %s: %w", dc.Name, err)
		}
	}
	now := metav1.Now()
	createNode := func(ctx context.Context, n *corev1.Node) error {
		n = n.DeepCopy()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
		n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64"}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: n.Name}}
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
		// Node admission taints a new node not-ready; the node lifecycle
		// controller, which would lift it, does not run.
		_, err := client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(`{"spec":{"taints":null}}`), metav1.PatchOptions{})
		return err
	}
	createSlice := func(ctx context.Context, s *resourceapi.ResourceSlice) error {
		_, err := client.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{})
		return err
	}
	if err := parallel(ctx, f.Nodes, workers, createNode); err != nil {
		return err
	}
	return parallel(ctx, f.Slices, workers, createSlice)
}

// parallel runs do on every item, workers at a time, and returns the first error.
func parallel[T any](ctx context.Context, items []T, workers int, do func(context.Context, T) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(items) || ctx.Err() != nil {
					return
				}
				if err := do(ctx, items[i]); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// histogram is a Prometheus histogram: cumulative counts by upper bound, in
// exposition order.
type histogram struct {
	bounds []string
	counts []float64
}

// scrapeHistogram sums the buckets of every series of name whose labels
// contain all of match, from a Prometheus text exposition.
func scrapeHistogram(text, name string, match ...string) histogram {
	var h histogram
	index := map[string]int{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"_bucket{") {
			continue
		}
		ok := true
		for _, m := range match {
			ok = ok && strings.Contains(line, m)
		}
		if !ok {
			continue
		}
		_, rest, _ := strings.Cut(line, `le="`)
		le, rest, _ := strings.Cut(rest, `"`)
		f := strings.Fields(rest)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		i, seen := index[le]
		if !seen {
			i = len(h.bounds)
			index[le] = i
			h.bounds = append(h.bounds, le)
			h.counts = append(h.counts, 0)
		}
		h.counts[i] += v
	}
	return h
}

// minus is h with the counts of before subtracted (same buckets).
func (h histogram) minus(before histogram) histogram {
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts))}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(before.counts) && before.bounds[i] == h.bounds[i] {
			out.counts[i] -= before.counts[i]
		}
	}
	return out
}

// quantile is the q-quantile of a cumulative histogram, interpolated
// linearly inside its bucket as Prometheus' histogram_quantile does, and
// false without samples or beyond the last finite bucket.
func (h histogram) quantile(q float64) (time.Duration, bool) {
	if len(h.counts) == 0 {
		return 0, false
	}
	total := h.counts[len(h.counts)-1]
	if total <= 0 {
		return 0, false
	}
	rank, lower, below := q*total, 0.0, 0.0
	for i, b := range h.bounds {
		upper, err := strconv.ParseFloat(b, 64)
		if err != nil || math.IsInf(upper, 1) {
			return 0, false
		}
		if h.counts[i] >= rank {
			in := h.counts[i] - below
			f := 1.0
			if in > 0 {
				f = (rank - below) / in
			}
			return time.Duration((lower + f*(upper-lower)) * float64(time.Second)), true
		}
		lower, below = upper, h.counts[i]
	}
	return 0, false
}

// maxBound is the upper bound of the highest bucket holding a sample.
func (h histogram) maxBound() (time.Duration, bool) {
	for i := len(h.counts) - 1; i >= 0; i-- {
		if i == 0 || h.counts[i] > h.counts[i-1] {
			if h.counts[i] == 0 {
				return 0, false
			}
			v, err := strconv.ParseFloat(h.bounds[i], 64)
			if err != nil || math.IsInf(v, 1) {
				return 0, false
			}
			return time.Duration(v * float64(time.Second)), true
		}
	}
	return 0, false
}

// plus adds o's counts (same buckets); the zero histogram takes o's buckets.
func (h histogram) plus(o histogram) histogram {
	if len(h.bounds) == 0 {
		return histogram{bounds: o.bounds, counts: append([]float64(nil), o.counts...)}
	}
	out := histogram{bounds: h.bounds, counts: append([]float64(nil), h.counts...)}
	for i := range out.counts {
		if i < len(o.counts) && o.bounds[i] == h.bounds[i] {
			out.counts[i] += o.counts[i]
		}
	}
	return out
}

func httpGet(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// gauge reads the first sample of a metric without labels, -1 when absent.
func gauge(text, name string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == name {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				return v
			}
		}
	}
	return -1
}

// fleetPods returns n running-looking pods spread over the fleet's nodes
// (bound at creation: nodeName set, as kube-scheduler leaves them): the
// Deployment-made workloads beside the GPUs, with what such a pod carries
// (labels with a pod-template-hash, an annotation, an image, environment,
// a port, probes, CPU and memory requests), none asking for a device, so
// that the fleet's GPUs stay free for the memory probe's pod.
func fleetPods(ns string, nodes []*corev1.Node, n int) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, n)
	for i := range n {
		app := fmt.Sprintf("svc-%d", i%50)
		hash := fmt.Sprintf("%08x", i%50*2654435761%(1<<32))
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-%s-%05d", app, hash[:8], i), Namespace: ns,
				Labels:      map[string]string{"app": app, "pod-template-hash": hash, "tier": "backend"},
				Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			},
			Spec: corev1.PodSpec{
				NodeName: nodes[i%len(nodes)].Name,
				Containers: []corev1.Container{{
					Name: "app", Image: "registry.example.com/team/" + app + ":v1.4.2",
					Args:  []string{"--listen=:8080", "--metrics=:9090"},
					Env:   []corev1.EnvVar{{Name: "APP", Value: app}, {Name: "LOG_LEVEL", Value: "info"}},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
					},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}},
				}},
			},
		}
		out = append(out, p)
	}
	return out
}

// publishPods creates pods, workers requests at a time.
func publishPods(ctx context.Context, cfg *rest.Config, pods []*corev1.Pod, workers int) error {
	client, err := fastClient(cfg)
	if err != nil {
		return err
	}
	return parallel(ctx, pods, workers, func(ctx context.Context, p *corev1.Pod) error {
		if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		return nil
	})
}
