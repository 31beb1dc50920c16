package translate

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/claimbridge/claimbridge/translate/gpulabels"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/claimbridge/claimbridge/internal/testing/vendortruth"
	"github.com/claimbridge/claimbridge/reason"
)

// The vocabulary against the vendors' own output. internal/testing/vendortruth
// (PROVENANCE.txt) holds GPU Feature Discovery's labels and the NVIDIA DRA
// driver's devices, both produced by NVIDIA's own code from the same
// simulated GPUs: A100, H100, L40S (labels and devices), T4 (labels only:
// the driver did not run on it) and the MIG devices of the driver's
// DynamicMIG mode on one A100 and one H100. For each model every label the
// vocabulary knows must become a selector that the driver's devices of the
// models with that label value match and no other's, and the legacy view
// derived from the devices must give the labels back wherever the
// vocabulary claims an equivalence.

var groundTruthModels = vendortruth.Models

// nvidiaDriver is the NVIDIA DRA driver's name: the domain of its attributes.
const nvidiaDriver = "gpu.nvidia.com"

// driverClasses are the NVIDIA DRA driver's DeviceClasses (its chart's
// deviceclass-gpu.yaml and deviceclass-mig.yaml).
var driverClasses = map[string]string{
	"gpu.nvidia.com": `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`,
	"mig.nvidia.com": `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "mig"`,
}

// gtLabels are GFD's labels of the model.
func gtLabels(t *testing.T, model string) map[string]string {
	t.Helper()
	l, err := vendortruth.Labels(model)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// gtDevices are the full GPUs the driver publishes for the model; nil for
// a model it did not run on (t4).
func gtDevices(t *testing.T, model string) []resourceapi.Device {
	t.Helper()
	devs, _, err := vendortruth.Devices(model)
	if err != nil {
		t.Fatal(err)
	}
	return devs
}

// gtMIGDevices are the MIG devices of the driver's DynamicMIG pool.
func gtMIGDevices(t *testing.T, model string) []resourceapi.Device {
	t.Helper()
	devs, err := vendortruth.DynamicMIG(model)
	if err != nil {
		t.Fatal(err)
	}
	var out []resourceapi.Device
	for _, d := range devs {
		if attr, ok := d.Attributes["type"]; ok && attr.StringValue != nil && *attr.StringValue == "mig" {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b resourceapi.Device) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// deviceMatches evaluates a class's selector and a request's selectors on a
// device with the DRA CEL compiler, as the allocator does.
func deviceMatches(t *testing.T, class string, selectors []resourceapi.DeviceSelector, d resourceapi.Device) bool {
	t.Helper()
	exprs := []string{driverClasses[class]}
	for _, s := range selectors {
		exprs = append(exprs, s.CEL.Expression)
	}
	in := dracel.Device{Driver: nvidiaDriver, AllowMultipleAllocations: d.AllowMultipleAllocations, Attributes: d.Attributes, Capacity: d.Capacity}
	for _, e := range exprs {
		res := dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: true}).CompileCELExpression(e, dracel.Options{})
		if res.Error != nil {
			t.Fatalf("compile %q: %v", e, res.Error)
		}
		ok, _, err := res.DeviceMatches(t.Context(), in)
		if err != nil {
			t.Fatalf("evaluate %q on %s: %v", e, d.Name, err)
		}
		if !ok {
			return false
		}
	}
	return true
}

// claimMatches reports whether a device would serve the claim's only
// request: any of its alternatives matches.
func claimMatches(t *testing.T, tmpl *resourceapi.ResourceClaimTemplate, d resourceapi.Device) bool {
	t.Helper()
	reqs := tmpl.Spec.Spec.Devices.Requests
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	if e := reqs[0].Exactly; e != nil {
		return deviceMatches(t, e.DeviceClassName, e.Selectors, d)
	}
	for _, s := range reqs[0].FirstAvailable {
		if deviceMatches(t, s.DeviceClassName, s.Selectors, d) {
			return true
		}
	}
	return false
}

// gtPod asks for one device of resource with a node selector.
func gtPod(resource string, selector map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gt", Namespace: "ml"},
		Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceName(resource): *resource1()}},
		}}},
	}
}

func resource1() *resource.Quantity { return resource.NewQuantity(1, resource.DecimalSI) }

