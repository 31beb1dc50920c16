package forecast

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
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/translate"
)

// The NVIDIA DRA driver (gpu.nvidia.com) as the forecast makes it: one
// device per GPU the device plugin offers ("gpu-<i>", type gpu), one per
// MIG device it offers ("mig-<profile>-<j>", type mig). Attributes come
// from the node's labels through the policy's vocabulary; "type" and
// "profile" are the driver's own.

// migResourcePrefix: the device plugin's resources of MIG devices under the
// mixed strategy, nvidia.com/mig-<profile> (with "+" written "."); GFD
// labels each with <resource>.count, .memory, .multiprocessors, ...
const migResourcePrefix = "nvidia.com/mig-"

// migCapacityLabels are GFD's labels of a MIG resource
// (<resource>.<suffix>: nvidia.com/mig-1g.10gb.memory under the mixed
// strategy, nvidia.com/gpu.memory under single) and the NVIDIA driver's
// capacity each is (both from NVML's MIG profile info: GFD's
// newMigAttributeLabels, the driver's CommonCapacitiesMig). GFD's
// slices.gi and slices.ci have no capacity: the driver publishes
// memorySlice<i>, the placement, instead.
var migCapacityLabels = []struct {
	suffix, capacity string
	mib              bool
}{
	{"memory", "memory", true},
	{"multiprocessors", "multiprocessors", false},
	{"engines.copy", "copyEngines", false},
	{"engines.decoder", "decoders", false},
	{"engines.encoder", "encoders", false},
	{"engines.jpeg", "jpegEngines", false},
	{"engines.ofa", "ofaEngines", false},
}

// Sharing labels: GFD's replicas and strategy of the device plugin's
// time-slicing or MPS, GKE's GPU sharing.
const (
	labelReplicas        = "nvidia.com/gpu.replicas"
	labelSharingStrategy = "nvidia.com/gpu.sharing-strategy"
	labelGPUCount        = "nvidia.com/gpu.count"
	labelGKESharing      = "cloud.google.com/gke-gpu-sharing-strategy"
	labelGKEMaxShared    = "cloud.google.com/gke-max-shared-clients-per-gpu"
)

