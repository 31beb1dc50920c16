package offline

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/internal/manifest"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// kindRow is what a test reads of a row: who, the outcome, the reason
// that decided it and the devices it counts.
type kindRow struct {
	Name     string
	Outcome  reason.Outcome
	Decisive reason.Code
	Devices  int64
}

func kindRows(t *testing.T, doc string) []kindRow {
	t.Helper()
	docs, err := manifest.Read([]string{"-"}, strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	items, _, err := Translate(t.Context(), docs, Options{Policy: translate.DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	var out []kindRow
	for _, row := range Rows(items) {
		name := row.Kind + " " + row.Name
		if row.Path != "" {
			name += ": " + row.Path
		}
		r := kindRow{Name: name, Outcome: row.Outcome, Devices: row.Demand()}
		if row.Decisive != nil {
			r.Decisive = row.Decisive.Code
		}
		out = append(out, r)
	}
	return out
}

// TestRowsOfKindsFoundOnPublicManifests: each kind found on public
// manifests with no row, or the wrong one, gets a row with the outcome and
// reason its operator calls for (docs/reference/workloads.md).
func TestRowsOfKindsFoundOnPublicManifests(t *testing.T) {
	cases := map[string]struct {
		doc  string
		want []kindRow
	}{
		"SparkApplication: the executor's GPUs are kept, the operator writes them; the driver asks for none": {
			doc: "apiVersion: sparkoperator.k8s.io/v1beta2\nkind: SparkApplication\nmetadata: {name: rapids, namespace: spark}\nspec:\n  driver: {cores: 1}\n" +
				"  executor: {instances: 2, gpu: {name: nvidia.com/gpu, quantity: 1}}\n",
			want: []kindRow{
				{Name: "SparkApplication rapids: spec.driver", Outcome: reason.OutcomeSkip, Decisive: translate.ReasonNoLegacyResources},
				{Name: "SparkApplication rapids: spec.executor", Outcome: reason.OutcomeKeepLegacy, Decisive: ReasonUnsupported, Devices: 2},
			},
		},
		"SparkApplication on Volcano: the scheduler decides first": {
			doc: "apiVersion: sparkoperator.k8s.io/v1beta2\nkind: SparkApplication\nmetadata: {name: v, namespace: spark}\nspec:\n  batchScheduler: volcano\n" +
				"  executor: {gpu: {name: nvidia.com/gpu, quantity: 1}}\n",
			want: []kindRow{{Name: "SparkApplication v: spec.executor", Outcome: reason.OutcomeKeepLegacy, Decisive: translate.ReasonSchedulerNotListed, Devices: 1}},
		},
		"KubeVirt VM with a GPU the policy maps: kept, virt-launcher reads the device plugin's environment": {
			doc: "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: vm, namespace: vms}\nspec:\n  runStrategy: Always\n  template:\n" +
				"    spec: {domain: {devices: {gpus: [{name: g, deviceName: nvidia.com/gpu}]}}}\n",
			want: []kindRow{{Name: "VirtualMachine vm: spec.template", Outcome: reason.OutcomeKeepLegacy, Decisive: decide.ReasonVirtLauncherDevices, Devices: 1}},
		},
		"KubeVirt VM with a passthrough GPU the policy does not map: kept all the same": {
			doc: "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: vm, namespace: vms}\nspec:\n  template:\n" +
				"    spec: {domain: {devices: {hostDevices: [{name: h, deviceName: nvidia.com/GA102GL_A10}]}}}\n",
			want: []kindRow{{Name: "VirtualMachine vm: spec.template", Outcome: reason.OutcomeKeepLegacy, Decisive: decide.ReasonVirtLauncherDevices}},
		},
		"KubeVirt VM without devices: nothing to do": {
			doc:  "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: vm, namespace: vms}\nspec:\n  template:\n    spec: {domain: {devices: {}}}\n",
			want: []kindRow{{Name: "VirtualMachine vm: spec.template", Outcome: reason.OutcomeSkip, Decisive: translate.ReasonNoLegacyResources}},
		},
		"Dynamo graph: the operator reads each worker's GPU count": {
			doc: "apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata: {name: g, namespace: d}\nspec:\n  services:\n" +
				"    Frontend: {replicas: 1, extraPodSpec: {mainContainer: {image: f}}}\n" +
				"    Decode: {replicas: 2, resources: {limits: {gpu: \"4\"}}, extraPodSpec: {mainContainer: {image: w}}}\n",
			want: []kindRow{
				{Name: "DynamoGraphDeployment g: spec.services.Frontend", Outcome: reason.OutcomeSkip, Decisive: translate.ReasonNoLegacyResources},
				{Name: "DynamoGraphDeployment g: spec.services.Decode", Outcome: reason.OutcomeKeepLegacy, Decisive: decide.ReasonOperatorReadsLimit, Devices: 8},
			},
		},
		"Volcano HyperJob: its pods are Volcano's, not kube-scheduler's": {
			doc: "apiVersion: training.volcano.sh/v1alpha1\nkind: HyperJob\nmetadata: {name: h, namespace: default}\nspec:\n  replicatedJobs:\n" +
				"  - name: trainer\n    replicas: 2\n    templateSpec:\n      tasks:\n      - name: worker\n        replicas: 4\n" +
				"        template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}\n",
			want: []kindRow{{Name: "HyperJob h: spec.replicatedJobs[0].templateSpec.tasks[0].template", Outcome: reason.OutcomeKeepLegacy, Decisive: translate.ReasonSchedulerNotListed, Devices: 8}},
		},
		"Kueue Workload: Kueue's record of its Job's pod sets, skipped and not counted": {
			doc: "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: job-a, namespace: team}\nspec:\n  queueName: q\n  podSets:\n  - name: main\n    count: 3\n" +
				"    template: {spec: {containers: [{name: c, resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}}}]}}\n",
			want: []kindRow{{Name: "Workload job-a", Outcome: reason.OutcomeSkip, Decisive: ReasonRecordOfPods}},
		},
		"Karpenter NodePool: its GPU limit is a cap, not a request": {
			doc:  "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: gpu}\nspec:\n  limits: {cpu: 100, nvidia.com/gpu: 16}\n",
			want: []kindRow{{Name: "NodePool gpu", Outcome: reason.OutcomeSkip, Decisive: translate.ReasonNoLegacyResources}},
		},
		"KAI-Scheduler GPU fraction: kept, its reservation pods need the device plugin's nvidia.com/gpu": {
			doc: "apiVersion: v1\nkind: Pod\nmetadata: {name: share, namespace: default, annotations: {gpu-fraction: \"0.5\"}}\n" +
				"spec: {schedulerName: kai-scheduler, containers: [{name: c, image: x}]}\n",
			want: []kindRow{{Name: "Pod share", Outcome: reason.OutcomeKeepLegacy, Decisive: decide.ReasonSharedByReservationPod}},
		},
		"a gpu-fraction annotation on a pod KAI-Scheduler does not schedule means nothing": {
			doc:  "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, annotations: {gpu-fraction: \"0.5\"}}\nspec: {containers: [{name: c, image: x}]}\n",
			want: []kindRow{{Name: "Pod p", Outcome: reason.OutcomeSkip, Decisive: translate.ReasonNoLegacyResources}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, kindRows(t, tc.doc)); diff != "" {
				t.Errorf("rows (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestAKAIShareBreaksWhenNoNodeKeepsTheDevicePlugin: a KAI-Scheduler GPU
// fraction asks for no resource, yet after a switch of every node (the
// legacy-gfd fleet) no node offers the nvidia.com/gpu its reservation pod
// asks for: the forecast says it breaks, and why; where a node keeps the
// device plugin (before-cutover), it stays there.
func TestAKAIShareBreaksWhenNoNodeKeepsTheDevicePlugin(t *testing.T) {
	doc := "apiVersion: v1\nkind: Pod\nmetadata: {name: share, namespace: default, annotations: {gpu-fraction: \"0.5\"}}\n" +
		"spec: {schedulerName: kai-scheduler, containers: [{name: c, image: x}]}\n"
	for fleet, want := range map[string]cutover.Result{"legacy-gfd": cutover.Breaks, "before-cutover": cutover.StaysLegacy} {
		t.Run(fleet, func(t *testing.T) {
			before, err := feasibility.LoadInventory(filepath.Join("../../examples/fleets", fleet))
			if err != nil {
				t.Fatal(err)
			}
			docs, err := manifest.Read([]string{"-"}, bytes.NewReader([]byte(doc)))
			if err != nil {
				t.Fatal(err)
			}
			rows, _, _, err := Cutover(t.Context(), docs, CutoverOptions{Policy: translate.DefaultPolicy(), Before: before, Check: feasibility.Options{Timeout: 5 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || rows[0].Cutover == nil {
				t.Fatalf("rows %+v, want one with a cutover result", rows)
			}
			c := rows[0].Cutover
			if c.Result != want || c.Today == 0 {
				t.Errorf("cutover %s (today %d nodes), want %s on nodes that serve it today", c.Result, c.Today, want)
			}
			if want == cutover.Breaks && !strings.Contains(c.Why, "reservation pods") {
				t.Errorf("why %q does not name the reservation pods", c.Why)
			}
		})
	}
}