// legacyDevices is a FamilyDevices of a node whose driver publishes these
// devices: full GPUs are the nvidia-gpu family, MIG devices nvidia-mig.
func legacyDevices(devs []resourceapi.Device) FamilyDevices {
	return func(family string) []LegacyDevice {
		var out []LegacyDevice
		for _, d := range devs {
			typ := *d.Attributes["type"].StringValue
			if (family == "nvidia-gpu" && typ == "gpu") || (family == "nvidia-mig" && typ == "mig") {
				out = append(out, LegacyDevice{Name: d.Name, Driver: nvidiaDriver, Attributes: d.Attributes, Capacity: d.Capacity,
					AllowMultipleAllocations: d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations})
			}
		}
		slices.SortFunc(out, func(a, b LegacyDevice) int { return strings.Compare(a.Name, b.Name) })
		return out
	}
}

// labelEffect is what translation did with the node-label requirement on
// key: the code of its reason.
func labelEffect(res *Result, key string) reason.Code {
	for _, r := range res.Reasons {
		switch r.Code {
		case ReasonNodeLabelTranslated, ReasonNodeLabelImplied, ReasonNodeLabelDropped, ReasonNodeLabelKept, ReasonNodeLabelUntranslatable:
			if strings.Contains(r.Field, key) || strings.Contains(r.Message, key) {
				return r.Code
			}
		}
	}
	return ""
}

// unknownGFDLabels are the labels in the ground truth that no device
// attribute expresses, which the vocabulary therefore does not know: they
// stay on a pod as they are. A label that becomes known must be checked
// here against the driver's output.
var unknownGFDLabels = []string{
	"nvidia.com/gpu.clique", "nvidia.com/gpu.machine", "nvidia.com/gpu.mode",
	"nvidia.com/mig.capable", "nvidia.com/mps.capable", "nvidia.com/vgpu.present",
}

// droppedGFDLabels are known labels that no device attribute expresses:
// translation drops them and the placement check compares the nodes.
var droppedGFDLabels = []string{"nvidia.com/gpu.count"}

// TestEveryGFDLabelSelectsItsModelsDevices: for each model, a pod asking
// for one GPU with nodeSelector <label>=<that model's value> is translated
// into a selector that matches every device of each model whose GFD gives
// the label the same value, and no device of the others.
func TestEveryGFDLabelSelectsItsModelsDevices(t *testing.T) {
	p := DefaultPolicy()
	labels := map[string]map[string]string{}
	devices := map[string][]resourceapi.Device{}
	for _, m := range groundTruthModels {
		labels[m] = gtLabels(t, m)
		devices[m] = gtDevices(t, m)
	}
	for _, model := range groundTruthModels {
		t.Run(model, func(t *testing.T) {
			var selectors, unknown, dropped []string
			for _, key := range slices.Sorted(maps.Keys(labels[model])) {
				value := labels[model][key]
				if !p.KnowsLabel(key) {
					unknown = append(unknown, key)
					continue
				}
				res, err := Pod(Input{Pod: gtPod("nvidia.com/gpu", map[string]string{key: value}), Policy: p})
				if err != nil {
					t.Fatal(err)
				}
				if res.Outcome != reason.OutcomeTranslate {
					t.Errorf("%s=%s: %s (%v), want Translate", key, value, res.Outcome, res.Reasons)
					continue
				}
				switch code := labelEffect(res, key); code {
				case ReasonNodeLabelDropped:
					dropped = append(dropped, key)
					continue
				case ReasonNodeLabelTranslated:
					selectors = append(selectors, key)
				default:
					t.Errorf("%s=%s: the label's reason is %q, want NodeLabelTranslated or NodeLabelDropped", key, value, code)
					continue
				}
				want := p.CanonicalLabelValue(key, value)
				for _, other := range groundTruthModels {
					for _, d := range devices[other] {
						ov, has := labels[other][key]
						wantMatch := has && p.CanonicalLabelValue(key, ov) == want
						if got := claimMatches(t, res.Template, d); got != wantMatch {
							t.Errorf("%s=%s: the selector matches %s's %s: %v, want %v (%s says %s=%s)", key, value, other, d.Name, got, wantMatch, other, key, ov)
						}
					}
				}
			}
			for _, k := range unknown {
				if !slices.Contains(unknownGFDLabels, k) {
					t.Errorf("the vocabulary does not know %s: check it against the driver's output and list it in unknownGFDLabels", k)
				}
			}
			if !slices.Equal(dropped, droppedGFDLabels) {
				t.Errorf("labels dropped: %q, want %q", dropped, droppedGFDLabels)
			}
			// product, memory, family, compute.major and minor, the
			// driver and CUDA versions in both of GFD's spellings, and the
			// sharing labels (replicas 1, strategy none: not shared).
			if len(selectors) != 19 {
				t.Errorf("%d labels became selectors, want 19: %q", len(selectors), selectors)
			}
		})
	}
}

