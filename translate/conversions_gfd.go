package translate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/claimbridge/claimbridge/translate/gpulabels"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// The conversions of GPU Feature Discovery's and GKE's GPU labels
// (vocabulary.go): product names, memory in MiB, architecture families and
// MIG partitions.

// familyOfMIGRule is the family whose requests already use the MIG class.
func familyOfMIGRule(p *Policy, rule *v1alpha1.NodeLabelRule) string {
	for _, r := range p.spec.Resources {
		if r.DeviceClassName == rule.MIGDeviceClassName {
			return r.Family
		}
	}
	return ""
}

// forwardGFDProduct compares a GFD product label (spaces as dashes, an
// optional -MIG-<profile> suffix of the single strategy) with productName.
func forwardGFDProduct(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
	a := celgen.SplitAttr(rule.Attribute)
	switch req.op {
	case corev1.NodeSelectorOpExists:
		return effect{implied: true}, nil
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
	default:
		return effect{}, notTranslatable("%s: operator %s on a product name", req.key, req.op)
	}
	var products, profiles []string
	for _, v := range req.values {
		if req.op == corev1.NodeSelectorOpNotIn && strings.HasSuffix(v, "-SHARED") {
			// A shared (time-sliced) product is a device-plugin setting no
			// DRA device has: "not a shared T4" holds on every device.
			continue
		}
		prod, prof := gpulabels.ParseProduct(v)
		if !slices.Contains(products, prod) {
			products = append(products, prod)
		}
		// GFD writes the profile as the device plugin names the resource
		// (1g.10gb.me); the driver's profile attribute is 1g.10gb+me.
		prof = gpulabels.MIGProfileOfGFD(prof)
		if !slices.Contains(profiles, prof) {
			profiles = append(profiles, prof)
		}
	}
	if len(products) == 0 {
		return effect{implied: true}, nil
	}
	// GFD joins the words of the NVML name with dashes; dashes inside the
	// name stay, so compare in the label's form.
	pred, err := celgen.StringIn(a.Ref()+`.replace(" ", "-")`, products)
	if err != nil {
		return effect{}, notTranslatable("%s: %v", req.key, err)
	}
	eff := effect{selectors: []string{celgen.Guarded(a.Guard(), pred, req.op == corev1.NodeSelectorOpNotIn)}}
	switch {
	case len(profiles) == 1 && profiles[0] == "":
		return eff, nil
	case req.op == corev1.NodeSelectorOpNotIn || len(profiles) > 1:
		return effect{}, notTranslatable("%s mixes MIG and full-GPU products or negates a MIG product", req)
	case rule.MIGDeviceClassName == "":
		return effect{}, notTranslatable("%s names a MIG slice, and the policy names no MIG class", req)
	}
	prof := celgen.SplitAttr(rule.MIGProfileAttribute)
	profPred, err := celgen.StringIn(prof.Ref(), profiles)
	if err != nil {
		return effect{}, notTranslatable("%s: %v", req.key, err)
	}
	eff.selectors = append(eff.selectors, celgen.Guarded(prof.Guard(), profPred, false))
	eff.class = rule.MIGDeviceClassName
	return eff, nil
}

// backwardGFDProduct is GFD's product label of the node's first GPU. Under
// the single MIG strategy (the node's nvidia.com/mig.strategy, see
// [Policy.LegacyMIGStrategies]) GFD names the slice the resource is:
// "<product>-MIG-<profile>" on a node whose GPUs are all MIG with one
// profile (NVIDIA/k8s-device-plugin internal/lm/mig-strategy.go,
// newMigStrategySingleLabeler; the profile as the device plugin spells it,
// "+" as "."), "<product>-MIG-INVALID" on a node with MIG devices in any
// other layout. For a pod that asks for shares of the family under its
// plain resource name (time-slicing without renaming), a shared GPU's
// product ends in -SHARED, as GFD writes it.
func backwardGFDProduct(p *Policy, rule *v1alpha1.NodeLabelRule, _ string, n legacyNode) (string, bool) {
	if p.migStrategy(n) == migSingle {
		migs, profile, invalid := p.singleMIGLayout(rule.Families, n)
		if len(migs) > 0 || invalid {
			name, ok := firstProduct(rule.Attribute, migs)
			if !ok {
				name, ok = firstProduct(rule.Attribute, p.fullDevices(rule.Families, n))
			}
			if !ok {
				return "", false
			}
			if invalid {
				return gpulabels.Sanitise(name) + "-MIG-INVALID", true
			}
			return gpulabels.Sanitise(name) + "-MIG-" + gpulabels.Sanitise(gpulabels.GFDProfileOfMIG(profile)), true
		}
	}
	for _, f := range rule.Families {
		if ds := n.devices(f); len(ds) > 0 {
			a, ok := ds[0].attribute(rule.Attribute)
			if !ok || a.StringValue == nil {
				return "", false
			}
			// GFD marks time-sliced GPUs when the device plugin advertises
			// them under the plain resource name (not renamed).
			if _, shared := p.replicas(ds[0], f); shared && n.plainShares[f] {
				return gpulabels.Sanitise(*a.StringValue) + gpulabels.SharedSuffix, true
			}
			return gpulabels.Sanitise(*a.StringValue), true
		}
	}
	return "", false
}

