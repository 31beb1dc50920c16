package decide_test

import (
	"strings"
	"testing"

	"github.com/claimbridge/claimbridge/decide"
	"github.com/claimbridge/claimbridge/internal/testing/builders"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// TestPodsOnlyTheDevicePluginServes: as the webhook sees them, a KubeVirt
// virt-launcher with a VM's devices and a KAI-Scheduler GPU share stay as
// submitted, with a reason that says why; a virt-launcher with KubeVirt's
// own devices only, and a gpu-fraction pod of another scheduler, are no
// business of claimbridge.
func TestPodsOnlyTheDevicePluginServes(t *testing.T) {
	launcher := func() *builders.PodWrapper {
		return builders.MakePod("virt-launcher-vm-gpu-x2k9", "vms").Label("kubevirt.io", "virt-launcher").Label("vm.kubevirt.io/name", "vm-gpu").
			Container("compute").Limit("devices.kubevirt.io/kvm", "1").Request("devices.kubevirt.io/kvm", "1")
	}
	cases := map[string]struct {
		b            *builders.PodWrapper
		wantOutcome  reason.Outcome
		wantDecisive reason.Code
		wantSays     string
	}{
		"a virt-launcher with a GPU the policy maps": {
			b: launcher().Limit("nvidia.com/gpu", "1"), wantOutcome: reason.OutcomeKeepLegacy, wantDecisive: decide.ReasonVirtLauncherDevices, wantSays: "PCI_RESOURCE_",
		},
		"a virt-launcher with a passthrough GPU the policy does not map": {
			b: launcher().Limit("nvidia.com/GA102GL_A10", "1"), wantOutcome: reason.OutcomeKeepLegacy, wantDecisive: decide.ReasonVirtLauncherDevices, wantSays: "nvidia.com/GA102GL_A10",
		},
		"a virt-launcher with a host device of KubeVirt's own device plugin": {
			b: launcher().Limit("devices.kubevirt.io/nvme", "1"), wantOutcome: reason.OutcomeKeepLegacy, wantDecisive: decide.ReasonVirtLauncherDevices, wantSays: "devices.kubevirt.io/nvme",
		},
		"a virt-launcher with the hypervisor's devices only": {
			b: launcher(), wantOutcome: reason.OutcomeSkip, wantDecisive: translate.ReasonNoLegacyResources,
		},
		"a KAI-Scheduler GPU fraction": {
			b:           builders.MakePod("share", "default").Annotation("gpu-fraction", "0.5").SchedulerName("kai-scheduler").Container("c"),
			wantOutcome: reason.OutcomeKeepLegacy, wantDecisive: decide.ReasonSharedByReservationPod, wantSays: "reservation pod",
		},
		"a KAI-Scheduler GPU memory share over two GPUs": {
			b:           builders.MakePod("share", "default").Annotation("gpu-memory", "2000").Annotation("gpu-fraction-num-devices", "2").SchedulerName("kai-scheduler").Container("c"),
			wantOutcome: reason.OutcomeKeepLegacy, wantDecisive: decide.ReasonSharedByReservationPod, wantSays: "2 GPUs",
		},
		"a gpu-fraction annotation on a kube-scheduler pod": {
			b: builders.MakePod("p", "default").Annotation("gpu-fraction", "0.5").Container("c"), wantOutcome: reason.OutcomeSkip, wantDecisive: translate.ReasonNoLegacyResources,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := decide.Pod(t.Context(), decide.Input{Pod: tc.b.Obj(), Policy: translate.DefaultPolicy(), Admitted: true})
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome != tc.wantOutcome || d.Decisive.Code != tc.wantDecisive {
				t.Fatalf("%s (%s: %s), want %s for %s", d.Outcome, d.Decisive.Code, d.Decisive.Message, tc.wantOutcome, tc.wantDecisive)
			}
			if !strings.Contains(d.Decisive.Message, tc.wantSays) {
				t.Errorf("the reason %q does not say %q", d.Decisive.Message, tc.wantSays)
			}
			for _, r := range d.Reasons {
				if tc.wantOutcome == reason.OutcomeKeepLegacy && (r.Code == translate.ReasonTranslated || r.Code == translate.ReasonNoLegacyResources) {
					t.Errorf("a pod kept as submitted says %s", r)
				}
			}
		})
	}
}
