package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

func run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func exitCode(err error) int {
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitInvalid
}

func TestTranslateExamples(t *testing.T) {
	out, err := run(t, "", "translate", "-f", "../../../examples/workloads")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := manifest.Read([]string{"-"}, strings.NewReader(out))
	if err != nil {
		t.Fatalf("output is not valid manifests: %v", err)
	}
	kinds := map[string]int{}
	for _, d := range docs {
		kinds[d.Object.GetObjectKind().GroupVersionKind().Kind]++
	}
	// Five templates: the training Job's rdma/hca (the RDMA shared device
	// plugin's) is a shared NIC, which the default policy keeps legacy, and
	// the embeddings' GPU shares stay as submitted without a fleet that
	// says how GPUs are shared.
	if kinds["ResourceClaimTemplate"] != 5 || kinds["Deployment"] != 3 || kinds["ConfigMap"] != 1 {
		t.Errorf("kinds in the output: %v", kinds)
	}
	// The output translated again changes nothing but dropping nothing.
	again, err := run(t, out, "translate", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	if again != out {
		t.Error("translating the output again changed it")
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badPolicy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(badPolicy, []byte("apiVersion: claimbridge.io/v1alpha1\nkind: TranslationPolicy\nspec:\n  profiles: [nvidia]\n  alignment:\n  - {name: x, families: [nope], attribute: a.com/b}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args     []string
		wantCode int
		wantText string
	}{
		"unknown flag is a usage error":            {args: []string{"translate", "--nope"}, wantCode: 2},
		"no input is a usage error":                {args: []string{"translate"}, wantCode: 2, wantText: "no input"},
		"bad output format is a usage error":       {args: []string{"translate", "-f", bad, "-o", "xml"}, wantCode: 2},
		"invalid manifest names file and document": {args: []string{"translate", "-f", bad}, wantCode: 1, wantText: "bad.yaml#0"},
		"invalid policy names the field":           {args: []string{"translate", "-f", bad, "--policy", badPolicy}, wantCode: 1, wantText: "spec.alignment[0].families[0]"},
		"audit needs a fleet":                      {args: []string{"audit", "-f", "../../../examples/workloads"}, wantCode: 2, wantText: "--fleet"},
		"fail-on never-fits":                       {args: []string{"audit", "-f", "../../../examples/workloads", "--fleet", "../../../examples/fleets/mixed", "--fail-on", "never-fits"}, wantCode: 1},
		"fail-on passes when all fit":              {args: []string{"audit", "-f", "../../../examples/workloads/inference-l4.yaml", "--fleet", "../../../examples/fleets/mixed", "--fail-on", "never-fits,untranslatable"}, wantCode: 0},
		"policy check":                             {args: []string{"policy", "check", badPolicy}, wantCode: 1, wantText: "Not found"},
		"unknown profile":                          {args: []string{"policy", "show", "cuda"}, wantCode: 2},
		"a Kueue workload translates with Kueue's mappings": {args: []string{"explain", "-f", "../../../examples/crds/appwrapper.yaml", "--kueue-config", "../../../examples/kueue/configuration.yaml"},
			wantText: "appwrapper.yaml#0): Translate"},
		"a Kueue workload stays without them":      {args: []string{"explain", "-f", "../../../examples/crds/appwrapper.yaml"}, wantText: "KueueClassNotMapped"},
		"a bad Kueue configuration names the file": {args: []string{"translate", "-f", bad, "--kueue-config", badPolicy}, wantCode: 1, wantText: "not a Kueue Configuration"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, "", tc.args...)
			if got := exitCode(err); got != tc.wantCode {
				t.Errorf("exit code %d, want %d (err %v)", got, tc.wantCode, err)
			}
			text := out
			if err != nil {
				text += err.Error()
			}
			if !strings.Contains(text, tc.wantText) {
				t.Errorf("output %q does not mention %q", text, tc.wantText)
			}
		})
	}
}

func TestAuditReportAgainstShippedFleets(t *testing.T) {
	type row struct{ outcome, verdict string }
	cases := map[string]struct {
		fleet string
		want  map[string]row
	}{
		"mixed fleet: DRA serves what it has, the A100-40GB CronJob and the Job with a shared NIC stay legacy": {
			fleet: "mixed",
			want: map[string]row{
				"Deployment/llm-inference": {"Translate", "FitsNow"},
				"Job/pretrain":             {"KeepLegacy", ""},
				"Pod/notebook-alice":       {"Translate", "FitsNow"},
				"StatefulSet/jax-serve":    {"Translate", "FitsNow"},
				"CronJob/nightly-eval":     {"KeepLegacy", "NeverFits"},
				"Pod/web":                  {"Skip", ""},
				"Pod/pinned":               {"Skip", ""},
			},
		},
		"legacy-only fleet: everything stays legacy": {
			fleet: "legacy-gfd",
			want: map[string]row{
				"Deployment/llm-inference": {"KeepLegacy", "NeverFits"},
				"Job/pretrain":             {"KeepLegacy", ""},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, "", "audit", "-f", "../../../examples/workloads", "--fleet", "../../../examples/fleets/"+tc.fleet, "-o", "yaml")
			if err != nil {
				t.Fatal(err)
			}
			var rep report.Report
			if err := yaml.UnmarshalStrict([]byte(out), &rep); err != nil {
				t.Fatalf("report does not decode strictly: %v", err)
			}
			got := map[string]row{}
			for _, r := range rep.Items {
				got[r.Kind+"/"+r.Name] = row{string(r.Outcome), r.Verdict}
				if r.Kind+"/"+r.Name == "Job/pretrain" && !slices.ContainsFunc(r.Reasons, func(x reason.Reason) bool { return x.Code == translate.ReasonSharedDeviceNotMapped }) {
					t.Errorf("Job/pretrain is not kept legacy for its shared NIC: %+v", r.Reasons)
				}
			}
			for k, w := range tc.want {
				if got[k] != w {
					t.Errorf("%s: got %+v, want %+v", k, got[k], w)
				}
			}
		})
	}
}

