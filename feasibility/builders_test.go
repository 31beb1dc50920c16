package feasibility

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/internal/testing/fleetgen"
)

// podBuilder builds translated pods: only the fields the checker reads.
type podBuilder struct{ pod *corev1.Pod }

func makePod(name, namespace string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}}
}

func (b *podBuilder) NodeSelector(k, v string) *podBuilder {
	if b.pod.Spec.NodeSelector == nil {
		b.pod.Spec.NodeSelector = map[string]string{}
	}
	b.pod.Spec.NodeSelector[k] = v
	return b
}

func (b *podBuilder) RequiredNodeAffinity(key string, op corev1.NodeSelectorOperator, values ...string) *podBuilder {
	b.pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}},
		}}},
	}}
	return b
}

func (b *podBuilder) Tolerate(key string) *podBuilder {
	b.pod.Spec.Tolerations = append(b.pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	return b
}

func (b *podBuilder) Obj() *corev1.Pod { return b.pod }

// claimBuilder builds claim specs as a ResourceClaimTemplate would carry them (not defaulted).
type claimBuilder struct{ spec resourceapi.ResourceClaimSpec }

func makeClaim() *claimBuilder { return &claimBuilder{} }

func (b *claimBuilder) Exactly(name, class string, count int64, selectors ...string) *claimBuilder {
	b.spec.Devices.Requests = append(b.spec.Devices.Requests, resourceapi.DeviceRequest{
		Name:    name,
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, Count: count, Selectors: celSelectors(selectors)},
	})
	return b
}

// CPU asks dra.cpu for a share of cpus CPUs (consumable capacity).
func (b *claimBuilder) CPU(name string, cpus string) *claimBuilder {
	b.spec.Devices.Requests = append(b.spec.Devices.Requests, resourceapi.DeviceRequest{
		Name: name,
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: fleetgen.ClassCPU, Capacity: &resourceapi.CapacityRequirements{
			Requests: map[resourceapi.QualifiedName]resource.Quantity{"dra.cpu/cpu": resource.MustParse(cpus)},
		}},
	})
	return b
}

func (b *claimBuilder) FirstAvailable(name string, subs ...resourceapi.DeviceSubRequest) *claimBuilder {
	b.spec.Devices.Requests = append(b.spec.Devices.Requests, resourceapi.DeviceRequest{Name: name, FirstAvailable: subs})
	return b
}

func (b *claimBuilder) MatchAttribute(attr string, requests ...string) *claimBuilder {
	b.spec.Devices.Constraints = append(b.spec.Devices.Constraints, resourceapi.DeviceConstraint{
		Requests: requests, MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(attr)),
	})
	return b
}

func (b *claimBuilder) Obj() *resourceapi.ResourceClaimSpec { return &b.spec }

func sub(name, class string, count int64, selectors ...string) resourceapi.DeviceSubRequest {
	return resourceapi.DeviceSubRequest{Name: name, DeviceClassName: class, Count: count, Selectors: celSelectors(selectors)}
}

func celSelectors(exprs []string) []resourceapi.DeviceSelector {
	var out []resourceapi.DeviceSelector
	for _, e := range exprs {
		out = append(out, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	return out
}

func result(request, driver, pool, device string) resourceapi.DeviceRequestAllocationResult {
	return resourceapi.DeviceRequestAllocationResult{Request: request, Driver: driver, Pool: pool, Device: device}
}

// inventoryOf loads shipped fleets from examples/fleets.
func inventoryOf(t testing.TB, fleets ...string) *Inventory {
	t.Helper()
	var paths []string
	for _, f := range fleets {
		paths = append(paths, "../examples/fleets/"+f)
	}
	inv, err := LoadInventory(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// inventoryFrom converts a generated fleet.
func inventoryFrom(f fleetgen.Fleet) *Inventory {
	return &Inventory{Nodes: f.Nodes, Slices: f.Slices, Classes: f.Classes, Claims: f.Claims, TaintRules: f.TaintRules}
}

const (
	h100 = `device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"`
	a100 = `device.attributes["gpu.nvidia.com"].productName.replace(" ", "-") == "NVIDIA-A100-SXM4-80GB"`
	l4   = `device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"`
)
