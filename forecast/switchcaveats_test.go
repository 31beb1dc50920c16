package forecast

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/claimbridge/claimbridge/cutover"
	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/platform"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// TestTheSwitchsOwnHazardsAreSaid: where the cluster's gpu.nvidia.com
// class belongs to a Helm release (detected) and a translation uses it,
// the forecast warns that uninstalling the release deletes it; a workload
// pinned to RuntimeClass nvidia is named. Neither is said where nothing
// shows it: the drivers' defaults know no release, and no workload sets
// the RuntimeClass.
func TestTheSwitchsOwnHazardsAreSaid(t *testing.T) {
	owned := platform.Detect(platform.Objects{Classes: []*resourceapi.DeviceClass{{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com", Annotations: map[string]string{"meta.helm.sh/release-name": "nvidia-dra", "meta.helm.sh/release-namespace": "nvidia-dra"}},
		Spec:       resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"`}}}},
	}}})
	pinned := gpus("2").Obj()
	pinned.Spec.RuntimeClassName = ptr.To("nvidia")
	jobs := []job{{key: "ns/Deployment/trainer", pod: gpus("2").Obj(), pods: 1}, {key: "ns/Deployment/exporter", pod: pinned, pods: 1}}
	said := func(cs []cutover.Caveat, prefix string) bool {
		return slices.ContainsFunc(cs, func(c cutover.Caveat) bool { return strings.HasPrefix(c.Text, prefix) })
	}

	j := forecastJobs(t, legacyNodes(t, map[string]string{"cutover-a100-0": "a100-0"}), jobs, Options{Platform: owned})
	if got := j.Cutovers[0].Result; got != cutover.Moves {
		t.Fatalf("trainer: %s, want Moves", got)
	}
	if !said(j.Summary.Caveats, "The translations use DeviceClasses gpu.nvidia.com (Helm release nvidia-dra/nvidia-dra)") {
		t.Errorf("no caveat names the release that owns the class the translations use: %+v", j.Summary.Caveats)
	}
	if !said(j.Summary.Caveats, "RuntimeClass nvidia: ns/Deployment/exporter run with runtimeClassName: nvidia") {
		t.Errorf("no caveat names the workload pinned to RuntimeClass nvidia: %+v", j.Summary.Caveats)
	}

	j = forecastJobs(t, legacyNodes(t, map[string]string{"cutover-a100-0": "a100-0"}), jobs[:1], Options{})
	if said(j.Summary.Caveats, "The translations use DeviceClasses") || said(j.Summary.Caveats, "RuntimeClass nvidia") || said(j.Summary.Caveats, "The NVIDIA DRA driver runs --consumable-shares=") {
		t.Errorf("a hazard said where nothing shows it: %+v", j.Summary.Caveats)
	}
	// Unlimited shares: whole-GPU claims that ask for no memory share GPUs.
	j = forecastJobs(t, legacyNodes(t, map[string]string{"cutover-a100-0": "a100-0"}), jobs[:1], Options{Platform: sharesPlatform(t, "unlimited")})
	if !said(j.Summary.Caveats, "The NVIDIA DRA driver runs --consumable-shares=unlimited (declared: test)") {
		t.Errorf("no caveat says what unlimited shares do to whole-GPU claims: %+v", j.Summary.Caveats)
	}
}

// TestWholeGPUsKeepOffGPUsSharedForNothing: under the NVIDIA driver's
// --consumable-shares=unlimited a GPU allows multiple allocations and a
// claim that asks for no memory takes none, so any number of claims for
// "a whole GPU" would share one. A Deployment of 16 pods of one whole GPU
// each, on a node whose 8 GPUs the device plugin time-slices 4 ways, is
// not forecast to move onto those 8 GPUs: its translation keeps off
// devices shared for nothing, and says so (WholeDeviceOnShares). With 4
// shares per GPU it keeps off them too, and takes all 4 shares of one
// where it fits (the exclusive variants).
func TestWholeGPUsKeepOffGPUsSharedForNothing(t *testing.T) {
	n := gpuNode("sliced", gfdLabels(t, "a100-timesliced-4"), map[corev1.ResourceName]int64{"nvidia.com/gpu": 32})
	whole := gpus("1").Obj()
	for mode, wantMax := range map[string]int64{"unlimited": 0, "4": 8} {
		t.Run(mode, func(t *testing.T) {
			j := forecastJobs(t, &feasibility.Inventory{Nodes: []*corev1.Node{n}}, []job{{key: "whole", pod: whole, pods: 16}}, Options{Platform: sharesPlatform(t, mode)})
			c, w := j.Cutovers[0], j.Workloads[0]
			if c.Served > wantMax {
				t.Errorf("%d of 16 whole-GPU pods served on 8 GPUs (%s): at most %d", c.Served, mode, wantMax)
			}
			if w.Decision == nil {
				t.Fatal("no decision")
			}
			if mode == "unlimited" && !slices.ContainsFunc(w.Decision.Reasons, func(r reason.Reason) bool {
				return r.Code == translate.ReasonWholeDeviceOnShares && strings.Contains(r.Message, "any number of claims")
			}) {
				t.Errorf("the decision does not say the GPUs are shared for nothing: %v", w.Decision.Reasons)
			}
		})
	}
}