// TestEmptyDocuments: empty, comment-only and null documents (as helm
// template prints them) are not objects, anywhere in the input, for
// translate and audit alike (as for kubectl), and translate's output keeps
// them in their place, as read: only the pod's document changes.
func TestEmptyDocuments(t *testing.T) {
	pod, err := os.ReadFile("../../../examples/workloads/notebook-mig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	alone, err := run(t, string(pod), "translate", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	// The translated pod, then its template.
	translated, template, ok := strings.Cut(alone, "\n---\n")
	if !ok {
		t.Fatalf("no template after the pod:\n%s", alone)
	}
	translated += "\n"
	empties := map[string]string{
		"empty":        "",
		"comment-only": "# Source: chart/templates/disabled.yaml\n",
		"null":         "null\n",
		"tilde":        "~\n",
	}
	config := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: notebooks}\n"
	for kind, empty := range empties {
		for _, pos := range []string{"first", "middle", "last"} {
			t.Run(kind+" document "+pos, func(t *testing.T) {
				var parts []string
				switch pos {
				case "first":
					parts = []string{empty, string(pod)}
				case "middle":
					parts = []string{string(pod), empty, config}
				case "last":
					parts = []string{string(pod), empty}
				}
				input := "---\n" + strings.Join(parts, "---\n")
				out, err := run(t, input, "translate", "-f", "-")
				if err != nil {
					t.Fatalf("translate: %v", err)
				}
				want := strings.Replace(input, string(pod), translated, 1) + "---\n" + template
				if diff := cmp.Diff(want, out); diff != "" {
					t.Errorf("output (-want,+got):\n%s", diff)
				}
				if _, err := run(t, input, "audit", "-f", "-", "--fleet", "../../../examples/fleets/mixed", "--fail-on", "untranslatable"); err != nil {
					t.Errorf("audit: %v", err)
				}
			})
		}
	}
}

