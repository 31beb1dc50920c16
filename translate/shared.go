package translate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/claimbridge/claimbridge/translate/gpulabels"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// Shared devices. A device plugin can advertise one device as several
// (NVIDIA time-slicing and MPS replicas, nvidia.com/gpu.shared; the RDMA
// shared device plugin's rdma/* resources), and pods asking for one of them
// share a device. A DRA claim from a template is one claim per pod: made an
// exclusive device, every shared pod would need a device of its own, so a
// node that served four pods per GPU would serve one. A shared resource is
// therefore translated only as the policy says (ResourceRule.Sharing):
//
//   - ConsumableCapacity: devices that allow multiple allocations (KEP-5075)
//     take several claims, as the replicas did;
//   - ClaimConfig: the claim carries a sharing configuration. The NVIDIA DRA
//     driver (kubernetes-sigs/dra-driver-nvidia-gpu) applies TimeSlicing or
//     MPS from a GpuConfig to the GPUs allocated to that claim, and without
//     its alpha ConsumableShares feature publishes GPUs without
//     allowMultipleAllocations, so the allocator gives a GPU to one claim:
//     the GPU is shared among the containers of the pod, and each pod gets a
//     GPU of its own (warning SharedDevicePerPod).

// sharedUse checks a use of a shared resource. It returns false when the pod
// must stay as submitted.
func (t *translation) sharedUse(u *use) bool {
	r := u.rule
	if !r.Shared {
		return true
	}
	lp := u.path.Child("resources", "limits").Key(string(u.resource))
	switch {
	case r.Sharing != nil && r.Sharing.Mode == v1alpha1.SharingConsumableShares:
		// shares.go: one share per replica, where the devices are shared.
		u.share = true
	case r.Sharing == nil:
		t.add(say(ReasonSharedDeviceNotMapped, lp,
			"%s is a share of a device (time-slicing, MPS or a shared device plugin); as a claim it would be a device of its own, so fewer pods would fit, and the policy does not say how to share it (resources[].sharing)", u.resource))
		return false
	case u.count > 1:
		t.add(say(ReasonSharedDeviceNotMapped, lp,
			"%s %d asks for several shares, which the device plugin may hand out from one device; a claim would need %d distinct devices", u.resource, u.count, u.count))
		return false
	case r.Sharing.Mode == v1alpha1.SharingClaimConfig:
		t.add(say(ReasonSharedDevicePerPod, lp,
			"%s becomes a device of the pod's own claim with the policy's sharing configuration: it is shared only among the pod's containers, and every pod gets a device of its own", u.resource))
	case r.Sharing.Mode == v1alpha1.SharingConsumableCapacity:
		for _, k := range slices.Sorted(maps.Keys(r.Sharing.CapacityRequests)) {
			if u.capacities == nil {
				u.capacities = map[resourceapi.QualifiedName]resource.Quantity{}
			}
			u.capacities[resourceapi.QualifiedName(k)] = r.Sharing.CapacityRequests[k].DeepCopy()
		}
	}
	return true
}

// allowsMultipleAllocations is the selector that keeps a shared resource off
// devices that only one claim can hold.
const allowsMultipleAllocations = "device.allowMultipleAllocations"

// sharedBySelector reports whether the rule's alternatives need the
// allowsMultipleAllocations selector.
func sharedBySelector(r *v1alpha1.ResourceRule) bool {
	return r.Shared && r.Sharing != nil && r.Sharing.Mode == v1alpha1.SharingConsumableCapacity
}

// gkeGPUs reports whether GKE labels the nodes of the family's devices: the
// policy reads GKE's accelerator label for it, or GFD's product label (GKE
// shares NVIDIA GPUs).
func (p *Policy) gkeGPUs(family string) bool {
	for _, r := range p.labels {
		if r.Key == gpulabels.GKEAccelerator && slices.Contains(r.Families, family) {
			return true
		}
	}
	return p.gfdLabels(family)
}