// firstProduct is the attribute's string value on the first device.
func firstProduct(attr string, devices []LegacyDevice) (string, bool) {
	if len(devices) == 0 {
		return "", false
	}
	a, ok := devices[0].attribute(attr)
	if !ok || a.StringValue == nil {
		return "", false
	}
	return *a.StringValue, true
}

// MIG strategies of the NVIDIA device plugin and GFD.
const (
	migSingle = "single"
	migMixed  = "mixed"
)

// migStrategyRule is the policy's rule for GFD's MIG strategy label
// (nvidia.com/mig.strategy); nil when it has none.
func (p *Policy) migStrategyRule() *v1alpha1.NodeLabelRule {
	for _, r := range p.labels {
		if r.Conversion == v1alpha1.ConvMIGStrategy && !strings.Contains(r.Key, "*") {
			return r
		}
	}
	return nil
}

// migStrategy is the MIG strategy the node's labels give, "" when they give
// none.
func (p *Policy) migStrategy(n legacyNode) string {
	if r := p.migStrategyRule(); r != nil {
		return n.labels[r.Key]
	}
	return ""
}

// migFamily is the family whose devices are MIG slices (the family of the
// resource rule of the MIG strategy rule's DeviceClass), and the attribute
// that holds their profile.
func (p *Policy) migFamily() (family, profileAttr string) {
	r := p.migStrategyRule()
	if r == nil {
		return "", ""
	}
	for _, rr := range p.spec.Resources {
		if rr.DeviceClassName == r.MIGDeviceClassName && rr.CapacityOf == "" && len(rr.OnlyWith) == 0 {
			return rr.Family, rr.SuffixAttribute
		}
	}
	return "", ""
}

// fullDevices are the node's devices of the families other than the MIG
// family: full GPUs.
func (p *Policy) fullDevices(families []string, n legacyNode) []LegacyDevice {
	mig, _ := p.migFamily()
	var out []LegacyDevice
	for _, f := range families {
		if f != mig {
			out = append(out, n.devices(f)...)
		}
	}
	return out
}

// singleMIGLayout reads the node as GFD's single strategy does
// (newMigStrategySingleLabeler): migs are the node's MIG devices; valid when
// every GPU of the families is MIG and all MIG devices have one profile
// (profile), invalid when the node has MIG devices and also full GPUs or
// several profiles. A node without MIG devices is neither (GFD then
// labels it as under the none strategy). A MIG-enabled GPU without slices
// publishes no device, so the legacy view cannot see that GFD would call
// such a node invalid.
func (p *Policy) singleMIGLayout(families []string, n legacyNode) (migs []LegacyDevice, profile string, invalid bool) {
	mig, profileAttr := p.migFamily()
	if mig == "" || profileAttr == "" {
		return nil, "", false
	}
	migs = n.devices(mig)
	if len(migs) == 0 {
		return nil, "", false
	}
	profiles := map[string]bool{}
	for _, d := range migs {
		a, ok := d.attribute(profileAttr)
		if !ok || a.StringValue == nil {
			return migs, "", true
		}
		profiles[*a.StringValue] = true
	}
	if len(profiles) != 1 || len(p.fullDevices(append(slices.Clone(families), familiesOfRule(p)...), n)) > 0 {
		return migs, "", true
	}
	for k := range profiles {
		profile = k
	}
	return migs, profile, false
}

// familiesOfRule lists the families of the MIG strategy rule: the GPUs GFD
// considers when it checks the single strategy's layout.
func familiesOfRule(p *Policy) []string {
	if r := p.migStrategyRule(); r != nil {
		return r.Families
	}
	return nil
}

