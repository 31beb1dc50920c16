package translate

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/translate/celgen"
	"github.com/claimbridge/claimbridge/translate/gpulabels"
)

// Consumable shares. A device plugin that time-slices a GPU advertises it N
// times (the NVIDIA device plugin's sharing.timeSlicing replicas: N), and N
// pods share it. The DRA equivalent is a device that allows multiple
// allocations and publishes a capacity of N shares, of which each claim
// consumes a part (KEP-5075, DRAConsumableCapacity; the NVIDIA DRA driver
// v0.5 with its ConsumableShares feature and --consumable-shares=N). The
// policy names that capacity per family (shareCapacities) and which shared
// resources become shares (sharing mode ConsumableShares); whether the
// devices of the target cluster are shared is the fleet's to say (their
// devices publish the capacity: Input.Shares), or, without a fleet, the
// policy's (consumableShares).
//
// Nothing becomes exclusive, and nothing exclusive becomes shared, without
// saying so:
//
//   - a share asks for one share (capacity.requests: {shares: 1}) of a
//     device that publishes the capacity: on a device that does not, the
//     allocator finds the request unsatisfiable, and the selector keeps
//     the request off it anyway, so a share never takes a whole device;
//   - where devices of a family are shared, a request without a capacity
//     would take one share of them (the device's default request): a
//     request for whole devices instead keeps to devices that allow one
//     allocation, with one alternative per share count N for the shared
//     devices that asks for all N shares of a device with exactly N
//     (exclusive);
//   - where nothing says the devices are shared, a share stays as
//     submitted (SharesUnavailable), with what is missing.

// shareCapacity is the family's share capacity ("<domain>/<name>"), the last
// rule's that names the family.
func (p *Policy) shareCapacity(family string) (celgen.Attr, bool) {
	for i := len(p.spec.ShareCapacities) - 1; i >= 0; i-- {
		r := &p.spec.ShareCapacities[i]
		if slices.Contains(r.Families, family) {
			return celgen.SplitAttr(r.Capacity), true
		}
	}
	return celgen.Attr{}, false
}

// ShareCapacity is the capacity ("<domain>/<name>") by which the devices of
// the family count their shares (PolicySpec.ShareCapacities); ok is false
// when the policy names none.
func (p *Policy) ShareCapacity(family string) (string, bool) {
	a, ok := p.shareCapacity(family)
	if !ok {
		return "", false
	}
	return a.Domain + "/" + a.ID, true
}

// MemoryCapacity is the capacity ("<domain>/<name>") that holds the memory
// of the family's devices, by which devices that publish no share count
// are shared (ShareCapacityRule.Memory); ok is false when the policy names
// none.
func (p *Policy) MemoryCapacity(family string) (string, bool) {
	for i := len(p.spec.ShareCapacities) - 1; i >= 0; i-- {
		if r := &p.spec.ShareCapacities[i]; slices.Contains(r.Families, family) {
			return r.Memory, r.Memory != ""
		}
	}
	return "", false
}

// MemoryShares is how many claims share one of the family's devices shared
// by memory (PolicySpec.MemoryShares), 0 when the policy does not say.
func (p *Policy) MemoryShares(family string) int64 {
	for _, r := range p.spec.MemoryShares {
		if slices.Contains(r.Families, family) {
			return r.Shares
		}
	}
	return 0
}