// nvidia forecasts the NVIDIA driver's devices on a node from its
// resources rs (nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-*).
func (f *forecaster) nvidia(n *corev1.Node, rs []legacyResource) (devices []resourceapi.Device, notes, unknownList []string, notForecast string) {
	var gpus, migs []legacyResource
	for _, r := range rs {
		switch r.devType {
		case typeGPU:
			gpus = append(gpus, r)
		case typeMIG:
			migs = append(migs, r)
		default:
			notes = append(notes, fmt.Sprintf("%s: served by DeviceClass %s, whose devices the forecast does not make", r.name, r.rule.DeviceClassName))
		}
	}
	unknownSet := map[string]bool{}

	replicas, strategy := sharing(n.Labels)
	var count int64
	if len(gpus) > 0 {
		var countNotes []string
		count, countNotes = gpuCount(n.Labels, gpus)
		notes = append(notes, countNotes...)
		if offered := offeredGPUs(gpus); replicas <= 1 && count > 0 && offered > count && offered%count == 0 {
			// Shares counted against gpu.count, no replicas label: the
			// device plugin offers each GPU offered/count times.
			replicas, strategy = offered/count, "time-slicing"
			notes = append(notes, fmt.Sprintf("no sharing label: the %d shares on %d GPUs are taken as time-slicing %d ways", offered, count, replicas))
		}
	}
	shares, shareNotes := f.shares(replicas, strategy)
	notes = append(notes, shareNotes...)
	if len(gpus) > 0 {
		fg := f.p.ForecastDevices(gpus[0].rule.Family, n.Labels)
		if count > 0 {
			notes = append(notes, fg.Notes...)
		}
		attrs := local(DriverNVIDIA, fg.Attributes)
		attrs["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To(typeGPU)}
		capacity := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
		for k, q := range fg.Capacity {
			capacity[localName(DriverNVIDIA, k)] = resourceapi.DeviceCapacity{Value: q}
		}
		for i := range count {
			d := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: cloneAttrs(attrs), Capacity: cloneCapacity(capacity)}
			applyShares(&d, shares)
			devices = append(devices, d)
			for _, u := range unknown(d, nvidiaGPUAttributes, nvidiaGPUCapacity) {
				unknownSet[u] = true
			}
		}
	}

	if len(migs) > 0 {
		fm := f.p.ForecastDevices(f.familyOfClass(migs[0].rule), n.Labels)
		perProfile := map[string]int{}
		var profiles []string
		for _, r := range migs {
			profile, labelPrefix := fm.MIGProfile, string(r.name)
			if p, ok := strings.CutPrefix(string(r.name), migResourcePrefix); ok {
				profile = gpulabels.MIGProfileOfGFD(p)
			}
			if profile == "" {
				notes = append(notes, fmt.Sprintf("%s: the node's labels make it a MIG device (DeviceClass %s) but name no MIG profile; not forecast",
					r.name, r.rule.DeviceClassName))
				continue
			}
			profiles = append(profiles, profile)
			capacity, capNotes := migCapacities(n.Labels, labelPrefix)
			notes = append(notes, capNotes...)
			attrs := local(DriverNVIDIA, fm.Attributes)
			attrs["type"] = resourceapi.DeviceAttribute{StringValue: ptr.To(typeMIG)}
			attrs["profile"] = resourceapi.DeviceAttribute{StringValue: ptr.To(profile)}
			for range r.count {
				d := resourceapi.Device{
					Name:       fmt.Sprintf("mig-%s-%d", dnsProfile(profile), perProfile[profile]),
					Attributes: cloneAttrs(attrs),
					Capacity:   cloneCapacity(capacity),
				}
				perProfile[profile]++
				applyShares(&d, shares)
				devices = append(devices, d)
				for _, u := range unknown(d, nvidiaMIGAttributes, nvidiaMIGCapacity) {
					unknownSet[u] = true
				}
			}
		}
		if len(profiles) > 0 {
			notes = append(notes, fm.Notes...)
			notes = append(notes, fmt.Sprintf("MIG: forecast as the MIG devices the device plugin offers today (%s), as the driver publishes configured MIG devices; "+
				"with its DynamicMIG feature it publishes every possible placement (and the full GPUs) instead; which GPU holds which MIG device (parentUUID) is unknown",
				strings.Join(sortedSet(profiles), ", ")))
		}
	}
	if len(devices) == 0 {
		return nil, notes, nil, ""
	}
	return devices, notes, slices.Sorted(maps.Keys(unknownSet)), ""
}

// gpuCount is the number of GPUs behind the node's full-GPU resources: the
// device plugin offers each GPU once, or replicas times when it shares them
// (time-slicing or MPS, GFD's nvidia.com/gpu.replicas; GKE's
// gke-max-shared-clients-per-gpu).
func gpuCount(labels map[string]string, gpus []legacyResource) (int64, []string) {
	var shares int64
	shared := false
	var names []string
	for _, r := range gpus {
		shares += r.count
		shared = shared || r.rule.Shared
		names = append(names, string(r.name))
	}
	replicas, strategy := sharing(labels)
	switch {
	case replicas > 1:
		count := shares / replicas
		note := fmt.Sprintf("%s: the %d %s the device plugin offers are %d per GPU, so %d GPUs", strategy, shares, strings.Join(names, " and "), replicas, count)
		if shares%replicas != 0 {
			note += fmt.Sprintf("; %d left over are not a whole GPU", shares%replicas)
		}
		return count, []string{note}
	case shared:
		if c, err := strconv.ParseInt(labels[labelGPUCount], 10, 64); err == nil && c > 0 {
			return c, []string{fmt.Sprintf("%s: shares of GPUs; %s=%d GPUs are forecast", strings.Join(names, " and "), labelGPUCount, c)}
		}
		return 0, []string{fmt.Sprintf("%s: shares of GPUs, and no label tells how many GPUs; not forecast", strings.Join(names, " and "))}
	}
	return shares, nil
}