// LegacyMIGStrategies lists the MIG strategies the NVIDIA device plugin and
// GFD may have run with on a node with these labels and devices, for the
// placement check's legacy view, which reads the node once per strategy
// (labels and resources as that strategy shows them) and lets the pod as
// submitted land where any of them admits it:
//
//   - the node's own nvidia.com/mig.strategy label, when it carries one;
//   - on a node whose GPUs are all MIG with one profile — the layout GFD's
//     single strategy requires — both "single" (the GPU Operator's default)
//     and "mixed": the strategy is the device plugin's setting, not
//     hardware, and the node serves what a pod of either strategy asked for
//     (a "-MIG-1g.10gb" product, or nvidia.com/mig-1g.10gb);
//   - on a node with MIG devices in another layout, "mixed" (single would
//     make GFD label it -MIG-INVALID with no GPU);
//   - none on a node without MIG devices.
//
// The policy's rule for the strategy label names the key; without one the
// list is empty.
func (p *Policy) LegacyMIGStrategies(nodeLabels map[string]string, devices FamilyDevices) []string {
	r := p.migStrategyRule()
	if r == nil {
		return nil
	}
	if v, ok := nodeLabels[r.Key]; ok {
		return []string{v}
	}
	n := legacyNode{labels: nodeLabels, devices: devices}
	migs, _, invalid := p.singleMIGLayout(r.Families, n)
	switch {
	case invalid:
		return []string{migMixed}
	case len(migs) > 0:
		return []string{migSingle, migMixed}
	}
	return nil
}

// MIGStrategyLabel is the key of GFD's MIG strategy label in the policy
// ("nvidia.com/mig.strategy"), "" when no rule reads it.
func (p *Policy) MIGStrategyLabel() string {
	if r := p.migStrategyRule(); r != nil {
		return r.Key
	}
	return ""
}

// forwardMIGProfile says the device is a MIG slice of the given profile
// (GKE's gke-gpu-partition-size).
func forwardMIGProfile(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
	prof := celgen.SplitAttr(rule.MIGProfileAttribute)
	switch req.op {
	case corev1.NodeSelectorOpExists:
		return effect{selectors: []string{prof.Guard()}, class: rule.MIGDeviceClassName}, nil
	case corev1.NodeSelectorOpIn:
	default:
		return effect{}, notTranslatable("%s: operator %s on a MIG partition size", req.key, req.op)
	}
	pred, err := celgen.StringIn(prof.Ref(), req.values)
	if err != nil {
		return effect{}, notTranslatable("%s: %v", req.key, err)
	}
	return effect{selectors: []string{celgen.Guarded(prof.Guard(), pred, false)}, class: rule.MIGDeviceClassName}, nil
}

// backwardMIGProfile is the profile of the node's first MIG device.
func backwardMIGProfile(p *Policy, rule *v1alpha1.NodeLabelRule, _ string, n legacyNode) (string, bool) {
	for _, d := range n.devices(familyOfMIGRule(p, rule)) {
		if a, ok := d.attribute(rule.MIGProfileAttribute); ok && a.StringValue != nil {
			return *a.StringValue, true
		}
	}
	return "", false
}

// forwardMIGStrategy: under "single" the legacy GPU resource is a MIG slice.
func forwardMIGStrategy(p *Policy, rule *v1alpha1.NodeLabelRule, _ string, req labelReq, family string) (effect, error) {
	if req.op != corev1.NodeSelectorOpIn || len(req.values) != 1 {
		return effect{}, notTranslatable("%s: only a single value can be translated", req)
	}
	switch req.values[0] {
	case "single":
		if family == familyOfMIGRule(p, rule) {
			return effect{implied: true}, nil
		}
		// Under the single strategy the GPU resource is a MIG slice.
		return effect{class: rule.MIGDeviceClassName}, nil
	case "mixed", "none":
		// A setting of the device plugin no device attribute says: the
		// request for a full GPU is the same on any node, and only the
		// placement check can tell which nodes the label excluded.
		return effect{implied: true, dropped: true}, nil
	}
	return effect{}, notTranslatable("%s: unknown MIG strategy", req)
}

