package decide

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// Pods whose devices only a device plugin can give them: the software
// that starts them reads what the device plugin hands over, or holds the
// devices with pods of its own.

// ReasonVirtLauncherDevices: the pod is a KubeVirt virt-launcher (label
// kubevirt.io: virt-launcher) that asks for devices beyond the ones every
// virt-launcher asks for (kubevirtOwn): a VM's gpus and hostDevices named by
// deviceName, which virt-launcher hands the VM at the PCI or mediated
// device address the device plugin puts in its environment
// (PCI_RESOURCE_<resource>, MDEV_PCI_RESOURCE_<resource>). A claim sets
// none: translated, the VM would start without them. KeepLegacy, mapped
// resource or not.
const ReasonVirtLauncherDevices reason.Code = "VirtLauncherDevices"

// ReasonSharedByReservationPod: the pod shares a GPU that KAI-Scheduler
// holds with a reservation pod asking the device plugin for
// nvidia.com/gpu (annotations gpu-fraction or gpu-memory, scheduler
// kai-scheduler). It asks for no extended resource itself, yet it runs
// only where the device plugin offers nvidia.com/gpu: after a switch to
// DRA that leaves no device plugin, neither it nor its reservation pod is
// served. KeepLegacy: claimbridge leaves it as submitted, and says so.
const ReasonSharedByReservationPod reason.Code = "SharedByReservationPod"

// ReasonHAMiMIGMode: the pod asks HAMi for MIG instances (annotation
// nvidia.com/vgpu-mode naming mig and not hami-core; hamiMIGMode), and the
// policy maps nvidia.com/gpu. HAMi's scheduler gives it, per GPU asked for,
// a MIG instance it creates on a GPU of a node in MIG mode; no DRA device
// of the vocabulary stands for that: KeepLegacy, the annotation named.
const ReasonHAMiMIGMode reason.Code = "HAMiMIGMode"

// hamiModeAnnotation is HAMi's choice of how a pod's GPUs are split
// (Project-HAMi/HAMi pkg/device/nvidia/device.go, AllocateMode; the modes
// MigMode "mig", HamiCoreMode "hami-core", MpsMode "mps"). HAMi's
// scheduler gives a pod that carries it only devices whose mode the value
// contains as a substring (checkType: strings.Contains(annotation,
// device mode)); a device's mode is its node's operating mode
// (the device plugin's nodeconfig operatingmode, default hami-core).
const hamiModeAnnotation = "nvidia.com/vgpu-mode"

// hamiMIGMode says why a pod that HAMi serves with MIG instances stays as
// submitted, "" for any other pod: the annotation admits mig and not
// hami-core, and the policy maps nvidia.com/gpu. HAMi (pkg/device/nvidia/
// device.go, Fit, CustomFilterRule and AddResourceUsage →
// selectMigCandidate) gives each GPU the container asks for a MIG instance
// of the smallest profile, by memory then slices, of the node's allowed
// profiles (migProfileAllowlist) whose memory holds nvidia.com/gpumem (the
// whole GPU's memory without it) and that has a free placement, and
// creates it on the GPU (pkg/device-plugin/nvidiadevice/nvinternal/plugin/
// migmgr.go). The hami profile's class, HAMi's DRA driver
// (Project-HAMi/HAMi-DRA, DeviceClass hami-core-gpu.project-hami.io:
// type == "hami-gpu"), publishes HAMi-core shares of whole GPUs only, and
// its webhook (pkg/webhook/dra/mutating.go) reads no vgpu-mode: the claim
// would get a share of a GPU that is not in MIG mode. The NVIDIA driver's
// MIG devices (mig.nvidia.com) are another driver's, on GPUs HAMi does not
// serve, and which profile HAMi would pick depends on the node's allowlist
// and free placements, which the pod does not say: no translation gives
// the pod what HAMi gives it.
func hamiMIGMode(pod *corev1.Pod, p *translate.Policy) string {
	mode, ok := pod.Annotations[hamiModeAnnotation]
	if !ok || !strings.Contains(mode, "mig") || strings.Contains(mode, "hami-core") {
		return ""
	}
	if _, gpu := p.DevicesRequested(pod)["nvidia.com/gpu"]; !gpu {
		return ""
	}
	return fmt.Sprintf("the annotation %s: %q asks HAMi for MIG instances: HAMi's scheduler gives each GPU the pod asks for a MIG instance "+
		"of the smallest profile its node allows whose memory holds nvidia.com/gpumem, which HAMi creates on a GPU of a node in MIG mode "+
		"(Project-HAMi/HAMi pkg/device/nvidia/device.go, selectMigCandidate). No DRA device of the policy stands for that: HAMi's DRA driver "+
		"(class hami-core-gpu.project-hami.io) publishes HAMi-core shares of whole GPUs and its webhook ignores the annotation, and the "+
		"profile HAMi picks depends on the node's allowed profiles and free placements, which the pod does not say; translated, the pod "+
		"would get a HAMi-core share of a GPU in place of a MIG instance. Ask for a MIG profile by name (nvidia.com/mig-<profile>, "+
		"mig.nvidia.com) to move it", hamiModeAnnotation, mode)
}

