package decisions

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/reason"
)

// Node-label keys that name hardware, in the order HardwareKind reads them.
var (
	productLabels = []string{"nvidia.com/gpu.product", "cloud.google.com/gke-accelerator"}
	migLabels     = []string{"cloud.google.com/gke-gpu-partition-size"}
	tpuLabels     = []string{"cloud.google.com/gke-tpu-accelerator", "tpu.google.com/accelerator"}
	topoLabels    = []string{"cloud.google.com/gke-tpu-topology", "tpu.google.com/topology"}
	familyLabels  = []string{"nvidia.com/gpu.family"}
)

// HardwareKind names the kind of hardware a request for devices asks for,
// for grouping rows and nodes in the report. It reads what is asked, not
// what was allocated, so that a row that stays legacy has a kind too:
//
//   - the resource is the one asked for most (ties: the first by name);
//   - a MIG slice by name ("nvidia.com/mig-1g.10gb") or by GKE's
//     partition-size label is "MIG 1g.10gb";
//   - google.com/tpu is "TPU" with the accelerator and topology labels
//     ("TPU tpu-v5-lite-podslice 2x4");
//   - otherwise a product label (nvidia.com/gpu.product,
//     cloud.google.com/gke-accelerator) names it ("NVIDIA-L4"), several
//     allowed values joined by " or ";
//   - otherwise the GPU family label ("NVIDIA hopper");
//   - otherwise "<resource>, any model".
//
// labels are the node-label values asked for: a pod's nodeSelector and the
// In values of its required node-affinity terms, or a node's own labels.
// It returns "" when nothing is asked for.
func HardwareKind(devices map[string]int64, labels map[string][]string) string {
	if len(devices) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(devices))
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(devices[b], devices[a]) })
	resource := names[0]
	first := func(keys []string) string {
		for _, k := range keys {
			if vs := labels[k]; len(vs) > 0 {
				return strings.Join(vs, " or ")
			}
		}
		return ""
	}
	_, local, _ := strings.Cut(resource, "/")
	if profile, ok := strings.CutPrefix(local, "mig-"); ok {
		return "MIG " + profile
	}
	if p := first(migLabels); p != "" {
		return "MIG " + p
	}
	if resource == "google.com/tpu" {
		parts := []string{"TPU"}
		for _, keys := range [][]string{tpuLabels, topoLabels} {
			if v := first(keys); v != "" {
				parts = append(parts, v)
			}
		}
		if len(parts) == 1 {
			parts = append(parts, "any model")
		}
		return strings.Join(parts, " ")
	}
	if p := first(productLabels); p != "" {
		return p
	}
	if f := first(familyLabels); f != "" {
		vendor, _, _ := strings.Cut(resource, ".")
		return strings.ToUpper(vendor) + " " + f
	}
	return resource + ", any model"
}

// podLabels are the node-label values a pod asks for: its nodeSelector
// and the In values of its required node-affinity terms (of all terms, in
// order, without repeats).
func podLabels(pod *corev1.Pod) map[string][]string {
	out := map[string][]string{}
	add := func(k string, vs ...string) {
		for _, v := range vs {
			if !slices.Contains(out[k], v) {
				out[k] = append(out[k], v)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(pod.Spec.NodeSelector)) {
		add(k, pod.Spec.NodeSelector[k])
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				if e.Operator == corev1.NodeSelectorOpIn {
					add(e.Key, e.Values...)
				}
			}
		}
	}
	return out
}

// describeRequest fills what the row asks for: devices, replicas, hardware.
func (row *Row) describeRequest(obj metav1.Object, d *decide.Decision) {
	for n, v := range d.Requested {
		if row.DevicesRequested == nil {
			row.DevicesRequested = map[string]int64{}
		}
		row.DevicesRequested[string(n)] = v
	}
	row.Replicas = replicas(obj)
	if d.Pod != nil {
		row.Hardware = HardwareKind(row.DevicesRequested, podLabels(d.Pod))
	}
}

// replicas is how many pods a workload declares at once; nil when it does
// not say (a Pod, a DaemonSet, a custom resource: those are counted where
// their templates are found).
func replicas(obj metav1.Object) *int32 {
	orOne := func(p *int32) *int32 {
		if p == nil {
			return ptr.To[int32](1)
		}
		return ptr.To(*p)
	}
	// A Job runs parallelism pods at once, but no more than its completions.
	job := func(s batchv1.JobSpec) *int32 {
		n := orOne(s.Parallelism)
		if s.Completions != nil {
			*n = min(*n, *s.Completions)
		}
		return n
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return orOne(o.Spec.Replicas)
	case *appsv1.StatefulSet:
		return orOne(o.Spec.Replicas)
	case *appsv1.ReplicaSet:
		return orOne(o.Spec.Replicas)
	case *corev1.ReplicationController:
		return orOne(o.Spec.Replicas)
	case *batchv1.Job:
		return job(o.Spec)
	case *batchv1.CronJob:
		return job(o.Spec.JobTemplate.Spec)
	}
	return nil
}

// Pods is how many pods the row stands for: its replicas, one when it
// does not say.
func (row Row) Pods() int64 {
	if row.Replicas == nil {
		return 1
	}
	return int64(max(0, *row.Replicas))
}

// Demand is how many devices the row asks for: those of one pod times its
// pods.
func (row Row) Demand() int64 {
	var n int64
	for _, v := range row.DevicesRequested {
		n += v
	}
	return n * row.Pods()
}

// PodHardware is HardwareKind of what a pod asks for: devices per pod
// and the node labels of its nodeSelector and required node affinity.
func PodHardware(devices map[string]int64, pod *corev1.Pod) string {
	return HardwareKind(devices, podLabels(pod))
}

// Remedy is the catalog's remedy of the code that decided a row: for
// Infeasible, the remedy of the verdict's code, which names the devices
// the row asks for.
func (row Row) Remedy(catalog reason.Catalog, code reason.Code) string {
	if code == decide.ReasonInfeasible && row.VerdictCode != "" {
		if r := catalog.Remedy(reason.Code(row.VerdictCode)); r != "" {
			return WithHardware(r, row)
		}
	}
	return WithHardware(catalog.Remedy(code), row)
}

// WithHardware fills the feasibility catalog's %[1]s with the resources
// the row asks for.
func WithHardware(remedy string, row Row) string {
	if !strings.Contains(remedy, "%[1]s") {
		return remedy
	}
	hw := strings.Join(slices.Sorted(maps.Keys(row.DevicesRequested)), ", ")
	if hw == "" {
		hw = "these devices"
	}
	return fmt.Sprintf(remedy, hw)
}