// backwardMIGStrategy: which strategy the device plugin ran with is
// configuration, not hardware. The node's labels say it when they do (the
// placement check reads a node once per strategy it may have run with,
// [Policy.LegacyMIGStrategies]); otherwise a node with MIG devices is read
// as "mixed", and without, GFD sets no label.
func backwardMIGStrategy(p *Policy, rule *v1alpha1.NodeLabelRule, _ string, n legacyNode) (string, bool) {
	if s := p.migStrategy(n); s != "" {
		return s, true
	}
	if len(n.devices(familyOfMIGRule(p, rule))) > 0 {
		return migMixed, true
	}
	return "", false
}

// forwardMiB compares GFD's memory in MiB with a capacity in bytes.
func forwardMiB(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
	c := celgen.SplitAttr(rule.Capacity)
	if eff, ok := presence(req, c.CapGuard()); ok {
		return eff, nil
	}
	var parts []string
	for _, v := range req.values {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 1<<40 {
			return effect{}, notTranslatable("%s: %q is not a number of MiB", req.key, v)
		}
		// GFD labels the total memory in MiB rounded down; the DRA capacity
		// is exact bytes. Label value N therefore means N Mi <= bytes <
		// (N+1) Mi, "Gt N" means bytes >= (N+1) Mi and "Lt N" bytes < N Mi.
		switch req.op {
		case corev1.NodeSelectorOpGt:
			parts = append(parts, c.CapAtLeastMi(n+1))
		case corev1.NodeSelectorOpLt:
			parts = append(parts, c.CapBelowMi(n))
		default:
			parts = append(parts, c.CapInMi(n, n+1))
		}
	}
	return capacityEffect(c, req, parts)
}

// capacityEffect selects the devices whose capacity c one of parts admits
// (In), or none of them admits (NotIn), among the devices that have it.
func capacityEffect(c celgen.Attr, req labelReq, parts []string) (effect, error) {
	if len(parts) == 0 {
		return effect{}, notTranslatable("%s: no value", req.key)
	}
	return effect{selectors: []string{celgen.Guarded(c.CapGuard(), celgen.Or(parts), req.op == corev1.NodeSelectorOpNotIn)}}, nil
}

// backwardMiB is the first device's capacity in whole MiB, rounded down as
// GFD labels it.
func backwardMiB(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, n legacyNode) (string, bool) {
	for _, f := range rule.Families {
		for _, d := range n.devices(f) {
			if q, ok := d.capacity(rule.Capacity); ok {
				return strconv.FormatInt(q.Value()>>20, 10), true
			}
		}
	}
	return "", false
}

// forwardGFDFamily maps an architecture family to its compute-capability
// ranges under the policy's GFD scheme.
func forwardGFDFamily(p *Policy, rule *v1alpha1.NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
	scheme := p.spec.GFDFamilyScheme
	a := celgen.SplitAttr(rule.Attribute)
	switch req.op {
	case corev1.NodeSelectorOpExists:
		return effect{selectors: []string{a.Guard()}}, nil
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
	default:
		return effect{}, notTranslatable("%s: operator %s on an architecture family", req.key, req.op)
	}
	fams := gpulabels.Families(scheme)
	var parts []string
	for _, v := range req.values {
		ranges, ok := fams[v]
		if !ok {
			return effect{}, notTranslatable("%s: %q is not a GPU family that GFD (%s scheme) produces", req.key, v, scheme)
		}
		for _, r := range ranges {
			parts = append(parts, fmt.Sprintf("(%s.compareTo(%s) >= 0 && %s.compareTo(%s) < 0)",
				a.Ref(), celgen.SemverLit(r.LoMajor, r.LoMinor, 0), a.Ref(), celgen.SemverLit(r.HiMajor, r.HiMinor, 0)))
		}
	}
	pred := strings.Join(parts, " || ")
	if len(parts) > 1 {
		pred = "(" + pred + ")"
	}
	return effect{selectors: []string{celgen.Guarded(a.Guard(), pred, req.op == corev1.NodeSelectorOpNotIn)}}, nil
}

// The device direction of GFD's and GKE's GPU labels (see ForecastDevices
// in vocabulary.go).