// virtLauncherLabel is KubeVirt's label of a VMI's pod
// (kubevirt.io: virt-launcher; staging/src/kubevirt.io/api/core/v1/types.go,
// AppLabel; pkg/virt-controller/services/template.go, podLabels).
const virtLauncherLabel = "kubevirt.io"

// kubevirtOwn are the resources every virt-launcher may ask for, of
// KubeVirt's own device plugins, not a VM's devices: the hypervisor
// device (kvm, or mshv), tun, vhost-net, vhost-vsock, pr-helper, sev, tdx,
// iommufd (pkg/virt-controller/services/template.go). A permitted host
// device of KubeVirt's device plugin (devices.kubevirt.io/nvme) is one of
// the VM's devices.
var kubevirtOwn = []string{"devices.kubevirt.io/kvm", "devices.kubevirt.io/mshv", "devices.kubevirt.io/tun", "devices.kubevirt.io/vhost-net",
	"devices.kubevirt.io/vhost-vsock", "devices.kubevirt.io/pr-helper", "devices.kubevirt.io/sev", "devices.kubevirt.io/tdx", "devices.kubevirt.io/iommufd"}

// devicePluginOnly says why a pod that only the device plugin can serve
// stays as submitted, with its reason code; "" for any other pod.
func devicePluginOnly(pod *corev1.Pod, p *translate.Policy) (reason.Code, string) {
	if pod.Labels[virtLauncherLabel] == "virt-launcher" {
		var devices []string
		for _, n := range podfacts.ExtendedNamed(pod) {
			if !slices.Contains(kubevirtOwn, string(n)) {
				devices = append(devices, string(n))
			}
		}
		if len(devices) == 0 {
			return "", ""
		}
		return ReasonVirtLauncherDevices, fmt.Sprintf("a KubeVirt VM's virt-launcher asks for %s: virt-launcher hands the VM each device at the PCI or "+
			"mediated-device address the device plugin puts in its environment (PCI_RESOURCE_<resource>, MDEV_PCI_RESOURCE_<resource>; kubevirt/kubevirt "+
			"pkg/virt-launcher/virtwrap/device/hostdevice); a claim sets none, so translated, the VM would start without them. KubeVirt's own DRA support "+
			"(gpus[] and hostDevices[] by claimName and requestName; feature gates GPUsWithDRA, HostDevicesWithDRA) is written in the VM", strings.Join(devices, ", "))
	}
	if why := hamiMIGMode(pod, p); why != "" {
		return ReasonHAMiMIGMode, why
	}
	s, ok := podfacts.KAIShare(pod)
	if !ok {
		return "", ""
	}
	if len(p.DevicesRequested(podfacts.AsReserved(pod))) == 0 {
		return "", "" // the policy does not map nvidia.com/gpu: nothing of the switch reaches it
	}
	gpus := "a GPU"
	if s.Devices > 1 {
		gpus = fmt.Sprintf("%d GPUs", s.Devices)
	}
	return ReasonSharedByReservationPod, fmt.Sprintf("KAI-Scheduler shares %s with this pod (%s): it counts GPUs from the nodes' %s and holds each with a "+
		"reservation pod in kai-resource-reservation that asks the device plugin for %s: 1, bound to the node by name (NVIDIA/KAI-Scheduler "+
		"pkg/binder/binding/resourcereservation, createGPUReservationPod). Nothing in the pod can become a claim, and it runs only where the device "+
		"plugin offers %s: after a switch to DRA that leaves none, neither the pod nor its reservation pod is served",
		gpus, s.Asked, podfacts.KAIReservedResource, podfacts.KAIReservedResource, podfacts.KAIReservedResource)
}

// keepForDevicePlugin keeps as submitted a pod that only the device plugin
// can serve, in place of its translation, or of a skip for asking for no
// resource the policy maps; false for any other pod or outcome.
func (d *Decision) keepForDevicePlugin(in Input, res *translate.Result) bool {
	noLegacy := res.Outcome == reason.OutcomeSkip && d.Decisive.Code == translate.ReasonNoLegacyResources
	if res.Outcome != reason.OutcomeTranslate && !noLegacy {
		return false
	}
	code, why := devicePluginOnly(in.Pod, in.Policy)
	if why == "" {
		return false
	}
	d.Reasons = slices.DeleteFunc(d.Reasons, func(r reason.Reason) bool {
		return r.Code == translate.ReasonTranslated || r.Code == translate.ReasonNoLegacyResources
	})
	r := newReason(code, reason.SeverityWarning, why)
	if code == ReasonHAMiMIGMode {
		r.Field = field.NewPath("metadata", "annotations").Key(hamiModeAnnotation).String()
	}
	d.keep(r)
	return true
}
