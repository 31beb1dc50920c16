package translate

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

func TestLoadPolicyRejectsBadInputWithFieldPaths(t *testing.T) {
	const head = "apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\n"
	cases := map[string]struct {
		yaml     string
		wantErrs []string
	}{
		"unknown field is rejected": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  bogus: true\n",
			wantErrs: []string{`unknown field "spec.bogus"`},
		},
		"placement true names no rule": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  placement: true\n",
			wantErrs: []string{`spec.placement: Unsupported value: "true"`, `"Exact", "Subset", "Off"`},
		},
		"placement rule misspelled": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  placement: exact\n",
			wantErrs: []string{`spec.placement: Unsupported value: "exact"`},
		},
		"onUnservable misspelled": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  onUnservable: deny\n",
			wantErrs: []string{`spec.onUnservable: Unsupported value: "deny"`, `"Admit", "Deny"`},
		},
		"whenDRABusy misspelled": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  whenDRABusy: wait\n",
			wantErrs: []string{`spec.whenDRABusy: Unsupported value: "wait"`, `"KeepLegacy", "Wait"`},
		},
		"autoscaling: a pool label that is no label key": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  autoscaling:\n    poolLabels: [karpenter.sh/nodepool, \"not a key\"]\n",
			wantErrs: []string{`spec.autoscaling.poolLabels[1]: Invalid value: "not a key"`},
		},
		"autoscaling: a pool label twice": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  autoscaling:\n    poolLabels: [eks.amazonaws.com/nodegroup, eks.amazonaws.com/nodegroup]\n",
			wantErrs: []string{`spec.autoscaling.poolLabels[1]: Duplicate value: "eks.amazonaws.com/nodegroup"`},
		},
		"autoscaling: pool labels of autoscalers that provision for claims": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  autoscaling:\n    draAware: true\n    poolLabels: [karpenter.sh/nodepool]\n",
			wantErrs: []string{`spec.autoscaling.poolLabels: Invalid value`, "must be empty when draAware is true"},
		},
		"autoscaling: draAware misspelled": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  autoscaling:\n    draaware: true\n",
			wantErrs: []string{`unknown field "spec.autoscaling.draaware"`},
		},
		"wrong kind and version": {
			yaml:     "apiVersion: v1\nkind: ConfigMap\nspec:\n  profiles: [nvidia]\n",
			wantErrs: []string{"apiVersion: Unsupported value", "kind: Unsupported value"},
		},
		"unknown profile": {
			yaml:     head + "spec:\n  profiles: [nvidia, cuda]\n",
			wantErrs: []string{`spec.profiles[1]: Unsupported value: "cuda"`},
		},
		"empty policy": {
			yaml:     head + "spec: {}\n",
			wantErrs: []string{"spec.resources: Required value"},
		},
		"resource without a domain": {
			yaml:     head + "spec:\n  resources:\n  - name: gpu\n    family: g\n    deviceClassName: c\n",
			wantErrs: []string{"spec.resources[0].name: Invalid value"},
		},
		"two wildcards in a resource": {
			yaml:     head + "spec:\n  resources:\n  - name: a.com/*x*\n    family: g\n    deviceClassName: c\n",
			wantErrs: []string{"spec.resources[0].name: Invalid value", "trailing"},
		},
		"missing family and class": {
			yaml:     head + "spec:\n  resources:\n  - name: a.com/x\n",
			wantErrs: []string{"spec.resources[0].family: Required value", "spec.resources[0].deviceClassName: Required value"},
		},
		"suffix attribute on an exact name": {
			yaml:     head + "spec:\n  resources:\n  - name: a.com/x\n    family: g\n    deviceClassName: c\n    suffixAttribute: a.com/profile\n",
			wantErrs: []string{"spec.resources[0].suffixAttribute: Forbidden"},
		},
		"suffix conversion without a suffix attribute": {
			yaml:     head + "spec:\n  resources:\n  - name: a.com/x*\n    family: g\n    deviceClassName: c\n    suffixConversion: GFDMIGProfile\n",
			wantErrs: []string{"spec.resources[0].suffixConversion: Forbidden"},
		},
		"a whole-node count that is not a qualified attribute": {
			yaml:     head + "spec:\n  resources:\n  - name: a.com/x\n    family: g\n    deviceClassName: c\n    wholeNodeCount: chipCount\n",
			wantErrs: []string{"spec.resources[0].wholeNodeCount: Invalid value"},
		},
		"unknown suffix conversion": {
			yaml:     head + "spec:\n  resources:\n  - name: a.com/x*\n    family: g\n    deviceClassName: c\n    suffixAttribute: a.com/profile\n    suffixConversion: PlusAsDot\n",
			wantErrs: []string{"spec.resources[0].suffixConversion: Unsupported value"},
		},
		"partition rule without a member attribute, sizes repeated or zero": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  partitions:\n  - name: fm\n    families: [nvidia-gpu]\n    attributePrefix: gpu.nvidia.com/partition\n    sizes: [2, 2, 0]\n",
			wantErrs: []string{"spec.partitions[0].memberAttribute: Required value", "spec.partitions[0].sizes[1]: Duplicate value", "spec.partitions[0].sizes[2]: Invalid value"},
		},
		"attribute without a domain": {
			yaml:     head + "spec:\n  resources:\n  - name: a.com/x*\n    family: g\n    deviceClassName: c\n    suffixAttribute: profile\n",
			wantErrs: []string{"spec.resources[0].suffixAttribute: Invalid value", "fully qualified"},
		},
		"selector operator and values": {
			yaml:     head + "spec:\n  resources:\n  - name: a.com/x\n    family: g\n    deviceClassName: c\n    selectors:\n    - attribute: a.com/n\n      operator: Gt\n      values: [\"1\", \"2\"]\n    - attribute: a.com/m\n      type: Int\n      values: [abc]\n",
			wantErrs: []string{"spec.resources[0].selectors[0].values: Invalid value", "spec.resources[0].selectors[0].operator: Invalid value", "spec.resources[0].selectors[1].values[0]: Invalid value", "not an integer"},
		},
		"config parameters must be an object": {
			yaml:     head + "spec:\n  resources:\n  - name: a.com/x\n    family: g\n    deviceClassName: c\n    config:\n    - driver: a.com\n      parameters: 3\n",
			wantErrs: []string{"spec.resources[0].config[0].parameters: Invalid value"},
		},
		"label rule with an unknown conversion": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  nodeLabels:\n  - key: a.com/l\n    families: [nvidia-gpu]\n    conversion: Magic\n",
			wantErrs: []string{"spec.nodeLabels[0].conversion: Unsupported value"},
		},
		"label rule that needs an attribute": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  nodeLabels:\n  - key: a.com/l\n    families: [nvidia-gpu]\n    conversion: String\n",
			wantErrs: []string{"spec.nodeLabels[0].attribute: Required value"},
		},
		"label rule for an unknown family": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  nodeLabels:\n  - key: a.com/l\n    families: [nvidia-gpus]\n    conversion: Implied\n",
			wantErrs: []string{`spec.nodeLabels[0].families[0]: Not found: "nvidia-gpus"`},
		},
		"map conversion without a table": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  nodeLabels:\n  - key: a.com/l\n    families: [nvidia-gpu]\n    conversion: Map\n    attribute: gpu.nvidia.com/productName\n",
			wantErrs: []string{"spec.nodeLabels[0].values: Required value"},
		},
		"alignment rule mode": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  alignment:\n  - name: x\n    families: [nvidia-gpu, nvidia-gpu]\n    attribute: resource.kubernetes.io/pcieRoot\n    mode: Sometimes\n",
			wantErrs: []string{"spec.alignment[0].mode: Unsupported value", "spec.alignment[0].families[1]: Duplicate value"},
		},
		"alignment rule for an unknown family": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  alignment:\n  - name: x\n    families: [nvidia-gpu, nic]\n    attribute: resource.kubernetes.io/pcieRoot\n",
			wantErrs: []string{`spec.alignment[0].families[1]: Not found: "nic"`},
		},
		"fallback to an unknown resource": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  fallbacks:\n  - name: f\n    match: {resource: nvidia.com/gpu}\n    alternatives:\n    - resource: example.com/gpu\n",
			wantErrs: []string{`spec.fallbacks[0].alternatives[0].resource: Not found: "example.com/gpu"`},
		},
		"fallback alternative that changes nothing": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  fallbacks:\n  - name: f\n    match: {resource: nvidia.com/gpu}\n    alternatives:\n    - countMultiplier: 1\n",
			wantErrs: []string{"spec.fallbacks[0].alternatives[0]: Invalid value"},
		},
		"scheduler names": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  schedulers: [default-scheduler, Volcano, \"\", default-scheduler]\n",
			wantErrs: []string{"spec.schedulers[1]: Invalid value", "spec.schedulers[2]: Required value", "spec.schedulers[3]: Duplicate value"},
		},
		"scheduler entries": {
			yaml: head + "spec:\n  profiles: [nvidia]\n  schedulers:\n  - name: volcano\n    output: Partial\n  - name: kai-scheduler\n    classNameContains:\n    - {resources: [], value: \"\"}\n    - {resources: [gpu, \"a.com/*x*\"], value: gpu}\n  - {output: Full}\n",
			wantErrs: []string{"spec.schedulers[0].output: Unsupported value", "spec.schedulers[1].classNameContains[0].resources: Required value",
				"spec.schedulers[1].classNameContains[0].value: Required value", "spec.schedulers[1].classNameContains[1].resources[0]: Invalid value",
				"spec.schedulers[1].classNameContains[1].resources[1]: Invalid value", "spec.schedulers[2].name: Required value"},
		},
		"scheduler entry with an unknown field": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  schedulers:\n  - {name: volcano, outptu: Full}\n",
			wantErrs: []string{"decode policy", "outptu"},
		},
		"kueue output Full and bad mappings": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  kueue:\n    output: Full\n    deviceClassMappings:\n    - {name: \"\", deviceClassNames: []}\n    - {name: example.com/gpu, deviceClassNames: [Bad_Class]}\n",
			wantErrs: []string{"spec.kueue.output: Invalid value", "firstAvailable", "spec.kueue.deviceClassMappings[0].name: Required value", "spec.kueue.deviceClassMappings[0].deviceClassNames: Required value", "spec.kueue.deviceClassMappings[1].deviceClassNames[0]: Invalid value"},
		},
		"kueue output unknown": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  kueue: {output: Exactly}\n",
			wantErrs: []string{"spec.kueue.output: Unsupported value"},
		},
		"capacityOf rule with its own family and class": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  resources:\n  - name: nvidia.com/gpumem\n    capacityOf: nvidia.com/gpu\n    capacity: memory\n    family: g\n    deviceClassName: c\n",
			wantErrs: []string{"spec.resources[0].family: Forbidden", "spec.resources[0].deviceClassName: Forbidden"},
		},
		"capacityOf rule without a capacity, with a bad unit": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  resources:\n  - name: nvidia.com/gpumem\n    capacityOf: nvidia.com/gpu\n    unit: \"-1\"\n    absentValue: \"-2\"\n",
			wantErrs: []string{"spec.resources[0].capacity: Required value", "spec.resources[0].unit: Invalid value", "spec.resources[0].absentValue: Invalid value"},
		},
		"capacityOf a resource no rule maps": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  resources:\n  - name: example.com/mem\n    capacityOf: example.com/gpu\n    capacity: memory\n",
			wantErrs: []string{"spec.resources[0].capacityOf: Invalid value", "no resource rule maps it"},
		},
		"capacityOf a shared resource": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  resources:\n  - name: nvidia.com/gpumem\n    capacityOf: nvidia.com/gpu.shared\n    capacity: memory\n",
			wantErrs: []string{"spec.resources[0].capacityOf: Invalid value", "device-count rule"},
		},
		"capacity name that is not a qualified name": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  resources:\n  - name: nvidia.com/gpumem\n    capacityOf: nvidia.com/gpu\n    capacity: mem-ory\n",
			wantErrs: []string{"spec.resources[0].capacity: Invalid value", "C identifier"},
		},
		"sharing on a resource that is not shared": {
			yaml:     head + "spec:\n  resources:\n  - name: a.com/x\n    family: g\n    deviceClassName: c\n    sharing: {mode: ConsumableCapacity}\n",
			wantErrs: []string{"spec.resources[0].sharing: Forbidden"},
		},
		"sharing modes": {
			yaml: head + "spec:\n  resources:\n  - name: a.com/x\n    family: g\n    deviceClassName: c\n    shared: true\n    sharing: {mode: TimeSlicing}\n" +
				"  - name: a.com/y\n    family: g\n    deviceClassName: c\n    shared: true\n    sharing: {mode: ClaimConfig}\n" +
				"  - name: a.com/z\n    family: g\n    deviceClassName: c\n    shared: true\n    config:\n    - driver: a.com\n      parameters: {kind: GpuConfig}\n" +
				"  - name: a.com/w\n    family: g\n    deviceClassName: c\n    shared: true\n    sharing: {mode: ConsumableCapacity, capacityRequests: {\"bad name\": \"1\"}}\n",
			wantErrs: []string{"spec.resources[0].sharing.mode: Unsupported value", "spec.resources[1].config: Required value",
				"spec.resources[2].sharing.mode: Required value", "spec.resources[3].sharing.capacityRequests[bad name]: Invalid value"},
		},
		"consumable shares: no shares, too many, not positive, twice": {
			yaml: head + "spec:\n  profiles: [nvidia]\n  consumableShares:\n  - families: [nvidia-gpu]\n  - families: [nvidia-mig]\n    shares: [1, 2, 3, 4, 5, 6, 7, 8]\n" +
				"  - families: [nvidia-gpu, x]\n    shares: [0, 4, 4]\n",
			wantErrs: []string{"spec.consumableShares[0].shares: Required value", "spec.consumableShares[1].shares: Too many: 8: must have at most 7 items",
				"spec.consumableShares[2].families[0]: Duplicate value", "spec.consumableShares[2].shares[0]: Invalid value: 0: must be at least 1",
				"spec.consumableShares[2].shares[2]: Duplicate value: 4"},
		},
		"consumable shares of a family without a share capacity, or unknown": {
			yaml:     head + "spec:\n  profiles: [nvidia, tpu]\n  consumableShares:\n  - families: [google-tpu, nope]\n    shares: [4]\n",
			wantErrs: []string{"spec.consumableShares[0].families[0]: Invalid value: \"google-tpu\": no shareCapacities rule", "spec.consumableShares[0].families[1]: Not found: \"nope\""},
		},
		"memory shares: out of range, twice, a memory capacity not qualified": {
			yaml: head + "spec:\n  profiles: [nvidia, tpu]\n  shareCapacities:\n  - families: [nvidia-mig]\n    capacity: gpu.nvidia.com/shares\n    memory: memory\n" +
				"  memoryShares:\n  - families: [nvidia-gpu]\n    shares: 0\n  - families: [nvidia-gpu, google-tpu, nope]\n    shares: 65\n",
			wantErrs: []string{"spec.shareCapacities[0].memory: Invalid value", "spec.memoryShares[0].shares: Invalid value: 0: must be 1 to 64",
				"spec.memoryShares[1].families[0]: Duplicate value", "spec.memoryShares[1].shares: Invalid value: 65"},
		},
		"memory shares of a family without a memory capacity, or unknown": {
			yaml:     head + "spec:\n  profiles: [nvidia, tpu]\n  memoryShares:\n  - families: [nvidia-gpu, google-tpu, nope]\n    shares: 4\n",
			wantErrs: []string{"spec.memoryShares[0].families[1]: Invalid value: \"google-tpu\": no shareCapacities rule names the memory capacity", "spec.memoryShares[0].families[2]: Not found: \"nope\""},
		},
		"share capacity not qualified": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  shareCapacities:\n  - families: [nvidia-gpu]\n    capacity: shares\n",
			wantErrs: []string{"spec.shareCapacities[0].capacity: Invalid value"},
		},
		"share capacity of an unknown family": {
			yaml:     head + "spec:\n  profiles: [nvidia]\n  shareCapacities:\n  - families: [nope]\n    capacity: a.com/shares\n",
			wantErrs: []string{"spec.shareCapacities[0].families[0]: Not found"},
		},
		"ConsumableShares with capacity requests and config": {
			yaml: head + "spec:\n  resources:\n  - name: a.com/x\n    family: g\n    deviceClassName: c\n    shared: true\n" +
				"    config:\n    - driver: a.com\n      parameters: {kind: GpuConfig}\n    sharing: {mode: ConsumableShares, capacityRequests: {shares: \"1\"}}\n",
			wantErrs: []string{"spec.resources[0].sharing.capacityRequests: Forbidden", "spec.resources[0].config: Forbidden"},
		},
		"ConsumableShares on a family without a share capacity": {
			yaml:     head + "spec:\n  resources:\n  - name: a.com/x\n    family: g\n    deviceClassName: c\n    shared: true\n    sharing: {mode: ConsumableShares}\n",
			wantErrs: []string{"spec.resources[0].sharing.mode: Invalid value: \"ConsumableShares\": family g has no share capacity"},
		},
		"not YAML": {
			yaml:     "{{{",
			wantErrs: []string{"decode policy"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadPolicy([]byte(tc.yaml))
			if err == nil {
				t.Fatal("policy was accepted")
			}
			for _, want := range tc.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestLoadPolicyAcceptsAndMerges(t *testing.T) {
	p, err := LoadPolicy([]byte(`apiVersion: claimbridge.io/v1alpha1
kind: TranslationPolicy
metadata:
  name: site
spec:
  profiles: [nvidia, rdma]
  resources:
  - name: rdma/hca
    family: rdma-nic
    deviceClassName: site-rdma
    requestName: nic
`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "site" {
		t.Errorf("name %q", p.Name())
	}
	rule, _, ok := p.resourceRule("rdma/hca")
	if !ok || rule.DeviceClassName != "site-rdma" {
		t.Errorf("the policy's own rule must win over the profile's pattern: %+v", rule)
	}
	rule, suffix, ok := p.resourceRule("rdma/other")
	if !ok || rule.DeviceClassName != "dranet-rdma" || suffix != "other" {
		t.Errorf("pattern rule: %+v %q", rule, suffix)
	}
	if diff := cmp.Diff([]string{"nvidia-gpu", "nvidia-mig", "rdma-nic"}, p.Families()); diff != "" {
		t.Errorf("families (-want,+got):\n%s", diff)
	}
}

// An unquoted Off is false in YAML 1.1; it means the rule Off, as written.
func TestLoadPolicyPlacementOffUnquoted(t *testing.T) {
	for _, v := range []string{"Off", `"Off"`, "off", "Subset"} {
		p, err := LoadPolicy([]byte("apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nspec:\n  profiles: [nvidia]\n  placement: " + v + "\n"))
		if err != nil {
			t.Fatalf("placement: %s: %v", v, err)
		}
		want := v1alpha1.PlacementOff
		if v == "Subset" {
			want = v1alpha1.PlacementSubset
		}
		if got := p.spec.Placement; got != want {
			t.Errorf("placement: %s read as %q, want %q", v, got, want)
		}
	}
}

// The rules for busy and unservable pods are the policy's own: they stay
// through the merge with the profiles.
func TestLoadPolicyKeepsItsRulesForPodsDRACannotServeNow(t *testing.T) {
	p, err := LoadPolicy([]byte("apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nspec:\n  profiles: [nvidia]\n  whenDRABusy: Wait\n  onUnservable: Deny\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Spec().WhenDRABusy; got != v1alpha1.WhenDRABusyWait {
		t.Errorf("whenDRABusy read as %q, want Wait", got)
	}
	if got := p.Spec().OnUnservable; got != v1alpha1.OnUnservableDeny {
		t.Errorf("onUnservable read as %q, want Deny", got)
	}
}

// The autoscaling rule: Karpenter's NodePool label by default, the
// policy's own labels in its place, none once the autoscalers provision
// for claims.
func TestAutoscaledPoolLabels(t *testing.T) {
	const head = "apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nspec:\n  profiles: [nvidia]\n"
	for name, tc := range map[string]struct {
		yaml string
		want []string
	}{
		"by default a node labelled with its Karpenter NodePool is in an autoscaled pool": {yaml: head, want: []string{"karpenter.sh/nodepool"}},
		"pool labels replace the default": {
			yaml: head + "  autoscaling:\n    poolLabels: [eks.amazonaws.com/nodegroup]\n",
			want: []string{"eks.amazonaws.com/nodegroup"},
		},
		"autoscalers that provision for claims leave no pool autoscaled": {yaml: head + "  autoscaling:\n    draAware: true\n"},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := LoadPolicy([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, p.AutoscaledPoolLabels()); diff != "" {
				t.Errorf("pool labels (-want,+got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff([]string{v1alpha1.KarpenterNodePoolLabel}, DefaultPolicy().AutoscaledPoolLabels()); diff != "" {
		t.Errorf("the default policy's pool labels (-want,+got):\n%s", diff)
	}
}

func TestBuiltinProfiles(t *testing.T) {
	for _, name := range v1alpha1.ProfileNames() {
		t.Run(name, func(t *testing.T) {
			// Profiles may refer to families of other profiles; alone they
			// still load.
			if _, err := ProfilePolicy(name); err != nil {
				t.Fatalf("profile %s: %v", name, err)
			}
		})
	}
	want := []string{"nvidia", "amd", "gke", "intel", "nfd", "rdma", "tpu"} // not dra-cpu, hami
	if diff := cmp.Diff(want, v1alpha1.DefaultProfileNames()); diff != "" {
		t.Errorf("default profiles (-want,+got):\n%s", diff)
	}
	if slices.Contains(v1alpha1.DefaultProfileNames(), "dra-cpu") || slices.Contains(v1alpha1.DefaultProfileNames(), "hami") {
		t.Error("dra-cpu and hami must be opt-in")
	}
	if _, err := v1alpha1.ProfileSource("nope"); err == nil {
		t.Error("unknown profile accepted")
	}
}

func TestPolicyDefaultsOfTheStrandingRules(t *testing.T) {
	def := DefaultPolicy()
	if diff := cmp.Diff([]string{v1alpha1.DefaultScheduler}, def.Schedulers()); diff != "" {
		t.Errorf("default schedulers (-want,+got):\n%s", diff)
	}
	if it := def.Spec().ImplicitTolerations; it != nil || def.ImplicitTolerations() || def.ImplicitTolerationsSaid() {
		t.Error("the default policy says nothing about the cluster's admission: implicit tolerations must be unset")
	}
	gke, err := ProfilePolicy(v1alpha1.DefaultProfileNames()...)
	if err != nil {
		t.Fatal(err)
	}
	if !gke.ImplicitTolerations() {
		t.Error("a policy that names the gke and tpu profiles says the cluster runs ExtendedResourceToleration: implicit tolerations must be on")
	}
	tpu, err := ProfilePolicy("tpu")
	if err != nil {
		t.Fatal(err)
	}
	if !tpu.ImplicitTolerations() {
		t.Error("the tpu profile turns implicit tolerations on")
	}
	nv, err := ProfilePolicy("nvidia")
	if err != nil {
		t.Fatal(err)
	}
	if it := nv.Spec().ImplicitTolerations; it != nil || nv.ImplicitTolerationsSaid() {
		t.Error("without the gke and tpu profiles implicit tolerations must be unset")
	}
	off, err := LoadPolicy([]byte("apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nspec:\n  profiles: [nvidia, gke]\n  implicitTolerations: false\n  schedulers: [volcano]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if it := off.Spec().ImplicitTolerations; it == nil || *it || !off.ImplicitTolerationsSaid() {
		t.Error("the policy's own implicitTolerations: false must win over the gke profile")
	}
	if diff := cmp.Diff([]string{"volcano"}, off.Schedulers()); diff != "" {
		t.Errorf("schedulers (-want,+got):\n%s", diff)
	}
	hami, err := ProfilePolicy("nvidia", "hami")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nvidia.com/gpumem", "nvidia.com/gpucores"} {
		r, _, ok := hami.resourceRule(name)
		if !ok || r.Family != "hami-gpu" || r.DeviceClassName != "hami-core-gpu.project-hami.io" {
			t.Errorf("%s: the capacityOf rule must take the family and class of nvidia.com/gpu: %+v", name, r)
		}
	}
	if r, _, _ := hami.resourceRule("nvidia.com/gpu"); r.DeviceClassName != "hami-core-gpu.project-hami.io" {
		t.Errorf("hami after nvidia must map nvidia.com/gpu to HAMi's class, got %s", r.DeviceClassName)
	}
}