// selectsShared describes how a node-label requirement selects shared GPUs
// of the family ("" when it does not): an In value GPU Feature Discovery
// writes only on nodes whose GPUs are time-sliced or shared by MPS (a
// -SHARED value of the family's GFDProduct label, a sharing strategy,
// replicas > 1, mps.capable=true), or replicas Gt 1 or more; GKE's sharing
// strategy (time-sharing, mps) or more than one client per GPU. GFD's
// sharing labels concern the families GFD labels (those with a GFDProduct
// rule), GKE's those and the families of its accelerator label.
func (p *Policy) selectsShared(family, key string, op corev1.NodeSelectorOperator, values []string) string {
	if _, gke := gpulabels.GKESharingValue(key, ""); gke {
		if !p.gkeGPUs(family) {
			return ""
		}
		for _, v := range values {
			if shared, _ := gpulabels.GKESharingValue(key, v); op == corev1.NodeSelectorOpIn && shared {
				return "GKE writes this value only on node pools whose GPUs are time-shared or shared by MPS"
			}
			if n, err := strconv.Atoi(v); op == corev1.NodeSelectorOpGt && key == gpulabels.GKEMaxSharedClients && err == nil && n >= 1 {
				return "GKE writes more than 1 client per GPU only on node pools whose GPUs are time-shared or shared by MPS"
			}
		}
		return ""
	}
	rule, _, ok := p.labelRule(key, family)
	product := ok && rule.Conversion == v1alpha1.ConvGFDProduct
	if !product && !p.gfdLabels(family) {
		return ""
	}
	switch op {
	case corev1.NodeSelectorOpIn:
		for _, v := range values {
			if product && strings.HasSuffix(v, gpulabels.SharedSuffix) {
				return fmt.Sprintf("GPU Feature Discovery appends %s to the product of time-sliced or MPS GPUs", gpulabels.SharedSuffix)
			}
			if shared, _ := gpulabels.SharingValue(key, v); shared {
				return "GPU Feature Discovery writes this value only on nodes whose GPUs are time-sliced or shared by MPS"
			}
		}
	case corev1.NodeSelectorOpGt:
		if _, known := gpulabels.SharingValue(key, ""); known && strings.HasSuffix(key, gpulabels.ReplicasSuffix) && len(values) == 1 {
			if n, err := strconv.Atoi(values[0]); err == nil && n >= 1 {
				return "GPU Feature Discovery writes more than 1 replica only on nodes whose GPUs are time-sliced or shared by MPS"
			}
		}
	}
	return ""
}

// sharedProductIntent checks the pod's node-label requirements for GPU
// Feature Discovery's and GKE's marks of shared GPUs (selectsShared): a
// product value that ends in -SHARED, a sharing strategy, replicas above 1,
// mps.capable; GKE's time-sharing or MPS strategy, more than one client per
// GPU.
// Translating such a label away (or leaving it on a pod that gets a GPU of
// its own) would give the pod a GPU of its own. Unless every use of the
// family is a shared resource the policy maps, the pod stays as submitted. It runs before the
// labels are converted (which drop the suffix). It returns false to keep
// the pod.
func (t *translation) sharedProductIntent() bool {
	// The field path is made only for a reason that names it.
	check := func(key string, op corev1.NodeSelectorOperator, values []string, loc reqLoc) bool {
		req := labelReq{key: key, op: op, values: values}
		for _, f := range t.sortedFamilies() {
			why := t.p.selectsShared(f, key, op, values)
			if why == "" {
				continue
			}
			if t.familyByShares(f) {
				if mps := gpulabels.SelectsMPS(key, op, values); mps != "" {
					t.add(say(ReasonSharedMPSNotMapped, loc.fieldPath(),
						"%s selects GPUs shared by MPS (%s): the device plugin runs one MPS control daemon per GPU and caps each of its clients at a part of the GPU's threads and memory; "+
							"the NVIDIA DRA driver runs MPS only for the containers of one claim (GpuConfig sharing strategy MPS: one daemon per claim, and a template gives every pod a claim of its own), "+
							"refuses MPS on devices with consumable shares, and its shares time-slice the GPU without those limits", req, mps))
					return false
				}
				// A time-sliced GPU asked for under the plain resource
				// name: every device use of the family is a share.
				for _, u := range t.uses {
					if u.rule.Family == f {
						u.share = true
					}
				}
				continue
			}
			if t.familyShared(f) {
				continue
			}
			t.add(say(ReasonSharedDeviceNotMapped, loc.fieldPath(),
				"%s selects a shared GPU (%s); as a claim the pod would get a GPU of its own, so fewer pods would fit", req, why))
			return false
		}
		return true
	}
	// The nodeSelector, then the required terms, then the preferred ones.
	for _, r := range t.requiredLabelReqs() {
		if !check(r.key, r.op, r.values, r.loc) {
			return false
		}
	}
	a := t.pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil {
		return true
	}
	for i, pt := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		for j, e := range pt.Preference.MatchExpressions {
			if !check(e.Key, e.Operator, e.Values, reqLoc{kind: locPreferred, term: i, expr: j}) {
				return false
			}
		}
	}
	return true
}

