package feasibility

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/claimbridge/claimbridge/feasibility/signature"
	"github.com/claimbridge/claimbridge/translate"
)

// The legacy view of a DRA node: what the device plugins and GPU Feature
// Discovery, Node Feature Discovery or GKE would have shown on it, derived
// from the devices it publishes with the policy's vocabulary read backwards
// (translate.Policy.LegacyLabel, LegacyResource). Labels the node really
// carries win over derived ones.

// nodeDevices answers which of a node's devices match a DeviceClass and
// selectors, evaluating each selector once per device.
type nodeDevices struct {
	ctx  context.Context
	cc   *cel.Cache
	snap *Snapshot
	ni   *nodeInfo
	// family devices, memoised
	rules  map[string][]translate.DeviceRule
	family map[string][]translate.LegacyDevice
}

func newNodeDevices(ctx context.Context, cc *cel.Cache, snap *Snapshot, ni *nodeInfo, rules map[string][]translate.DeviceRule) *nodeDevices {
	return &nodeDevices{ctx: ctx, cc: cc, snap: snap, ni: ni, rules: rules, family: map[string][]translate.LegacyDevice{}}
}

// matching returns the node's devices of the class that pass the selectors,
// in (device name, driver) order. A selector that cannot be evaluated on a
// device does not match it.
func (nd *nodeDevices) matching(className string, selectors []string) []*deviceRef {
	if _, ok := nd.snap.classes[className]; !ok {
		return nil
	}
	var out []*deviceRef
	for i := range nd.ni.devices {
		d := &nd.ni.devices[i]
		if deviceMatches(nd.ctx, nd.cc, nd.snap, d, className, selectors) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b *deviceRef) int {
		if c := strings.Compare(a.device.Name, b.device.Name); c != 0 {
			return c
		}
		return strings.Compare(a.driver, b.driver)
	})
	return out
}

// deviceMatches reports whether the device passes the class's selectors and
// these. A selector that cannot be evaluated on the device does not match
// it; a class the snapshot does not have matches nothing.
func deviceMatches(ctx context.Context, cc *cel.Cache, snap *Snapshot, d *deviceRef, className string, selectors []string) bool {
	class, ok := snap.classes[className]
	if !ok {
		return false
	}
	m := snap.selectorMemo()
	sd := d.sig()
	for _, s := range class.Spec.Selectors {
		if s.CEL != nil && m.Expr(cc, s.CEL.Expression).Match(ctx, m, sd) != signature.MatchYes {
			return false
		}
	}
	for _, e := range selectors {
		if m.Expr(cc, e).Match(ctx, m, sd) != signature.MatchYes {
			return false
		}
	}
	return true
}

// devicesOf is a translate.FamilyDevices over this node.
func (nd *nodeDevices) devicesOf(family string) []translate.LegacyDevice {
	if ds, ok := nd.family[family]; ok {
		return ds
	}
	seen := map[*resourceapi.Device]bool{}
	var refs []*deviceRef
	for _, r := range nd.rules[family] {
		for _, d := range nd.matching(r.DeviceClassName, r.Selectors) {
			if !seen[d.device] {
				seen[d.device] = true
				refs = append(refs, d)
			}
		}
	}
	slices.SortFunc(refs, func(a, b *deviceRef) int {
		if c := strings.Compare(a.device.Name, b.device.Name); c != 0 {
			return c
		}
		return strings.Compare(a.driver, b.driver)
	})
	out := make([]translate.LegacyDevice, 0, len(refs))
	for _, d := range refs {
		out = append(out, translate.LegacyDevice{Name: d.device.Name, Driver: d.driver, Attributes: d.device.Attributes, Capacity: d.device.Capacity,
			AllowMultipleAllocations: d.device.AllowMultipleAllocations != nil && *d.device.AllowMultipleAllocations})
	}
	nd.family[family] = out
	return out
}

