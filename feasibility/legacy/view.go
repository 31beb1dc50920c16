package legacy

// The legacy view of a DRA node: what the device plugins and GPU Feature
// Discovery, Node Feature Discovery or GKE would have shown on it, derived
// from the devices it publishes with the policy's vocabulary read backwards
// (translate.Policy.LegacyLabel, LegacyResource). Labels the node really
// carries win over derived ones.

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/claimbridge/claimbridge/translate"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// Device is one device of a node: the driver that publishes it and what
// it publishes.
type Device struct {
	Driver string
	Device *resourceapi.Device
}

// Devices answers which of one node's devices a rule of the policy
// selects.
type Devices interface {
	// Matching returns the node's devices of the DeviceClass that pass the
	// selectors, in (device name, driver) order; none for a class the
	// fleet does not have. A selector that cannot be evaluated on a device
	// does not match it.
	Matching(className string, selectors []string) []Device
	// Family is a translate.FamilyDevices over the node.
	Family(family string) []translate.LegacyDevice
}

// Shares are the families a pod asks for as shares, and those it asks for
// under the plain resource name (translate.Policy.LegacyShares).
type Shares struct{ Families, Plain map[string]bool }

// Ask is what a pod as submitted asks of a node's legacy view.
type Ask struct {
	// Keys are the node-label keys the pod's node selection reads
	// (RequiredLabelKeys): the derived labels the view adds.
	Keys []string
	// Resources are the extended resources it asks for: the derived
	// resources the view puts in its allocatable.
	Resources []corev1.ResourceName
	// Strategy, when set, is the MIG strategy the device plugin is taken to
	// have run with on a node that does not say
	// (translate.Policy.LegacyMIGStrategies): the derived labels and
	// resources are those of that strategy.
	Strategy string
	// Selectors are what the device plugin's scheduler adds for the pod to
	// a resource's devices (translate.Policy.LegacyDeviceSelectors: HAMi's
	// card types): only the devices that pass them count.
	Selectors map[corev1.ResourceName][]string
	// Shares says which families the pod asks for as shares: their
	// resources count the shares of the node's shared devices, as the
	// device plugin advertises a time-sliced GPU once per replica, and GFD
	// marks the product of such GPUs where the pod asks for them under the
	// plain resource name.
	Shares Shares
}

// maxDevices stands for "as many as asked" where the legacy view cannot
// count.
const maxDevices = 1 << 20

// View is the node as a pod as submitted would see it: the real labels,
// canonicalised, with the derived labels the pod asks about added where
// the node does not carry them, and the derived extended resources the pod
// asks for in its allocatable (the node's own for resources the policy
// does not map). devs are the node's devices.
func View(p *translate.Policy, real *corev1.Node, devs Devices, ask Ask) *corev1.Node {
	labels := real.Labels
	if key := p.MIGStrategyLabel(); ask.Strategy != "" && key != "" {
		if _, ok := labels[key]; !ok {
			labels = maps.Clone(labels)
			if labels == nil {
				labels = map[string]string{}
			}
			labels[key] = ask.Strategy
		}
	}
	n := &corev1.Node{ObjectMeta: *real.ObjectMeta.DeepCopy(), Spec: real.Spec}
	n.Labels = make(map[string]string, len(real.Labels)+len(ask.Keys))
	for k, v := range real.Labels {
		if p.KnowsLabel(k) {
			v = p.CanonicalLabelValue(k, v)
		}
		n.Labels[k] = v
	}
	for _, k := range ask.Keys {
		if _, ok := n.Labels[k]; ok {
			continue
		}
		if v, ok := p.LegacyLabelOfShares(k, labels, devs.Family, ask.Shares.Plain); ok {
			n.Labels[k] = v
		}
	}
	n.Status.Allocatable = maps.Clone(real.Status.Allocatable)
	if n.Status.Allocatable == nil {
		n.Status.Allocatable = corev1.ResourceList{}
	}
	for _, r := range ask.Resources {
		rule, ok := p.LegacyResource(r, labels)
		if !ok {
			continue
		}
		selectors := rule.Selectors
		if extra := ask.Selectors[r]; len(extra) > 0 {
			selectors = append(slices.Clone(selectors), extra...)
		}
		matching := devs.Matching(rule.DeviceClassName, selectors)
		count := int64(len(matching))
		capacity, counted := p.ShareCapacity(rule.Family)
		switch {
		case !rule.Shared && counted && p.SharesRenamed(rule.Family, labels):
			// The device plugin offers the node's shared GPUs under the
			// renamed resource only: the plain one counts the others.
			count = 0
			for _, d := range matching {
				if replicas(p, rule.Family, d, capacity) == 0 {
					count++
				}
			}
		case ask.Shares.Families[rule.Family] && counted:
			// One replica per share of each shared device; a device that
			// is not shared offers none.
			count = 0
			for _, d := range matching {
				count += replicas(p, rule.Family, d, capacity)
			}
		case rule.Shared && count > 0:
			// A shared resource is advertised as replicas of each device;
			// how many is configuration the devices do not tell.
			count = maxDevices
		}
		n.Status.Allocatable[r] = *resource.NewQuantity(count, resource.DecimalSI)
	}
	return n
}

// CanonicalPod returns the pod as submitted with the values of its
// node-label requirements on keys the policy knows put into the canonical
// form the legacy view derives (translate.Policy.CanonicalLabelValue).
func CanonicalPod(p *translate.Policy, pod *corev1.Pod) *corev1.Pod {
	out := pod.DeepCopy()
	for k, v := range out.Spec.NodeSelector {
		if p.KnowsLabel(k) {
			out.Spec.NodeSelector[k] = p.CanonicalLabelValue(k, v)
		}
	}
	canon := func(reqs []corev1.NodeSelectorRequirement) {
		for i := range reqs {
			if !p.KnowsLabel(reqs[i].Key) {
				continue
			}
			for j, v := range reqs[i].Values {
				reqs[i].Values[j] = p.CanonicalLabelValue(reqs[i].Key, v)
			}
		}
	}
	if a := out.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for i := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			canon(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i].MatchExpressions)
		}
	}
	return out
}

// RequiredLabelKeys lists the label keys the pod's nodeSelector and
// required node affinity read, sorted.
func RequiredLabelKeys(pod *corev1.Pod) []string {
	set := map[string]bool{}
	for k := range pod.Spec.NodeSelector {
		set[k] = true
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range t.MatchExpressions {
				set[e.Key] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// Labels shows the view's values of the keys, for an explanation: "
// (there: nvidia.com/gpu.count=1)", " (there: no nvidia.com/gpu.product)";
// "" without keys.
func Labels(view *corev1.Node, keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if v, ok := view.Labels[k]; ok {
			parts = append(parts, k+"="+v)
		} else {
			parts = append(parts, "no "+k)
		}
	}
	return " (there: " + strings.Join(parts, ", ") + ")"
}

// replicas is how many replicas of a shared resource a DRA device stands
// for ([celgen.Replicas]): as many as maxDevices where any number of claims
// share it; none for a device that is not shared.
func replicas(p *translate.Policy, family string, d Device, capacity string) int64 {
	memory, _ := p.MemoryCapacity(family)
	switch n, shared := celgen.Replicas(d.Driver, d.Device, capacity, memory, p.MemoryShares(family)); {
	case shared && n == 0:
		return maxDevices
	case shared:
		return n
	}
	return 0
}