// familyByShares: the family's shares are consumable shares (it has a
// shared resource of sharing mode ConsumableShares), and every use of the
// family is either such a share or a device count that selecting shared
// GPUs makes one (not a share the policy translates otherwise).
func (t *translation) familyByShares(family string) bool {
	if t.p.sharesRule(family) == nil {
		return false
	}
	for _, u := range t.uses {
		if u.rule.Family != family {
			continue
		}
		if u.rule.Shared && !u.share {
			return false
		}
	}
	return true
}

// gfdLabels reports whether GPU Feature Discovery labels the nodes of the
// family's devices: the policy reads a GFD product label for it.
func (p *Policy) gfdLabels(family string) bool {
	for _, r := range p.labels {
		if r.Conversion == v1alpha1.ConvGFDProduct && slices.Contains(r.Families, family) {
			return true
		}
	}
	return false
}

// familyShared: every use of the family is a shared resource the policy
// maps with a sharing mode.
func (t *translation) familyShared(family string) bool {
	found := false
	for _, u := range t.uses {
		if u.rule.Family != family {
			continue
		}
		if !u.rule.Shared || u.rule.Sharing == nil {
			return false
		}
		found = true
	}
	return found
}

// SharingShown says what in a pod shows that the cluster shares devices
// among pods, by family: a shared resource it asks for
// (nvidia.com/gpu.shared, the RDMA shared device plugin's), or a node-label
// requirement that selects shared GPUs (selectsShared: a -SHARED product,
// GFD's or GKE's sharing strategy, replicas or clients per GPU above 1).
// The offline tools read it over every pod of their input: where sharing
// shows, a plain request of the family may be for a share too.
func (p *Policy) SharingShown(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	note := func(family, what string) {
		if _, ok := out[family]; !ok {
			out[family] = what
		}
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, rl := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
				for _, n := range slices.Sorted(maps.Keys(rl)) {
					if r, _, ok := p.resourceRule(string(n)); ok && sharedDevice(r) {
						note(r.Family, fmt.Sprintf("a container asks for %s, a share of a device", n))
					}
				}
			}
		}
	}
	for _, r := range requiredReqsOf(pod) {
		for _, f := range p.Families() {
			if why := p.selectsShared(f, r.key, r.op, r.values); why != "" {
				note(f, fmt.Sprintf("the pod selects %s (%s)", r, why))
			}
		}
	}
	return out
}

// SharingConfigured says, by family, what in the policy says the site
// shares devices of that family: consumableShares, or a rule that says how
// a shared resource is shared under DRA (resources[].sharing) other than
// the built-in ConsumableShares.
func (p *Policy) SharingConfigured() map[string]string {
	out := map[string]string{}
	for _, r := range p.spec.ConsumableShares {
		for _, f := range r.Families {
			if _, ok := out[f]; !ok {
				out[f] = fmt.Sprintf("the policy says the DRA devices of %s will be shared (consumableShares)", f)
			}
		}
	}
	for _, r := range p.spec.Resources {
		// The nvidia profile's ConsumableShares rule says how a share
		// translates, not that the site shares devices.
		if r.Sharing != nil && r.Sharing.Mode != v1alpha1.SharingConsumableShares {
			if _, ok := out[r.Family]; !ok {
				out[r.Family] = fmt.Sprintf("the policy says how %s is shared (resources[].sharing: %s)", r.Name, r.Sharing.Mode)
			}
		}
	}
	return out
}

// ResourceFamily is the family of the policy's rule for an extended
// resource, and whether the resource is a share of a device; ok is false
// when no rule maps it.
func (p *Policy) ResourceFamily(name corev1.ResourceName) (family string, shared, ok bool) {
	r, _, ok := p.resourceRule(string(name))
	if !ok {
		return "", false, false
	}
	return r.Family, sharedDevice(r), true
}