// sharing reads the replicas per GPU and the sharing strategy from GFD's or
// GKE's labels; replicas 0 when none says.
func sharing(labels map[string]string) (int64, string) {
	if r, err := strconv.ParseInt(labels[labelReplicas], 10, 64); err == nil && r > 1 {
		strategy := labels[labelSharingStrategy]
		if strategy == "" || strategy == "none" {
			strategy = "time-slicing"
		}
		return r, strategy
	}
	if s := labels[labelGKESharing]; s != "" {
		if r, err := strconv.ParseInt(labels[labelGKEMaxShared], 10, 64); err == nil && r > 1 {
			return r, "GKE " + s
		}
	}
	return 0, ""
}

// isMPS: the sharing strategy sharing read is MPS.
func isMPS(strategy string) bool { return strategy == "mps" || strategy == "GKE mps" }

// offeredGPUs is how many of the full-GPU resources the device plugin
// offers, shares counted.
func offeredGPUs(gpus []legacyResource) int64 {
	var n int64
	for _, r := range gpus {
		n += r.count
	}
	return n
}

// shareMode is how the forecast makes the GPUs the device plugin
// time-slices: as the platform's NVIDIA DRA driver publishes them (its
// --consumable-shares mode, with the fact that says it), unless
// --forecast-time-slicing overrides it.
type shareMode struct {
	override TimeSlicing
	mode     platform.Shares
	fact     platform.Fact
}

func sharingOf(plat *platform.Platform, override TimeSlicing) shareMode {
	mode, fact := plat.Shares("nvidia-gpu")
	return shareMode{override: override, mode: mode, fact: fact}
}

// sharesRemedy says how to publish a node's GPUs as shares, replicas
// each: the gate, the flag and the chart's values.
func sharesRemedy(replicas int64) string {
	return fmt.Sprintf("to serve them, run the NVIDIA DRA driver v0.5.0 or later with its ConsumableShares feature gate and --consumable-shares=%d "+
		"(Helm values featureGates.ConsumableShares=true, consumableShares=%d), on Kubernetes with DRAConsumableCapacity (beta since 1.36)", replicas, replicas)
}

// deviceSharing is how the driver publishes a device: whole (zero),
// with n consumable shares, or shared by memory alone (mode unlimited or
// memory: no shares capacity, memory requested 0 or all of it by default).
type deviceSharing struct {
	n    int64
	mode string
}