// TestAuditCRDs: one row per embedded pod template over a directory mixing
// every CRD example, and an object whose device request has no template to
// go to fails --fail-on untranslatable.
func TestAuditCRDs(t *testing.T) {
	out, err := run(t, "", "audit", "-f", "../../../examples/crds", "--fleet", "../../../examples/fleets/mixed", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := yaml.UnmarshalStrict([]byte(out), &rep); err != nil {
		t.Fatalf("report does not decode strictly: %v", err)
	}
	got := map[string]string{}
	for _, r := range rep.Items {
		got[r.Kind+"/"+r.Name+": "+r.Path] = string(r.Outcome) + " " + r.Rule
	}
	want := map[string]string{
		"AppWrapper/wrapped-ft: spec.components[0].template.spec.pytorchReplicaSpecs.Worker.template":               "KeepLegacy Table", // Kueue-managed, its mappings unknown
		"ClusterTrainingRuntime/torch-distributed-gpu: spec.template.spec.replicatedJobs[0].template.spec.template": "KeepLegacy Table",
		"ClusterTrainingRuntime/deepspeed-distributed: spec.template.spec.replicatedJobs[0].template.spec.template": "Translate Table",
		"ClusterTrainingRuntime/deepspeed-distributed: spec.template.spec.replicatedJobs[1].template.spec.template": "Translate Table",
		"ClusterTrainingRuntime/jax-distributed: spec.template.spec.replicatedJobs[0].template.spec.template":       "Translate Table",
		"ClusterTrainingRuntime/xgboost-distributed: spec.template.spec.replicatedJobs[0].template.spec.template":   "KeepLegacy Table",
		"InferenceService/huggingface-llama3: spec.predictor":                                                       "KeepLegacy Table",
		"InferenceService/qwen-hf: spec.predictor":                                                                  "KeepLegacy Table",
		"InferenceService/tensorflow-gpu: spec.predictor":                                                           "KeepLegacy Table", // KServe pins it to a T4, which the fleet has none of
		"InferenceService/two-frameworks: spec.predictor":                                                           "KeepLegacy Table",
		"LeaderWorkerSet/leaderworkerset-sample: spec.leaderWorkerTemplate.workerTemplate":                          "KeepLegacy Table",
		"MPIJob/tensorflow-mnist: spec.mpiReplicaSpecs.Launcher.template":                                           "KeepLegacy Table",
		"MPIJob/tensorflow-mnist: spec.mpiReplicaSpecs.Worker.template":                                             "Translate Table",
		"RayCluster/raycluster-tpu-v6e-multihost: spec.headGroupSpec.template":                                      "Skip Table",
		"RayCluster/raycluster-tpu-v6e-multihost: spec.workerGroupSpecs[0].template":                                "KeepLegacy Table",
		"RayCluster/raycluster-tpu-v6e-multihost: spec.workerGroupSpecs[1].template":                                "Translate Table",
		"RayCluster/raycluster-tpu-v6e-multihost: spec.workerGroupSpecs[2].template":                                "Translate Table",
		"TrainJob/finetune-qwen: ":                                             "KeepLegacy ",
		"FineTune/adapter: spec.trainer.template":                              "Translate Shape",
		"FineTune/adapter: spec.evaluator":                                     "Translate Shape",
		"InferenceService/llama-8b: spec.predictor":                            "KeepLegacy Table",
		"JobSet/maxtext: spec.replicatedJobs[0].template.spec.template":        "KeepLegacy Table", // a multi-host TPU Job: GKE's slice environment
		"Job/horovod: spec.tasks[0].template":                                  "Skip Table",
		"Job/horovod: spec.tasks[1].template":                                  "KeepLegacy Table", // a Volcano Job's GPU pods are volcano's, kept on the device plugin
		"LeaderWorkerSet/vllm-405b: spec.leaderWorkerTemplate.leaderTemplate":  "Translate Table",
		"LeaderWorkerSet/vllm-405b: spec.leaderWorkerTemplate.workerTemplate":  "Translate Table",
		"MPIJob/nccl-allreduce: spec.mpiReplicaSpecs.Launcher.template":        "Skip Table",
		"MPIJob/nccl-allreduce: spec.mpiReplicaSpecs.Worker.template":          "Translate Table",
		"Notebook/bob: spec.template":                                          "Translate Table",
		"PyTorchJob/llama-pretrain: spec.pytorchReplicaSpecs.Master.template":  "KeepLegacy Table", // rdma/hca: a shared NIC
		"PyTorchJob/llama-pretrain: spec.pytorchReplicaSpecs.Worker.template":  "KeepLegacy Table",
		"RayCluster/llm: spec.headGroupSpec.template":                          "Skip Table",
		"RayCluster/llm: spec.workerGroupSpecs[0].template":                    "Translate Table",
		"RayCluster/llm: spec.workerGroupSpecs[1].template":                    "Translate Table",
		"RayJob/batch-embed: spec.rayClusterSpec.headGroupSpec.template":       "Skip Table",
		"RayJob/batch-embed: spec.rayClusterSpec.workerGroupSpecs[0].template": "Translate Table",
		"RayJob/batch-embed: spec.submitterPodTemplate":                        "Skip Table",
		"RayService/chat: spec.rayClusterConfig.headGroupSpec.template":        "Skip Table",
		"RayService/chat: spec.rayClusterConfig.workerGroupSpecs[0].template":  "Translate Table",
		"Service/whisper: spec.template":                                       "Translate Table",
		"Workflow/eval-pipeline: spec.templates[1].container":                  "Skip Table",
		"Workflow/eval-pipeline: spec.templates[2].container":                  "Translate Table",
		"Workflow/eval-pipeline: spec.templates[3].script":                     "Translate Table",
		"Workflow/eval-pipeline: spec.templates[4].container":                  "KeepLegacy Table",
		"Workflow/eval-pipeline: spec.templates[5].container":                  "Translate Table",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want,+got):\n%s", diff)
	}
	if len(rep.Items) != len(want) {
		t.Errorf("%d rows, want %d (one per pod template)", len(rep.Items), len(want))
	}
	table, err := run(t, "", "audit", "-f", "../../../examples/crds", "--fleet", "../../../examples/fleets/mixed")
	if err != nil {
		t.Fatal(err)
	}
	objects := map[string]bool{}
	for _, r := range rep.Items {
		objects[r.Kind+"/"+r.Namespace+"/"+r.Name+"\x00"+r.Source] = true
	}
	line := fmt.Sprintf("%d pod templates in %d objects: %d translate, %d keep legacy, %d skip", len(want), len(objects), rep.Summary.Translate, rep.Summary.KeepLegacy, rep.Summary.Skip)
	if !strings.Contains(table, line) {
		t.Errorf("the table's summary is not %q:\n%s", line, table)
	}
	_, err = run(t, "", "audit", "-f", "../../../examples/crds/trainjob.yaml", "--fleet", "../../../examples/fleets/mixed", "--fail-on", "untranslatable")
	if exitCode(err) != exitInvalid {
		t.Errorf("--fail-on untranslatable with an Unsupported TrainJob: exit %d, want %d", exitCode(err), exitInvalid)
	}
}

