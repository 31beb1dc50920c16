package forecast

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/translate"
)

// benchCluster is a cluster before its switch: nodes of the before-cutover
// example repeated (A100, H100, A100 with MIG, one in 20 opted out), and
// workloads of a few shapes whose replicas add up to pods (about one
// workload per 19 pods).
func benchCluster(tb testing.TB, nodes, pods int) (*feasibility.Inventory, []job) {
	tb.Helper()
	src, err := feasibility.LoadInventory("../examples/fleets/before-cutover")
	if err != nil {
		tb.Fatal(err)
	}
	shapes := map[string]*corev1.Node{}
	for _, n := range src.Nodes {
		shapes[n.Name] = n
	}
	order := []string{"cutover-a100-0", "cutover-h100-0", "cutover-a100-mig-0", "cutover-a100-1"}
	inv := &feasibility.Inventory{}
	for i := range nodes {
		name := order[i%len(order)]
		if i%20 == 19 {
			name = "cutover-optout-0"
		}
		n := shapes[name].DeepCopy()
		n.Name = fmt.Sprintf("node-%05d", i)
		n.Labels[corev1.LabelHostname] = n.Name
		inv.Nodes = append(inv.Nodes, n)
	}
	kinds := []*corev1.Pod{
		builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "1").Obj(),
		builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "2").Obj(),
		builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "4").NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").Obj(),
		builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/mig-1g.10gb", "1").Obj(),
		builders.MakePod("p", "ns").Container("c").Limit("nvidia.com/gpu", "8").NodeSelector("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB").Obj(),
	}
	// Replicas as a cluster has them: many single pods (notebooks, Jobs),
	// some small Deployments, a few large ones.
	replicas := []int{1, 1, 1, 2, 4, 8, 32, 100}
	var jobs []job
	for i, left := 0, pods; left > 0; i++ {
		n := min(replicas[i%len(replicas)], left)
		jobs = append(jobs, job{key: fmt.Sprintf("ns/Deployment/w%05d", i), pod: kinds[i%len(kinds)], pods: int64(n)})
		left -= n
	}
	return inv, jobs
}

// BenchmarkJudge: the whole-cluster cutover forecast (ForecastCutover) —
// the fleet forecast, every workload decided, every pod placed, each
// placed alone and after the workloads that can take its nodes — of a
// cluster of nodes and pods. make bench compares 5,000 nodes and 20,000 pods with 1,000 and
// 4,000 (hack/benchratio/ratios.txt).
func BenchmarkJudge(b *testing.B) {
	for _, size := range []struct{ nodes, pods int }{{1000, 4000}, {5000, 20000}} {
		b.Run(fmt.Sprintf("nodes=%d/pods=%d", size.nodes, size.pods), func(b *testing.B) {
			before, jobs := benchCluster(b, size.nodes, size.pods)
			policy := translate.DefaultPolicy()
			decideAll := func(ctx context.Context, after *feasibility.Fleet) ([]Workload, error) {
				var out []Workload
				for _, jb := range jobs {
					d, err := decide.Pod(ctx, decide.Input{Pod: jb.pod, Policy: policy, Classes: after.Inventory.Classes, Checker: after.Checker, Snapshot: after.Snapshot})
					if err != nil {
						return nil, err
					}
					out = append(out, Workload{Key: jb.key, Pod: jb.pod, Pods: jb.pods, Decision: d})
				}
				return out, nil
			}
			for b.Loop() {
				j, err := ForecastCutover(b.Context(), CutoverInput{Before: before, Options: Options{Policy: policy}, Decide: decideAll})
				if err != nil {
					b.Fatal(err)
				}
				var served int64
				for _, c := range j.Cutovers {
					served += c.Served
				}
				if served == 0 {
					b.Fatal("no pod served: the benchmark no longer places anything")
				}
			}
		})
	}
}