// TestTheLegacyViewGivesGFDsLabelsBack: the vocabulary read backwards over
// the driver's devices of a node (the placement check's legacy view, with
// none of GFD's labels left on the node) gives every label the vocabulary
// knows, with GFD's value in canonical form (the driver's 550.163.1 for
// GFD's 550.163.01).
func TestTheLegacyViewGivesGFDsLabelsBack(t *testing.T) {
	p := DefaultPolicy()
	for _, model := range groundTruthModels {
		devs := gtDevices(t, model)
		if devs == nil {
			continue // t4: the driver did not run on it
		}
		t.Run(model, func(t *testing.T) {
			labels := gtLabels(t, model)
			for _, key := range slices.Sorted(maps.Keys(labels)) {
				if !p.KnowsLabel(key) {
					continue
				}
				got, ok := p.LegacyLabel(key, map[string]string{}, legacyDevices(devs))
				if !ok {
					t.Errorf("%s does not derive from the devices (GFD says %s)", key, labels[key])
					continue
				}
				if want := p.CanonicalLabelValue(key, labels[key]); got != want {
					t.Errorf("%s derives as %q, GFD says %q (canonical %q)", key, got, labels[key], want)
				}
			}
			for _, key := range unknownGFDLabels {
				if got, ok := p.LegacyLabel(key, map[string]string{}, legacyDevices(devs)); ok {
					t.Errorf("%s derives as %q, but no device attribute expresses it", key, got)
				}
			}
		})
	}
}