// TestPostRender: the Helm post-renderer form reads stdin and writes the
// same as translate -f -; its misuse is a usage error.
func TestPostRender(t *testing.T) {
	input, err := os.ReadFile("../../../examples/crds/raycluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := run(t, string(input), "translate", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	got, err := run(t, string(input), "translate", "--post-render")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("post-render output differs from translate -f -:\n%s", cmp.Diff(want, got))
	}
	for _, args := range [][]string{{"--post-render", "-f", "x.yaml"}, {"--post-render", "--explain"}, {"--post-render", "-o", "json"}} {
		if _, err := run(t, "", append([]string{"translate"}, args...)...); exitCode(err) != exitUsage {
			t.Errorf("translate %v: exit %d, want %d", args, exitCode(err), exitUsage)
		}
	}
	if _, err := run(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: 3\n", "translate", "--post-render"); exitCode(err) != exitInvalid {
		t.Errorf("invalid rendered manifests: exit %d, want %d", exitCode(err), exitInvalid)
	}
}

// TestPodsKeptForTheirSchedulerAreUntranslatable: a GPU pod bound at
// creation or made for a scheduler that does not allocate claims asks for
// devices and stays on the device plugin: a KeepLegacy row, counted by
// --fail-on untranslatable and Blocked on the page; the same pods without
// a device request are Skip and fail nothing.
func TestPodsKeptForTheirSchedulerAreUntranslatable(t *testing.T) {
	pod := func(name, spec, limits string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: ml}\nspec:\n" + spec +
			"  containers:\n  - name: c\n    image: x\n    resources: {limits: {" + limits + "}}\n"
	}
	cases := map[string]struct {
		input       string
		wantOutcome string
		wantCode    int
	}{
		"a GPU pod bound at creation": {input: pod("pinned", "  nodeName: l4-0\n", "nvidia.com/gpu: 1"), wantOutcome: "KeepLegacy NodeNamePreset", wantCode: exitInvalid},
		"a GPU pod for volcano":       {input: pod("batch", "  schedulerName: volcano\n", "nvidia.com/gpu: 1"), wantOutcome: "KeepLegacy SchedulerNotListed", wantCode: exitInvalid},
		"a GPU pod for yunikorn":      {input: pod("yk", "  schedulerName: yunikorn\n", "nvidia.com/gpu: 1"), wantOutcome: "KeepLegacy SchedulerNotListed", wantCode: exitInvalid},
		"a CPU pod bound at creation": {input: pod("cpu", "  nodeName: l4-0\n", "cpu: 1"), wantOutcome: "Skip NoLegacyResources", wantCode: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, tc.input, "audit", "-f", "-", "--fleet", "../../../examples/fleets/mixed", "-o", "json", "--fail-on", "untranslatable")
			if got := exitCode(err); got != tc.wantCode {
				t.Errorf("--fail-on untranslatable: exit code %d, want %d (err %v)", got, tc.wantCode, err)
			}
			var rep report.Report
			if err := yaml.Unmarshal([]byte(out), &rep); err != nil || len(rep.Items) != 1 {
				t.Fatalf("report: %v\n%s", err, out)
			}
			row := rep.Items[0]
			if got := string(row.Outcome) + " " + string(row.Decisive.Code); got != tc.wantOutcome {
				t.Errorf("row %s, want %s", got, tc.wantOutcome)
			}
			page, err := run(t, tc.input, "audit", "-f", "-", "--fleet", "../../../examples/fleets/mixed", "-o", "html")
			if err != nil {
				t.Fatal(err)
			}
			blocked := `data-kpi="blocked">1<`
			if tc.wantCode == 0 {
				blocked = `data-kpi="blocked">0<`
			}
			if !strings.Contains(page, blocked) {
				t.Errorf("the page does not show %s", blocked)
			}
		})
	}
}