// shares is how each GPU (and MIG device) of the node is forecast: as the
// sharing mode publishes it when the device plugin time-slices them, whole
// otherwise, with a note that says why.
func (f *forecaster) shares(replicas int64, strategy string) (deviceSharing, []string) {
	switch {
	case replicas <= 1:
		return deviceSharing{}, nil
	case isMPS(strategy):
		return deviceSharing{}, []string{fmt.Sprintf("%s: forecast as whole GPUs: the NVIDIA DRA driver runs MPS only for the containers of one claim and refuses it on GPUs with consumable shares; "+
			"pods that select MPS stay as submitted (SharedMPSNotMapped), and shares asked without a strategy take time-sliced GPUs elsewhere", strategy)}
	case f.sharing.override == TimeSlicingWhole:
		return deviceSharing{}, []string{fmt.Sprintf("%s: forecast as whole GPUs (--forecast-time-slicing=%s), as the NVIDIA DRA driver publishes them without consumable shares: "+
			"the pods that ask for shares stay as submitted (SharesUnavailable)", strategy, TimeSlicingWhole)}
	case f.sharing.override == TimeSlicingShares:
		return deviceSharing{n: replicas}, []string{sharesNote(strategy, replicas, replicas, "--forecast-time-slicing="+string(TimeSlicingShares))}
	}
	said := "--consumable-shares=" + f.sharing.mode.String() + f.sharing.fact.Said()
	switch f.sharing.mode.Mode {
	case v1alpha1.SharesCount:
		n := int64(f.sharing.mode.N)
		note := sharesNote(strategy, replicas, n, said)
		if n != replicas {
			note += fmt.Sprintf("; the device plugin shares each GPU %d ways, the driver %d", replicas, n)
		}
		return deviceSharing{n: n}, []string{note}
	case v1alpha1.SharesUnlimited, v1alpha1.SharesMemory:
		what := "any number of claims share a GPU, each taking no memory unless it asks for some"
		if f.sharing.mode.Mode == v1alpha1.SharesMemory {
			what = "claims share a GPU by the memory they ask for, and one that asks for none takes all of it"
		}
		return deviceSharing{mode: f.sharing.mode.Mode}, []string{fmt.Sprintf("%s: the platform's NVIDIA DRA driver runs %s: each GPU allows multiple allocations with no shares capacity (consumable_shares.go): %s. %s",
			strategy, said, what, f.memorySharesNote(replicas))}
	}
	return deviceSharing{}, []string{fmt.Sprintf("%s: forecast as whole GPUs: the platform's NVIDIA DRA driver runs %s, so it publishes no consumable shares and each pod that shares a GPU today takes one; %s",
		strategy, said, sharesRemedy(replicas))}
}

// memorySharesNote says what becomes of the pods that share a GPU
// replicas ways today on GPUs shared by memory, by the policy's
// memoryShares.
func (f *forecaster) memorySharesNote(replicas int64) string {
	n := f.p.MemoryShares("nvidia-gpu")
	switch {
	case n > 0 && n != replicas:
		return fmt.Sprintf("A translated share asks for 1/%d of its GPU's memory (the policy's memoryShares), so %d pods share a GPU where the device plugin let %d", n, n, replicas)
	case n > 0:
		return fmt.Sprintf("A translated share asks for 1/%d of its GPU's memory (the policy's memoryShares), so %d pods share a GPU, as today", n, n)
	case f.sharing.mode.Mode == v1alpha1.SharesUnlimited:
		return fmt.Sprintf("A translated share asks for no memory, so any number of pods share a GPU where the device plugin let %d; the policy's memoryShares: %d would cap them", replicas, replicas)
	}
	return fmt.Sprintf("Nothing says how much memory a share takes, so the pods that share a GPU today stay as submitted (SharesUnavailable): set the policy's memoryShares to %d, or %s", replicas, sharesRemedy(replicas))
}

// sharesNote says a node's GPUs are forecast with n shares each, and by
// what.
func sharesNote(strategy string, replicas, n int64, by string) string {
	return fmt.Sprintf("%s (%d ways): each GPU is forecast with %d consumable shares (allowMultipleAllocations, capacity shares %d, default request 1), "+
		"as the NVIDIA DRA driver v0.5.0 or later publishes it with its ConsumableShares feature gate (alpha) and %s, on Kubernetes with DRAConsumableCapacity (beta since 1.36); "+
		"one --consumable-shares per driver installation, so nodes shared differently need an installation each; as with time-slicing, shares have no memory or fault isolation; "+
		"the allocator fills one GPU's shares before the next, where the device plugin spreads replicas over the GPUs", strategy, replicas, n, n, by)
}