// TestWhereTheVocabulariesDiffer: a case for each spelling GFD and the
// driver do not share.
func TestWhereTheVocabulariesDiffer(t *testing.T) {
	p := DefaultPolicy()
	translateOne := func(t *testing.T, resource string, selector map[string]string) *Result {
		t.Helper()
		res, err := Pod(Input{Pod: gtPod(resource, selector), Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != reason.OutcomeTranslate {
			t.Fatalf("%s %v: %s (%v), want Translate", resource, selector, res.Outcome, res.Reasons)
		}
		return res
	}

	// GFD's 550.163.01 is the driver's driverVersion 550.163.1: a
	// version's leading zeros are not part of semver.
	t.Run("driver version 550.163.01 is 550.163.1", func(t *testing.T) {
		labels := gtLabels(t, "a100")
		devs := gtDevices(t, "a100")
		if labels["nvidia.com/cuda.driver-version.full"] != "550.163.01" || *devs[0].Attributes["driverVersion"].VersionValue != "550.163.1" {
			t.Fatalf("the ground truth changed: %s, %s", labels["nvidia.com/cuda.driver-version.full"], *devs[0].Attributes["driverVersion"].VersionValue)
		}
		res := translateOne(t, "nvidia.com/gpu", map[string]string{"nvidia.com/cuda.driver-version.full": "550.163.01"})
		if !claimMatches(t, res.Template, devs[0]) {
			t.Error("driver-version.full=550.163.01 does not select the driver's 550.163.1")
		}
		if got, _ := p.LegacyLabel("nvidia.com/cuda.driver-version.revision", nil, legacyDevices(devs)); got != p.CanonicalLabelValue("nvidia.com/cuda.driver-version.revision", "01") {
			t.Errorf("revision derives as %q, GFD's 01 is %q", got, p.CanonicalLabelValue("nvidia.com/cuda.driver-version.revision", "01"))
		}
	})

	// GFD's families come from the compute capability (getArchFamily,
	// NVIDIA/k8s-device-plugin internal/lm/resource.go): 8.9 ada-lovelace,
	// 10 and 12 blackwell, 13 rubin. The driver publishes the capability,
	// which the selector compares; no Blackwell or Rubin GPU is in the
	// ground truth, so their devices carry the capability alone.
	t.Run("families ada-lovelace, blackwell, rubin", func(t *testing.T) {
		cc := func(v string) resourceapi.Device {
			return resourceapi.Device{Name: "cc-" + v, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"type": {StringValue: new("gpu")}, "cudaComputeCapability": {VersionValue: new(v)}}}
		}
		all := []string{"7.5.0", "8.0.0", "8.6.0", "8.9.0", "9.0.0", "10.0.0", "10.3.0", "12.0.0", "12.1.0", "13.0.0", "14.0.0"}
		for family, want := range map[string][]string{
			"ada-lovelace": {"8.9.0"},
			"blackwell":    {"10.0.0", "10.3.0", "12.0.0", "12.1.0"},
			"rubin":        {"13.0.0"},
			"hopper":       {"9.0.0"},
		} {
			res := translateOne(t, "nvidia.com/gpu", map[string]string{"nvidia.com/gpu.family": family})
			var got []string
			for _, v := range all {
				if claimMatches(t, res.Template, cc(v)) {
					got = append(got, v)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("gpu.family=%s selects compute capabilities %v, want %v", family, got, want)
			}
			for _, v := range want {
				if got, _ := p.LegacyLabel("nvidia.com/gpu.family", nil, legacyDevices([]resourceapi.Device{cc(v)})); got != family {
					t.Errorf("compute capability %s derives gpu.family %q, GFD says %q", v, got, family)
				}
			}
		}
		l40s := gtDevices(t, "l40s")
		if got, _ := p.LegacyLabel("nvidia.com/gpu.family", nil, legacyDevices(l40s)); got != gtLabels(t, "l40s")["nvidia.com/gpu.family"] {
			t.Errorf("the L40S derives gpu.family %q, GFD says %q", got, gtLabels(t, "l40s")["nvidia.com/gpu.family"])
		}
	})

	// The device plugin and GFD name MIG profiles with "+" as "."
	// (nvidia.com/mig-1g.10gb.me); the driver's profile attribute keeps
	// go-nvlib's "+" (1g.10gb+me). For each profile the driver publishes,
	// the resource GFD names selects exactly its devices, and the legacy
	// view counts them as that resource.
	t.Run("MIG profiles with +me", func(t *testing.T) {
		migs := map[string][]resourceapi.Device{"a100": gtMIGDevices(t, "a100"), "h100": gtMIGDevices(t, "h100")}
		var withMe int
		for _, model := range []string{"a100", "h100"} {
			profiles := map[string]int{}
			for _, d := range migs[model] {
				profiles[*d.Attributes["profile"].StringValue]++
			}
			for _, profile := range slices.Sorted(maps.Keys(profiles)) {
				gfd := gpulabels.GFDProfileOfMIG(profile)
				if gfd != profile {
					withMe++
				}
				res := translateOne(t, "nvidia.com/mig-"+gfd, nil)
				for _, other := range []string{"a100", "h100"} {
					for _, d := range migs[other] {
						want := *d.Attributes["profile"].StringValue == profile
						if got := claimMatches(t, res.Template, d); got != want {
							t.Errorf("nvidia.com/mig-%s matches %s's %s (profile %s): %v, want %v", gfd, other, d.Name, *d.Attributes["profile"].StringValue, got, want)
						}
					}
				}
				rule, ok := p.LegacyResource(corev1.ResourceName("nvidia.com/mig-"+gfd), nil)
				if !ok {
					t.Fatalf("nvidia.com/mig-%s is not a legacy resource", gfd)
				}
				n := 0
				for _, d := range migs[model] {
					sel := make([]resourceapi.DeviceSelector, 0, len(rule.Selectors))
					for _, e := range rule.Selectors {
						sel = append(sel, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
					}
					if deviceMatches(t, rule.DeviceClassName, sel, d) {
						n++
					}
				}
				if n != profiles[profile] {
					t.Errorf("%s: the legacy view counts %d nvidia.com/mig-%s, the driver publishes %d devices of profile %s", model, n, gfd, profiles[profile], profile)
				}
			}
		}
		if withMe != 2 {
			t.Errorf("%d +me profiles in the ground truth, want 2: the A100's 1g.5gb+me and the H100's 1g.10gb+me", withMe)
		}
	})

	// Under GFD's single strategy the product label names the MIG profile
	// as GFD spells it (NVIDIA-H100-80GB-HBM3-MIG-1g.10gb.me). The H100's
	// MIG devices carry the product name GFD labels (the A100 mock's is
	// "Mock NVIDIA A100-SXM4-40GB", which no GFD label gives).
	t.Run("single-strategy product with a +me profile", func(t *testing.T) {
		migs := gtMIGDevices(t, "h100")
		product := gtLabels(t, "h100")["nvidia.com/gpu.product"]
		for _, profile := range []string{"1g.10gb", "1g.10gb+me", "3g.40gb"} {
			var of []resourceapi.Device
			for _, d := range migs {
				if *d.Attributes["profile"].StringValue == profile {
					of = append(of, d)
				}
			}
			label := product + "-MIG-" + gpulabels.GFDProfileOfMIG(profile)
			single := map[string]string{"nvidia.com/mig.strategy": "single"}
			if got, _ := p.LegacyLabel("nvidia.com/gpu.product", single, legacyDevices(of)); got != label {
				t.Errorf("a node of %s slices derives gpu.product %q, GFD writes %q", profile, got, label)
			}
			res := translateOne(t, "nvidia.com/gpu", map[string]string{"nvidia.com/gpu.product": label, "nvidia.com/mig.strategy": "single"})
			for _, d := range migs {
				want := *d.Attributes["profile"].StringValue == profile
				if got := claimMatches(t, res.Template, d); got != want {
					t.Errorf("gpu.product=%s matches %s (profile %s): %v, want %v", label, d.Name, *d.Attributes["profile"].StringValue, got, want)
				}
			}
		}
	})

	// The mock machine makes GFD say mig.capable=true on every GPU, the T4
	// (Turing, no MIG) included. claimbridge does not read MIG devices into
	// that label: it stays on the pod, the request stays a full GPU, and
	// the forecast of a T4 node has no MIG profile.
	t.Run("mig.capable=true on a T4", func(t *testing.T) {
		t4 := gtLabels(t, "t4")
		if t4["nvidia.com/mig.capable"] != "true" || t4["nvidia.com/gpu.family"] != "turing" {
			t.Fatalf("the ground truth changed: %v", t4)
		}
		res := translateOne(t, "nvidia.com/gpu", map[string]string{"nvidia.com/mig.capable": "true"})
		if res.Pod.Spec.NodeSelector["nvidia.com/mig.capable"] != "true" {
			t.Errorf("the label left the pod: %v", res.Pod.Spec.NodeSelector)
		}
		if c := res.Template.Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName; c != "gpu.nvidia.com" {
			t.Errorf("class %s, want gpu.nvidia.com", c)
		}
		if f := p.ForecastDevices("nvidia-mig", t4); f.MIGProfile != "" {
			t.Errorf("a T4 node forecasts MIG profile %q", f.MIGProfile)
		}
		if _, ok := p.LegacyLabel("nvidia.com/mig.capable", nil, legacyDevices(gtMIGDevices(t, "a100"))); ok {
			t.Error("mig.capable derives from MIG devices, which would tie it to them")
		}
	})
}

// TestTimeSlicedLabelsSelectTheSharedDevices holds the sharing vocabulary
// against the vendors' output for one A100 node time-sliced 4 ways: GFD's
// labels with the device plugin's timeSlicing replicas 4
// (gfd-labels-a100-timesliced-4.txt, and -renamed with renameByDefault)
// and the NVIDIA DRA driver v0.5.0's devices with ConsumableShares and
// --consumable-shares=4 (dra-devices-a100-shared.json). A pod that selects
// a time-sliced GPU by any of GFD's sharing labels asks for one share of a
// shared device: its claim matches each of the driver's shared GPUs and
// none of its GPUs without shares; a whole GPU pinned by the plain labels
// (the product alone is enough) matches the GPUs without shares only, and a
// whole GPU without GPU labels the shared ones too, as all 4 shares. The legacy view of the shared devices gives GFD's labels back:
// the -SHARED product to a pod that asks for nvidia.com/gpu, the plain
// product to one that asks for the renamed nvidia.com/gpu.shared.
func TestTimeSlicedLabelsSelectTheSharedDevices(t *testing.T) {
	p := DefaultPolicy()
	shared, plain := gtDevices(t, "a100-shared"), gtDevices(t, "a100")
	if len(shared) != 8 || len(plain) != 8 {
		t.Fatalf("%d shared and %d plain devices, want 8 each", len(shared), len(plain))
	}
	fleet := map[string][]int64{"nvidia-gpu": {4}}
	sliced := gtLabels(t, "a100-timesliced-4")
	for _, key := range []string{"nvidia.com/gpu.product", "nvidia.com/gpu.replicas", "nvidia.com/gpu.sharing-strategy"} {
		t.Run(key+"="+sliced[key], func(t *testing.T) {
			res, err := Pod(Input{Pod: gtPod("nvidia.com/gpu", map[string]string{key: sliced[key]}), Policy: p, Shares: fleet})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != reason.OutcomeTranslate {
				t.Fatalf("%s (%v), want Translate", res.Outcome, res.Reasons)
			}
			e := res.Template.Spec.Spec.Devices.Requests[0].Exactly
			if e == nil || e.Capacity == nil || !quantityIs(e.Capacity.Requests["shares"], 1) {
				t.Fatalf("request %+v, want exactly one share (capacity.requests.shares: 1)", res.Template.Spec.Spec.Devices.Requests[0])
			}
			if _, ok := res.Pod.Spec.NodeSelector[key]; ok {
				t.Errorf("%s stays on the pod", key)
			}
			for _, d := range shared {
				if !claimMatches(t, res.Template, d) {
					t.Errorf("the share does not select the driver's shared %s", d.Name)
				}
			}
			for _, d := range plain {
				if claimMatches(t, res.Template, d) {
					t.Errorf("the share selects %s, which the driver publishes without shares: it would take the whole GPU", d.Name)
				}
			}
		})
	}

	t.Run("a whole GPU pinned by GFD's plain labels", func(t *testing.T) {
		whole := gtLabels(t, "a100")
		sel := map[string]string{}
		for _, k := range []string{"nvidia.com/gpu.product", "nvidia.com/gpu.replicas", "nvidia.com/gpu.sharing-strategy"} {
			sel[k] = whole[k]
		}
		res, err := Pod(Input{Pod: gtPod("nvidia.com/gpu", sel), Policy: p, Shares: fleet})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != reason.OutcomeTranslate {
			t.Fatalf("%s (%v), want Translate", res.Outcome, res.Reasons)
		}
		for _, d := range plain {
			if !claimMatches(t, res.Template, d) {
				t.Errorf("the whole GPU does not select %s", d.Name)
			}
		}
		// replicas=1 and strategy none keep it off shared GPUs entirely.
		for _, d := range shared {
			if claimMatches(t, res.Template, d) {
				t.Errorf("a GPU GFD labels replicas=1 selects the shared %s", d.Name)
			}
		}
	})

	// GFD labels a GPU shared under nvidia.com/gpu with the -SHARED
	// product: the plain product alone keeps the pod off shared GPUs.
	t.Run("a whole GPU pinned by the plain product alone", func(t *testing.T) {
		res, err := Pod(Input{Pod: gtPod("nvidia.com/gpu", map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}), Policy: p, Shares: fleet})
		if err != nil {
			t.Fatal(err)
		}
		if e := res.Template.Spec.Spec.Devices.Requests[0].Exactly; e == nil || e.Capacity != nil {
			t.Fatalf("request %+v, want exactly one GPU without a capacity request", res.Template.Spec.Spec.Devices.Requests[0])
		}
		for _, d := range plain {
			if !claimMatches(t, res.Template, d) {
				t.Errorf("the whole GPU does not select %s", d.Name)
			}
		}
		for _, d := range shared {
			if claimMatches(t, res.Template, d) {
				t.Errorf("a GPU GFD labels with the plain product selects the shared %s", d.Name)
			}
		}
	})

	t.Run("a whole GPU without GPU labels takes all shares of a shared one", func(t *testing.T) {
		res, err := Pod(Input{Pod: gtPod("nvidia.com/gpu", nil), Policy: p, Shares: fleet})
		if err != nil {
			t.Fatal(err)
		}
		subs := res.Template.Spec.Spec.Devices.Requests[0].FirstAvailable
		if len(subs) != 2 {
			t.Fatalf("%d alternatives, want 2 (GPUs without shares, all 4 shares of a shared one)", len(subs))
		}
		if subs[0].Capacity != nil || subs[1].Capacity == nil || !quantityIs(subs[1].Capacity.Requests["shares"], 4) {
			t.Fatalf("alternatives %+v, want no capacity then shares: 4", subs)
		}
		for _, d := range plain {
			if !deviceMatches(t, subs[0].DeviceClassName, subs[0].Selectors, d) || deviceMatches(t, subs[1].DeviceClassName, subs[1].Selectors, d) {
				t.Errorf("%s (no shares) is not served by the first alternative alone", d.Name)
			}
		}
		for _, d := range shared {
			if deviceMatches(t, subs[0].DeviceClassName, subs[0].Selectors, d) || !deviceMatches(t, subs[1].DeviceClassName, subs[1].Selectors, d) {
				t.Errorf("the shared %s is not served by the all-shares alternative alone", d.Name)
			}
		}
	})

	t.Run("MPS", func(t *testing.T) {
		mps := gtLabels(t, "a100-mps-4")
		for _, key := range []string{"nvidia.com/gpu.sharing-strategy", "nvidia.com/mps.capable"} {
			res, err := Pod(Input{Pod: gtPod("nvidia.com/gpu", map[string]string{key: mps[key]}), Policy: p, Shares: fleet})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != reason.OutcomeKeepLegacy || res.Reasons[len(res.Reasons)-1].Code != ReasonSharedMPSNotMapped {
				t.Errorf("%s=%s: %s (%v), want KeepLegacy for SharedMPSNotMapped", key, mps[key], res.Outcome, res.Reasons)
			}
		}
	})

	back := func(t *testing.T, labels map[string]string, plainShares map[string]bool) {
		t.Helper()
		derived := 0
		for _, key := range slices.Sorted(maps.Keys(labels)) {
			if !p.KnowsLabel(key) {
				continue
			}
			got, ok := p.LegacyLabelOfShares(key, map[string]string{}, legacyDevices(shared), plainShares)
			if !ok {
				t.Errorf("%s does not derive from the shared devices (GFD says %s)", key, labels[key])
				continue
			}
			derived++
			if want := p.CanonicalLabelValue(key, labels[key]); got != want {
				t.Errorf("%s derives as %q, GFD says %q (canonical %q)", key, got, labels[key], want)
			}
		}
		if derived < 20 {
			t.Errorf("only %d labels derive back", derived)
		}
	}
	t.Run("the legacy view of shares asked as nvidia.com/gpu", func(t *testing.T) {
		back(t, sliced, map[string]bool{"nvidia-gpu": true})
	})
	t.Run("the legacy view of shares asked as nvidia.com/gpu.shared", func(t *testing.T) {
		back(t, gtLabels(t, "a100-timesliced-4-renamed"), nil)
	})
}

func quantityIs(q resource.Quantity, n int64) bool {
	return q.Cmp(*resource.NewQuantity(n, resource.DecimalSI)) == 0
}

// TestLegacySharesOfWholeAndSharedGPUs: a pod that asks for nvidia.com/gpu
// meets a shared GPU only where the device plugin offers it under that
// name (time-slicing without renaming), which GFD labels with the -SHARED
// product: LegacyShares names its family plain whatever it selects, so the
// legacy view gives a shared GPU that product; it counts in shares only
// where the pod selects shared GPUs. A pod that asks for the renamed
// nvidia.com/gpu.shared meets the plain product.
func TestLegacySharesOfWholeAndSharedGPUs(t *testing.T) {
	p := DefaultPolicy()
	for name, tc := range map[string]struct {
		resource               string
		selector               map[string]string
		wantShares, wantPlains map[string]bool
	}{
		"a whole GPU by its plain product": {resource: "nvidia.com/gpu", selector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"},
			wantShares: map[string]bool{"nvidia-gpu": false}, wantPlains: map[string]bool{"nvidia-gpu": true}},
		"a whole GPU of any kind": {resource: "nvidia.com/gpu",
			wantShares: map[string]bool{"nvidia-gpu": false}, wantPlains: map[string]bool{"nvidia-gpu": true}},
		"a share by the -SHARED product": {resource: "nvidia.com/gpu", selector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-SHARED"},
			wantShares: map[string]bool{"nvidia-gpu": true}, wantPlains: map[string]bool{"nvidia-gpu": true}},
		"a share of the renamed resource": {resource: "nvidia.com/gpu.shared",
			wantShares: map[string]bool{"nvidia-gpu": true}, wantPlains: map[string]bool{}},
	} {
		t.Run(name, func(t *testing.T) {
			shares, plain := p.LegacyShares(gtPod(tc.resource, tc.selector))
			if diff := cmp.Diff(tc.wantShares, shares); diff != "" {
				t.Errorf("shares (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPlains, plain); diff != "" {
				t.Errorf("plain (-want,+got):\n%s", diff)
			}
		})
	}
}