// TestADeviceClassInTheInputIsPartOfTheFleet: an AMD pod against a fleet
// whose AMD driver publishes GPUs but has no DeviceClass for them is
// NeverFits with the class named (--fail-on never-fits fails); the same pod
// with the DeviceClass in its own file, as DRA drivers' demos ship them, is
// translated by audit, translate and explain.
func TestADeviceClassInTheInputIsPartOfTheFleet(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fleet := filepath.Dir(write("fleet/mi300-0.yaml", `apiVersion: v1
kind: Node
metadata: {name: mi300-0, labels: {kubernetes.io/hostname: mi300-0}}
status: {allocatable: {cpu: "64", memory: 512Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: mi300-0-gpu.amd.com}
spec:
  driver: gpu.amd.com
  nodeName: mi300-0
  pool: {name: mi300-0, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {type: {string: amdgpu}}}
`))
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: rocm, namespace: default}\nspec:\n  containers:\n  - name: app\n    image: rocm/pytorch\n    resources: {limits: {amd.com/gpu: 1}}\n"
	alone := write("alone/pod.yaml", pod)
	demo := filepath.Dir(write("demo/demo.yaml", "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.amd.com}\nspec:\n  selectors:\n  - cel: {expression: 'device.driver == \"gpu.amd.com\"'}\n---\n"+pod))

	out, err := run(t, "", "audit", "-f", alone, "--fleet", fleet, "-o", "json", "--fail-on", "never-fits")
	if exitCode(err) != exitInvalid {
		t.Errorf("--fail-on never-fits without the class: exit %d, want %d", exitCode(err), exitInvalid)
	}
	var rep report.Report
	if err := yaml.Unmarshal([]byte(out), &rep); err != nil || len(rep.Items) != 1 {
		t.Fatalf("report: %v\n%s", err, out)
	}
	row := rep.Items[0]
	if row.Verdict != string(feasibility.NeverFits) || row.VerdictCode != string(feasibility.ReasonDeviceClassNotFound) ||
		!strings.Contains(row.Headline(), "the fleet has no DeviceClass gpu.amd.com") || strings.Contains(row.Headline(), "-claim-") {
		t.Errorf("without the class: %s/%s, %q", row.Verdict, row.VerdictCode, row.Headline())
	}

	out, err = run(t, "", "audit", "-f", demo, "--fleet", fleet, "-o", "json", "--fail-on", "never-fits,untranslatable")
	if err != nil {
		t.Fatalf("audit with the class in the input: %v\n%s", err, out)
	}
	rep = report.Report{}
	if err := yaml.Unmarshal([]byte(out), &rep); err != nil || len(rep.Items) != 1 {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if row := rep.Items[0]; row.Outcome != reason.OutcomeTranslate || row.Verdict != string(feasibility.FitsNow) {
		t.Errorf("with the class in the input: %s %s, %q", row.Outcome, row.Verdict, row.Headline())
	}
	if out, err := run(t, "", "translate", "-f", demo, "--fleet", fleet); err != nil || !strings.Contains(out, "kind: ResourceClaimTemplate") {
		t.Errorf("translate --fleet with the class in the input: %v\n%s", err, out)
	}
	if out, err := run(t, "", "explain", "-f", demo, "--fleet", fleet); err != nil || !strings.Contains(out, "): Translate") {
		t.Errorf("explain --fleet with the class in the input: %v\n%s", err, out)
	}
}