// consumableShares are the share counts the policy says the family's
// devices will publish (PolicySpec.ConsumableShares), sorted.
func (p *Policy) consumableShares(family string) []int64 {
	var out []int64
	for _, r := range p.spec.ConsumableShares {
		if slices.Contains(r.Families, family) {
			out = append(out, r.Shares...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// shareCounts are the share counts of the family's shared devices in the
// target cluster, sorted (none when they are not shared), and what says so.
func (t *translation) shareCounts(family string) (counts []int64, from string) {
	counts, from = t.sharedCounts(family)
	return slices.DeleteFunc(slices.Clone(counts), func(n int64) bool { return n < 1 }), from
}

// sharedCounts are shareCounts with 0 for the fleet's devices of the family
// that any number of claims share for nothing (Input.Shares,
// celgen.SharedForNothing): none of them has shares to take.
func (t *translation) sharedCounts(family string) (counts []int64, from string) {
	if _, ok := t.p.shareCapacity(family); !ok {
		return nil, ""
	}
	if t.in.Shares != nil {
		return t.in.Shares[family], "the fleet's devices"
	}
	return t.p.consumableShares(family), "the policy (consumableShares)"
}

// familyOfClass is the family of the first rule that requests from the
// class; def when none does.
func (p *Policy) familyOfClass(class, def string) string {
	for _, r := range p.spec.Resources {
		if r.DeviceClassName == class && r.Family == def {
			return def
		}
	}
	for _, r := range p.spec.Resources {
		if r.DeviceClassName == class && r.CapacityOf == "" {
			return r.Family
		}
	}
	return def
}

// sharesRule is the family's shared resource rule of sharing mode
// ConsumableShares, nil when it has none.
func (p *Policy) sharesRule(family string) *v1alpha1.ResourceRule {
	for i := range p.spec.Resources {
		r := &p.spec.Resources[i]
		if r.Family == family && r.Shared && r.Sharing != nil && r.Sharing.Mode == v1alpha1.SharingConsumableShares {
			if eff, _, ok := p.resourceRule(r.Name); ok && eff == r {
				return r
			}
		}
	}
	return nil
}

// sharesAvailable keeps the pod as submitted when one of its shares asks
// for devices that nothing says are shared: the fleet's devices of the
// family publish no share capacity, or, without a fleet, the policy does
// not say they will. One reason per family.
func (t *translation) sharesAvailable() bool {
	said := map[string]bool{}
	for _, u := range t.uses {
		f := u.rule.Family
		if !u.share || said[f] {
			continue
		}
		if counts, _ := t.shareCounts(f); len(counts) > 0 || t.memoryServes(f) {
			continue
		}
		said[f] = true
		capacity, _ := t.p.ShareCapacity(f)
		what := fmt.Sprintf("no DRA device of %s in the fleet publishes a %s capacity (consumable shares)%s", f, capacity, t.memoryUnavailable(f))
		if t.in.Shares == nil {
			what = fmt.Sprintf("with no fleet to look at, the policy does not say the DRA devices of %s will be shared (consumableShares)", f)
		}
		t.add(say(ReasonSharesUnavailable, u.path.Child("resources", "limits").Key(string(u.resource)),
			"%s asks for %s of a time-sliced GPU, which a claim takes only from a device several claims share, and %s",
			u.cname, shareWords(u.resource, u.count), what))
	}
	return len(said) == 0
}

// shareWords is "1 share (nvidia.com/gpu.shared)" or "2 shares
// (nvidia.com/gpu)".
func shareWords(res corev1.ResourceName, n int64) string {
	if n == 1 {
		return fmt.Sprintf("1 share (%s)", res)
	}
	return fmt.Sprintf("%d shares (%s)", n, res)
}

// shares turns the requests of share uses into shares: every alternative
// asks for count devices of the family's share capacity with one share of
// each, on devices that publish it. An alternative on a class of another
// family (a fallback, a MIG product) of whose shares nothing is known is
// dropped when optional, and keeps the pod as submitted otherwise. Several
// shares in one container become shares of as many distinct devices
// (SharesOnDistinctDevices). It runs after buildRequests and returns false
// when the pod is kept.
func (t *translation) shares() bool {
	for _, r := range t.requests {
		u := r.use
		if !u.share {
			continue
		}
		var kept []*alt
		for _, a := range r.alts {
			f := t.p.familyOfClass(a.class, u.rule.Family)
			capacity, ok := t.p.shareCapacity(f)
			counts, _ := t.shareCounts(f)
			byMemory := t.memoryShares(a, f)
			if !ok || len(counts) == 0 && len(byMemory) == 0 {
				if a.optional {
					continue
				}
				t.add(say(ReasonSharesUnavailable, u.path.Child("resources", "limits").Key(string(u.resource)),
					"%s asks for %s, and its alternative on DeviceClass %s is of devices (%s) that nothing says are shared: as a claim it would take a whole device", u.cname, shareWords(u.resource, u.count), a.class, f))
				return false
			}
			if len(counts) > 0 {
				if sel := celgen.ShareSelector(capacity); !slices.ContainsFunc(a.selectors, func(s string) bool { return strings.HasPrefix(s, sel) }) {
					a.selectors = append(a.selectors, sel)
				}
				a.shareCap, a.shares = capacity.ID, 1
				kept = append(kept, a)
			}
			kept = append(kept, byMemory...)
		}
		r.alts = kept
		if u.count > 1 {
			t.add(say(ReasonSharesOnDistinctDevices, u.path.Child("resources", "limits").Key(string(u.resource)),
				"%s asks for %s: the device plugin hands out replicas and may give one container several of the same GPU (it spreads them when it can), while a claim never takes one device twice: the claim asks for one share of each of %d distinct devices, so it fits only where %d shared devices have a share free",
				u.cname, shareWords(u.resource, u.count), u.count, u.count))
		}
	}
	return true
}

// exclusive keeps requests for whole devices whole where the devices of
// their family are shared: each alternative keeps to devices that allow
// one allocation and gets, for each share count N of the family's shared
// devices, a variant that takes all N shares of a device with exactly N.
// It runs after partition, so that the variants of alignment and
// partitions get theirs.
func (t *translation) exclusive() {
	for _, r := range t.requests {
		u := r.use
		if u.share || u.rule.Capacity != "" {
			continue
		}
		var alts []*alt
		var said []string
		whole := false
		for _, a := range r.alts {
			f := t.p.familyOfClass(a.class, u.rule.Family)
			capacity, ok := t.p.shareCapacity(f)
			counts, from := t.sharedCounts(f)
			if !ok || len(counts) == 0 {
				alts = append(alts, a)
				continue
			}
			a.selectors = append(a.selectors, celgen.ExclusiveSelector)
			alts = append(alts, a)
			// Where the pod as submitted cannot run on shared GPUs, its
			// translation takes none.
			admits := t.p.admitsShared(f, a.labels)
			if v := t.memoryWhole(a, f); v != nil && admits {
				alts, whole = append(alts, t.variant(r, a, v)), true
			}
			for _, n := range counts {
				if n < 1 || !admits || slices.Contains(t.in.Renamed[f], n) {
					continue // shared for nothing (no shares to take all of), or no place today
				}
				whole = true
				v := *a
				v.selectors = append(slices.Clone(a.selectors[:len(a.selectors)-1]), celgen.SharesOf(capacity, n))
				v.shareCap, v.shares = capacity.ID, n
				alts = append(alts, t.variant(r, a, &v))
			}
			if positive := slices.DeleteFunc(slices.Clone(counts), func(n int64) bool { return n < 1 }); len(positive) > 0 {
				said = appendNew(said, fmt.Sprintf("devices of %s are shared %s ways (%s)", f, countList(positive), from))
			}
			if slices.Contains(counts, 0) {
				said = appendNew(said, fmt.Sprintf("devices of %s are shared by any number of claims that ask for no capacity (%s: multiple allocations, no shares capacity, nothing requested by default)", f, from))
			}
		}
		r.alts = alts
		if len(said) > 0 {
			takes := "or all the shares of shared ones"
			if !whole {
				takes = "not shared ones: as submitted the pod runs on no shared GPU (its node selection excludes GPU Feature Discovery's labels of GPUs shared under " + string(u.resource) + ", or the nodes of the shared ones rename it)"
			}
			t.add(say(ReasonWholeDeviceOnShares, u.path.Child("resources", "limits").Key(string(u.resource)),
				"%s asks for whole devices, and %s: without a capacity request a claim would take one share of a shared device, so request %s takes devices that allow one allocation, %s",
				u.cname, strings.Join(said, ", "), requestLabel(r), takes))
		}
	}
}

// admitsShared: the node-label requirements an alternative was made for,
// preferred ones aside, admit a node whose device plugin shares the
// family's GPUs under the plain resource name, as GPU Feature Discovery
// labels it (gpulabels.AdmitsShared): a -SHARED product, replicas above 1.
func (p *Policy) admitsShared(family string, reqs []*labelReq) bool {
	return !slices.ContainsFunc(reqs, func(r *labelReq) bool {
		rule, _, ok := p.labelRule(r.key, family)
		return ok && r.loc.kind != locPreferred && !gpulabels.AdmitsShared(rule.Conversion, r.op, r.values)
	})
}

// SharesRenamed reports whether a node's labels say that its device plugin
// offers the family's shared GPUs only under a renamed resource
// (renameByDefault: nvidia.com/gpu.shared), never under the plain one: GPU
// Feature Discovery's labels say they are shared (replicas above 1, a
// sharing strategy), and its product has no -SHARED, which GFD appends only
// where the resource keeps its name (gpulabels.SharedSuffix).
func (p *Policy) SharesRenamed(family string, labels map[string]string) bool {
	shared, plain, marked := false, false, false
	for k, v := range labels {
		switch rule, _, ok := p.labelRule(k, family); {
		case ok && rule.Conversion == v1alpha1.ConvGFDProduct:
			marked, plain = marked || strings.HasSuffix(v, gpulabels.SharedSuffix), plain || !strings.HasSuffix(v, gpulabels.SharedSuffix)
		case ok && (rule.Conversion == v1alpha1.ConvReplicas || rule.Conversion == v1alpha1.ConvSharingStrategy):
			shared = shared || gpulabels.AdmitsShared(rule.Conversion, corev1.NodeSelectorOpIn, []string{v})
		}
	}
	return shared && plain && !marked
}

// variant returns v, a variant of request r's alternative a, after adding
// it to the alignment constraints a is in.
func (t *translation) variant(r *request, a, v *alt) *alt {
	for _, c := range t.constraints {
		if c.variantOf == r && slices.Contains(c.variants, a) {
			c.variants = append(c.variants, v)
		}
	}
	return v
}

// countList writes counts as "4" or "2, 4 or 8".
func countList(counts []int64) string {
	return sizeList(counts)
}

// altCapacities are the capacity requests of an alternative's shares, nil
// for none.
func altCapacities(a *alt) map[resourceapi.QualifiedName]resource.Quantity {
	if a.shares == 0 {
		return nil
	}
	format := resource.DecimalSI
	if a.memory {
		format = resource.BinarySI
	}
	return map[resourceapi.QualifiedName]resource.Quantity{resourceapi.QualifiedName(a.shareCap): *resource.NewQuantity(a.shares, format)}
}

// hasShares: an alternative of the request asks for shares.
func (r *request) hasShares() bool {
	return slices.ContainsFunc(r.alts, func(a *alt) bool { return a.shares > 0 })
}

// readsSharing: an alternative of the request asks for shares or selects
// devices by whether they are shared, which only an allocator with
// consumable capacity can evaluate.
func (r *request) readsSharing() bool {
	return slices.ContainsFunc(r.alts, func(a *alt) bool {
		return a.shares > 0 || slices.ContainsFunc(a.selectors, func(s string) bool { return strings.Contains(s, "device.allowMultipleAllocations") })
	})
}

// LegacyShares says which device families a pod asks for as shares, as
// translation reads it (the placement check's legacy view counts those
// resources in shares, a shared device's replicas): shares holds the
// families of the shared resources it asks for (sharing mode
// ConsumableShares) and of its plain ones when it selects shared GPUs by
// node label; plain those it asks for under the plain resource name
// (nvidia.com/gpu), which the device plugin offers of a shared GPU only
// without renaming: GFD then marks the product -SHARED.
func (p *Policy) LegacyShares(pod *corev1.Pod) (shares, plain map[string]bool) {
	shares, plain = map[string]bool{}, map[string]bool{}
	byLabel := map[string]bool{}
	for _, r := range requiredReqsOf(pod) {
		for _, f := range p.Families() {
			if p.sharesRule(f) != nil && p.selectsShared(f, r.key, r.op, r.values) != "" {
				byLabel[f] = true
			}
		}
	}
	for _, n := range podfacts.ResourceNames(pod) {
		rule, _, ok := p.resourceRule(string(n))
		if !ok || rule.CapacityOf != "" || len(rule.OnlyWith) > 0 {
			continue
		}
		switch {
		case rule.Shared && rule.Sharing != nil && rule.Sharing.Mode == v1alpha1.SharingConsumableShares:
			shares[rule.Family] = true
		case !rule.Shared:
			shares[rule.Family], plain[rule.Family] = shares[rule.Family] || byLabel[rule.Family], true
		}
	}
	return shares, plain
}
