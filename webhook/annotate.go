package webhook

import (
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/explain"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// maxAllowedMessage bounds the message of an allowed response (kube-apiserver
// logs it in the audit log).
const maxAllowedMessage = 240

// setDecision writes the decision's annotations on pod.
func setDecision(pod *corev1.Pod, decision string, code reason.Code, message string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[api.AnnotationDecision] = decision
	pod.Annotations[api.AnnotationReason] = string(code)
	pod.Annotations[api.AnnotationDecisionMessage] = message
}

// annotate adds the decision to a pod that admission does not otherwise
// change (audit mode, kept as submitted, skipped in an opted-in
// namespace): the response becomes a patch of the annotations only,
// written directly (no copy of the pod, no marshal and diff of the whole
// object on this path); resp's message and warnings stay. Left
// alone: a pod that asks for no mapped device, a mirror pod, a pod
// translated already (its claimbridge.io/template says so), and a pod that
// carries a decision when the new outcome is a Skip — the apiserver
// reinvoking the webhook on a pod it decided.
func annotate(submitted *corev1.Pod, outcome reason.Outcome, said explain.Said, resp admission.Response) admission.Response {
	if outcome == reason.OutcomeSkip {
		switch said.Code {
		case translate.ReasonNoLegacyResources, translate.ReasonMirrorPod, translate.ReasonAlreadyTranslated:
			return resp
		}
		if submitted.Annotations[api.AnnotationDecision] != "" {
			return resp
		}
	}
	resp.Patches = decisionPatch(submitted, said.Decision, said.Code, said.Message)
	return resp
}

// decisionKeys are the annotations a decision writes, in patch order.
var decisionKeys = []string{api.AnnotationDecision, api.AnnotationReason, api.AnnotationDecisionMessage}

// decisionPatch adds (or replaces: JSON Patch's add does both on an object
// member) the decision's annotations; a pod without annotations gets the
// whole map; annotations that hold their value already are left out.
func decisionPatch(submitted *corev1.Pod, decision string, code reason.Code, message string) []jsonpatch.JsonPatchOperation {
	values := []string{decision, string(code), message}
	if len(submitted.Annotations) == 0 {
		m := make(map[string]string, len(values))
		for i, k := range decisionKeys {
			m[k] = values[i]
		}
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/metadata/annotations", m)}
	}
	var ops []jsonpatch.JsonPatchOperation
	for i, k := range decisionKeys {
		if have, ok := submitted.Annotations[k]; ok && have == values[i] {
			continue // a reinvocation: said already
		}
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/annotations/"+jsonPointerEscape(k), values[i]))
	}
	return ops
}

// jsonPointerEscape escapes a key for a JSON Pointer (RFC 6901: ~ as ~0, /
// as ~1).
func jsonPointerEscape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
