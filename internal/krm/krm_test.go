package krm

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func resourceList(t *testing.T, functionConfig string, files ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n")
	if functionConfig != "" {
		b.WriteString("functionConfig:\n" + indent(functionConfig))
	}
	b.WriteString("items:\n")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			b.WriteString("- " + strings.TrimPrefix(indent(doc), "  "))
		}
	}
	return b.String()
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

func execute(t *testing.T, input string) (*yaml.RNode, error) {
	t.Helper()
	var out bytes.Buffer
	err := framework.Execute(Processor(t.Context()), &kio.ByteReadWriter{Reader: strings.NewReader(input), Writer: &out, KeepReaderAnnotations: true})
	rl, perr := yaml.Parse(out.String())
	if perr != nil {
		t.Fatalf("output is not YAML: %v\n%s", perr, out.String())
	}
	return rl, err
}

func TestFunction(t *testing.T) {
	cases := map[string]struct {
		functionConfig string
		files          []string
		wantErr        bool
		wantTemplates  int
		wantItem       string   // text in the output items
		wantResults    []string // "severity field: message prefix"
	}{
		"a RayCluster's worker groups are translated; the head has nothing to translate": {
			files:         []string{"../../examples/crds/raycluster.yaml"},
			wantTemplates: 2,
			wantResults: []string{
				"info spec.workerGroupSpecs[0].template: Translate",
				"info spec.workerGroupSpecs[1].template: Translate",
			},
		},
		// The PyTorchJob is Kueue-managed: the policy names the class Kueue maps.
		"a TranslationPolicy as functionConfig: GPUs only, the NIC stays a device-plugin resource": {
			functionConfig: "apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nmetadata: {name: gpus-only}\n" +
				"spec: {profiles: [nvidia], kueue: {deviceClassMappings: [{name: nvidia.com/gpu, deviceClassNames: [gpu.nvidia.com]}]}}\n",
			files:         []string{"../../examples/crds/pytorchjob.yaml"},
			wantTemplates: 1,
			wantItem:      "rdma/hca: 1",
			wantResults: []string{
				"info spec.pytorchReplicaSpecs.Master.template: Translate: TopologyAlignmentLost: spec.containers[0].resources.limits[rdma/hca]: rdma/hca stays on its device plugin while the pod's devices (nvidia.com/gpu) move to a claim",
				"info spec.pytorchReplicaSpecs.Worker.template: Translate",
			},
		},
		"a ConfigMap names profiles; failOn makes an Unsupported TrainJob and a torch runtime its operator sizes from the GPUs errors": {
			functionConfig: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: claimbridge}\ndata: {profiles: nvidia, failOn: untranslatable}\n",
			files:          []string{"../../examples/crds/trainjob.yaml"},
			wantErr:        true,
			wantTemplates:  0,
			wantResults: []string{
				"error spec.template.spec.replicatedJobs[0].template.spec.template: KeepLegacy: OperatorReadsLimit",
				"error : KeepLegacy: Unsupported",
			},
		},
		"an unknown functionConfig key is an error result": {
			functionConfig: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: claimbridge}\ndata: {profile: nvidia}\n",
			files:          []string{"../../examples/crds/raycluster.yaml"},
			wantErr:        true,
			wantResults:    []string{"error : functionConfig: data.profile: unknown key"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rl, err := execute(t, resourceList(t, tc.functionConfig, tc.files...))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			items, _ := rl.Pipe(yaml.Lookup("items"))
			elems, _ := items.Elements()
			templates := 0
			for _, e := range elems {
				if e.GetKind() == "ResourceClaimTemplate" {
					templates++
				}
			}
			if templates != tc.wantTemplates {
				t.Errorf("%d templates in the items, want %d", templates, tc.wantTemplates)
			}
			var results []framework.Result
			if r, _ := rl.Pipe(yaml.Lookup("results")); r != nil {
				if err := r.Document().Decode(&results); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, r := range results {
				f := ""
				if r.Field != nil {
					f = r.Field.Path
				}
				got = append(got, string(r.Severity)+" "+f+": "+r.Message)
			}
			if len(got) != len(tc.wantResults) {
				t.Fatalf("results %q, want %q", got, tc.wantResults)
			}
			for i, w := range tc.wantResults {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("result %d: %q, want prefix %q", i, got[i], w)
				}
			}
			if tc.wantItem != "" && !strings.Contains(items.MustString(), tc.wantItem) {
				t.Errorf("the items do not hold %q", tc.wantItem)
			}
			for _, r := range results {
				if r.Severity != framework.Error && (r.ResourceRef == nil || r.ResourceRef.Kind == "" || r.ResourceRef.Name == "") {
					t.Errorf("result without resourceRef: %+v", r)
				}
			}
		})
	}
}

// TestFunctionIdempotent: the function's output, run again, is unchanged.
func TestFunctionIdempotent(t *testing.T) {
	in := resourceList(t, "", "../../examples/crds/leaderworkerset.yaml", "../../examples/crds/inferenceservice.yaml")
	first, err := execute(t, in)
	if err != nil {
		t.Fatal(err)
	}
	_ = first.PipeE(yaml.Clear("results"))
	again, err := execute(t, first.MustString())
	if err != nil {
		t.Fatal(err)
	}
	_ = again.PipeE(yaml.Clear("results"))
	if first.MustString() != again.MustString() {
		t.Errorf("second run changed the items:\n%s\n---\n%s", first.MustString(), again.MustString())
	}
}
