package decide

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// ReasonKServeAcceleratorPinned: the pod is one of a KServe
// InferenceService annotated serving.kserve.io/gke-accelerator, which
// KServe's pod webhook turns into the node selector
// cloud.google.com/gke-accelerator only while a container has an
// nvidia.com/gpu limit (podfacts.KServeAcceleratorPin). Translation removes
// that limit, so KServe no longer pins the pod: the pod is decided with the
// node selector, as KServe makes it, and its translation keeps that node
// selector (translate keeps it even where the policy turns it into a
// device selector and removes the labels it translates). Info.
const ReasonKServeAcceleratorPinned reason.Code = "KServeAcceleratorPinned"

// withKServePin is the pod as KServe's pod webhook makes it, with the node
// selector it adds; the pod itself when it adds none, or the pod already
// has it. Webhooks run in the order of their configurations' names, and
// claimbridge's comes before KServe's (inferenceservice.serving.kserve.io):
// the pod reaches claimbridge without the selector.
func withKServePin(pod *corev1.Pod) *corev1.Pod {
	v, ok := podfacts.KServeAcceleratorPin(pod)
	if !ok || pod.Spec.NodeSelector[podfacts.KServeAcceleratorLabel] == v {
		return pod
	}
	out := pod.DeepCopy()
	out.Spec.NodeSelector = maps.Clone(out.Spec.NodeSelector)
	if out.Spec.NodeSelector == nil {
		out.Spec.NodeSelector = map[string]string{}
	}
	out.Spec.NodeSelector[podfacts.KServeAcceleratorLabel] = v
	return out
}

// kservePinned says how a translation keeps the accelerator that KServe
// pins the pod to; nil when KServe pins neither the pod nor its
// translation, or pins both (the translation keeps nvidia.com/gpu).
func kservePinned(pod *corev1.Pod, res *translate.Result) *reason.Reason {
	v, ok := podfacts.KServeAcceleratorPin(pod)
	if !ok || res.Outcome != reason.OutcomeTranslate || res.Pod == nil {
		return nil
	}
	if _, still := podfacts.KServeAcceleratorPin(res.Pod); still {
		return nil
	}
	sel := fmt.Sprintf("%s: %s", podfacts.KServeAcceleratorLabel, v)
	return &reason.Reason{Code: ReasonKServeAcceleratorPinned, Severity: reason.SeverityInfo,
		Field: field.NewPath("metadata", "annotations").Key(podfacts.KServeGKEAccelerator).String(),
		Message: fmt.Sprintf("KServe's pod webhook adds the node selector %s only to pods with an nvidia.com/gpu limit (kserve/kserve "+
			"pkg/webhook/admission/pod/accelerator_injector.go, InjectGKEAcceleratorSelector), and the translation removes that limit: "+
			"the pod is translated as KServe makes it, and its translation carries the node selector itself (where the policy knows the label, "+
			"the claim also selects that accelerator's devices), so it lands on the same nodes, and node autoscalers, which choose the node pool "+
			"to scale up from it, still read it; GKE labels the nodes of an accelerator's node pools with it under DRA too", sel)}
}