// legacyNode is the node as a legacy pod would see it: the real labels,
// canonicalised, with the derived labels the pod asks about added where the
// node does not carry them, and the derived extended resources the pod asks
// for in its allocatable (the node's own for resources the policy does not
// map). strategy, when set, is the MIG strategy the device plugin is taken
// to have run with on a node that does not say
// (translate.Policy.LegacyMIGStrategies): the derived labels and resources
// are those of that strategy. podSelectors are what the device plugin's
// scheduler adds for the pod to a resource's devices
// (translate.Policy.LegacyDeviceSelectors: HAMi's card types): only the
// devices that pass them count. sh says which families the pod asks for as
// shares (translate.Policy.LegacyShares): their resources count the shares
// of the node's shared devices, as the device plugin advertises a
// time-sliced GPU once per replica, and GFD marks the product of such GPUs
// where the pod asks for them under the plain resource name.
func legacyNode(p *translate.Policy, nd *nodeDevices, keys []string, resources []corev1.ResourceName, strategy string, podSelectors map[corev1.ResourceName][]string, sh podShares) *corev1.Node {
	real := nd.ni.node
	labels := real.Labels
	if key := p.MIGStrategyLabel(); strategy != "" && key != "" {
		if _, ok := labels[key]; !ok {
			labels = maps.Clone(labels)
			if labels == nil {
				labels = map[string]string{}
			}
			labels[key] = strategy
		}
	}
	n := &corev1.Node{ObjectMeta: *real.ObjectMeta.DeepCopy(), Spec: real.Spec}
	n.Labels = make(map[string]string, len(real.Labels)+len(keys))
	for k, v := range real.Labels {
		if p.KnowsLabel(k) {
			v = p.CanonicalLabelValue(k, v)
		}
		n.Labels[k] = v
	}
	for _, k := range keys {
		if _, ok := n.Labels[k]; ok {
			continue
		}
		if v, ok := p.LegacyLabelOfShares(k, labels, nd.devicesOf, sh.plain); ok {
			n.Labels[k] = v
		}
	}
	n.Status.Allocatable = maps.Clone(real.Status.Allocatable)
	if n.Status.Allocatable == nil {
		n.Status.Allocatable = corev1.ResourceList{}
	}
	for _, r := range resources {
		rule, ok := p.LegacyResource(r, labels)
		if !ok {
			continue
		}
		selectors := rule.Selectors
		if extra := podSelectors[r]; len(extra) > 0 {
			selectors = append(slices.Clone(selectors), extra...)
		}
		devs := nd.matching(rule.DeviceClassName, selectors)
		count := int64(len(devs))
		capacity, counted := p.ShareCapacity(rule.Family)
		switch {
		case sh.shares[rule.Family] && counted:
			// One replica per share of each shared device; a device that
			// is not shared offers none.
			count = 0
			for _, d := range devs {
				if n, ok := translate.DeviceShares(d.driver, d.device, capacity); ok {
					count += n
				}
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

// podShares are the families a pod asks for as shares, and those of them
// it asks for under the plain resource name (translate.Policy.LegacyShares).
type podShares struct{ shares, plain map[string]bool }

// maxDevices stands for "as many as asked" where the legacy view cannot
// count.
const maxDevices = 1 << 20

// canonicalLegacyPod returns the legacy pod with the values of its
// node-label requirements on keys the policy knows put into the canonical
// form the legacy view derives (translate.Policy.CanonicalLabelValue).
func canonicalLegacyPod(p *translate.Policy, pod *corev1.Pod) *corev1.Pod {
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

// requiredLabelKeys lists the label keys the pod's nodeSelector and
// required node affinity read, sorted.
func requiredLabelKeys(pod *corev1.Pod) []string {
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

// hardware describes a node's devices in a few words for explanations:
// "8× NVIDIA H100 80GB HBM3, 8× dra.net NIC".
func hardware(ni *nodeInfo) string {
	counts := map[string]int{}
	var order []string
	for _, d := range ni.devices {
		desc := describeDevice(d)
		if counts[desc] == 0 {
			order = append(order, desc)
		}
		counts[desc]++
	}
	// Whole devices first, then partitions (MIG slices).
	slices.SortStableFunc(order, func(a, b string) int {
		return boolInt(strings.HasPrefix(a, "MIG ")) - boolInt(strings.HasPrefix(b, "MIG "))
	})
	parts := make([]string, 0, len(order))
	for _, desc := range order {
		parts = append(parts, fmt.Sprintf("%d× %s", counts[desc], desc))
	}
	return strings.Join(parts, ", ")
}

func describeDevice(d deviceRef) string {
	get := func(id string) string {
		for _, name := range []resourceapi.QualifiedName{resourceapi.QualifiedName(id), resourceapi.QualifiedName(d.driver + "/" + id)} {
			if a, ok := d.device.Attributes[name]; ok && a.StringValue != nil {
				return *a.StringValue
			}
		}
		return ""
	}
	name := ""
	for _, id := range []string{"productName", "model", "accelerator", "pciDevice"} {
		if v := get(id); v != "" {
			name = v
			break
		}
	}
	if name == "" {
		name = d.driver + " device"
	}
	if p := get("profile"); p != "" {
		name = "MIG " + p
	}
	if t := get("topology"); t != "" {
		name += " " + t
	}
	return name
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