// applyShares makes a forecast device shared as the NVIDIA DRA driver
// does (consumable_shares.go, applyConsumableShares): with n consumable
// shares it allows multiple allocations, its capacity shares is n,
// requested 1 by default, 1 to n in steps of 1, and its memory (rounded
// down to a MiB) is requested 0 by default, up to all of it in steps of
// 1Mi; unlimited: the same without shares; memory: no shares, the memory
// requested all by default, 1Mi to all. A whole device is left as it is.
func applyShares(d *resourceapi.Device, s deviceSharing) {
	if s.n <= 0 && s.mode == "" {
		return
	}
	d.AllowMultipleAllocations = ptr.To(true)
	if d.Capacity == nil {
		d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
	}
	if c, ok := d.Capacity[capacityMemory]; ok {
		mib := c.Value.Value() >> 20
		total := resource.NewQuantity(mib<<20, resource.BinarySI)
		def, least := resource.NewQuantity(0, resource.DecimalSI), resource.NewQuantity(0, resource.DecimalSI)
		if s.mode == v1alpha1.SharesMemory {
			def, least = resource.NewQuantity(mib<<20, resource.BinarySI), resource.NewQuantity(1<<20, resource.BinarySI)
		}
		d.Capacity[capacityMemory] = resourceapi.DeviceCapacity{Value: *total, RequestPolicy: &resourceapi.CapacityRequestPolicy{
			Default:    def,
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: least, Max: total, Step: resource.NewQuantity(1<<20, resource.BinarySI)},
		}}
	}
	if s.n <= 0 {
		return
	}
	d.Capacity[capacityShares] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(s.n, resource.DecimalSI), RequestPolicy: &resourceapi.CapacityRequestPolicy{
		Default:    resource.NewQuantity(1, resource.DecimalSI),
		ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: resource.NewQuantity(1, resource.DecimalSI), Max: resource.NewQuantity(s.n, resource.DecimalSI), Step: resource.NewQuantity(1, resource.DecimalSI)},
	}}
}

// The NVIDIA driver's capacities that consumable shares set.
const (
	capacityMemory resourceapi.QualifiedName = "memory"
	capacityShares resourceapi.QualifiedName = "shares"
)

// migCapacities reads GFD's labels <prefix>.<suffix> of a MIG resource as
// the driver's capacities.
func migCapacities(labels map[string]string, prefix string) (map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, []string) {
	out := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
	var notes []string
	for _, l := range migCapacityLabels {
		key := prefix + "." + l.suffix
		v, ok := labels[key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 1<<40 {
			notes = append(notes, fmt.Sprintf("%s=%s: not a count; %s left out", key, v, l.capacity))
			continue
		}
		q := resource.NewQuantity(n, resource.DecimalSI)
		if l.mib {
			q = resource.NewQuantity(n<<20, resource.BinarySI)
		}
		out[resourceapi.QualifiedName(l.capacity)] = resourceapi.DeviceCapacity{Value: *q}
	}
	return out, notes
}

// familyOfClass is the policy's family whose resources use the rule's
// DeviceClass (the MIG family for nvidia.com/gpu moved to mig.nvidia.com
// by mig.strategy=single), else the rule's own.
func (f *forecaster) familyOfClass(rule translate.DeviceRule) string {
	rules := f.p.FamilyDeviceRules()
	for _, fam := range slices.Sorted(maps.Keys(rules)) {
		for _, r := range rules[fam] {
			if r.DeviceClassName == rule.DeviceClassName {
				return fam
			}
		}
	}
	return rule.Family
}

// dnsProfile writes a MIG profile as the driver does in device names: no
// dots, "+" as "-" ("1g.5gb+me" is 1g5gb-me).
func dnsProfile(profile string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(profile) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '+' || r == '-':
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

func cloneAttrs(m map[resourceapi.QualifiedName]resourceapi.DeviceAttribute) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	out := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(m))
	for k, v := range m {
		out[k] = *v.DeepCopy()
	}
	return out
}

func cloneCapacity(m map[resourceapi.QualifiedName]resourceapi.DeviceCapacity) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
	if len(m) == 0 {
		return nil
	}
	out := make(map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, len(m))
	for k, v := range m {
		out[k] = *v.DeepCopy()
	}
	return out
}