// knownProductNames lists the exact names that GFD's sanitising turns into
// the label form: the built-in ones and the values of the policy's Map
// rules on the same attribute; sorted, without duplicates.
func (p *Policy) knownProductNames(attr, labelForm string) []string {
	set := map[string]bool{}
	for _, n := range gpulabels.ProductNames {
		if gpulabels.Sanitise(n) == labelForm {
			set[n] = true
		}
	}
	for _, r := range p.labels {
		if r.Conversion != v1alpha1.ConvMap || r.Attribute != attr {
			continue
		}
		for _, vals := range r.Values {
			for _, n := range vals {
				if gpulabels.Sanitise(n) == labelForm {
					set[n] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// deviceGFDProduct: the product name of a GFD product label, and the MIG
// profile of a single-strategy "-MIG-<profile>" value. GFD writes the NVML
// name's spaces as dashes and the name has dashes of its own, so the label
// does not tell which dashes were spaces: a name known exactly
// (knownProductNames) is written as NVML spells it; any other is written as
// the label spells it (loose), which claimbridge's selectors match because
// they compare with spaces as dashes.
func deviceGFDProduct(p *Policy, rule *v1alpha1.NodeLabelRule, _ string, v string) (deviceFact, error) {
	product, profile := gpulabels.ParseProduct(v)
	if product == "" {
		return deviceFact{}, fmt.Errorf("no product name")
	}
	f := deviceFact{attribute: rule.Attribute}
	if profile != "" {
		f.migProfile = gpulabels.MIGProfileOfGFD(profile)
	}
	if names := p.knownProductNames(rule.Attribute, product); len(names) == 1 {
		f.candidates = []candidate{{value: stringAttr(names[0])}}
		return f, nil
	}
	f.candidates = []candidate{{value: stringAttr(product), loose: true,
		note: fmt.Sprintf("%s: %s=%s cannot tell which of its dashes were spaces (GFD writes the NVML name's spaces as dashes); written as %q, which claimbridge's selectors match (they compare with spaces as dashes) but a selector on the exact NVML name may not",
			shortName(rule.Attribute), rule.Key, v, product)}}
	return f, nil
}

// deviceMiB: GFD's memory in MiB is a capacity of as many Mi (the driver
// writes 40960 MiB as 40Gi).
func deviceMiB(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, v string) (deviceFact, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > 1<<40 {
		return deviceFact{}, fmt.Errorf("%q is not a number of MiB", v)
	}
	return deviceFact{capacity: rule.Capacity, quantity: *resource.NewQuantity(n<<20, resource.BinarySI)}, nil
}

// architectureOf is the architecture attribute in the domain of a GFDFamily
// rule's compute-capability attribute.
func architectureOf(rule *v1alpha1.NodeLabelRule) string {
	domain, _, _ := strings.Cut(rule.Attribute, "/")
	return domain + "/architecture"
}

// deviceGFDFamily: the architectures of the family's compute-capability
// ranges under the policy's GFD scheme (one, except the Legacy scheme's
// ampere, which covers Ampere and Ada Lovelace; the compute capability then
// settles it).
func deviceGFDFamily(p *Policy, rule *v1alpha1.NodeLabelRule, _ string, v string) (deviceFact, error) {
	scheme := p.spec.GFDFamilyScheme
	ranges, ok := gpulabels.Families(scheme)[v]
	if !ok {
		return deviceFact{}, fmt.Errorf("not a GPU family that GFD (%s scheme) produces", cmp.Or(scheme, v1alpha1.GFDFamilyCurrent))
	}
	current := gpulabels.Families(v1alpha1.GFDFamilyCurrent)
	f := deviceFact{attribute: architectureOf(rule)}
	for _, name := range slices.Sorted(maps.Keys(current)) {
		arch, ok := gpulabels.Architectures[name]
		if !ok {
			continue
		}
		for _, c := range current[name] {
			for _, r := range ranges {
				if c.LoMajor*1000+c.LoMinor < r.HiMajor*1000+r.HiMinor && r.LoMajor*1000+r.LoMinor < c.HiMajor*1000+c.HiMinor &&
					!slices.ContainsFunc(f.candidates, func(o candidate) bool { return *o.value.StringValue == arch }) {
					f.candidates = append(f.candidates, candidate{value: stringAttr(arch)})
				}
			}
		}
	}
	if len(f.candidates) == 0 {
		return deviceFact{}, nil
	}
	return f, nil
}

// deviceMIGProfile: GKE's partition size is the MIG profile of the node's
// GPUs, as the driver spells it.
func deviceMIGProfile(_ *Policy, _ *v1alpha1.NodeLabelRule, _ string, v string) (deviceFact, error) {
	if v == "" {
		return deviceFact{}, fmt.Errorf("no MIG profile")
	}
	return deviceFact{migProfile: v}, nil
}
