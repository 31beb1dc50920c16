package webhook

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/claimbridge/claimbridge/report"
	"github.com/claimbridge/claimbridge/translate"
)

// AnnotationDecisionMessage is the one-line account of the decision that
// goes with AnnotationDecision and AnnotationReason: the reason code, its
// remedy and the details, the template when translated (at most 1000
// bytes). The Event on the pod carries it; optional for readers.
const AnnotationDecisionMessage = "claimbridge.io/decision-message"

// maxAllowedMessage bounds the message of an allowed response (kube-apiserver
// logs it in the audit log).
const maxAllowedMessage = 240

// setDecision writes the decision's annotations on pod.
func setDecision(pod *corev1.Pod, decision string, code translate.ReasonCode, message string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationDecision] = decision
	pod.Annotations[AnnotationReason] = string(code)
	pod.Annotations[AnnotationDecisionMessage] = message
}

// annotate adds the decision to a pod that admission does not otherwise
// change (audit mode, kept as submitted, skipped in an opted-in
// namespace): the response becomes a patch of the annotations only. Left
// alone: a pod that asks for no mapped device, a mirror pod, a pod
// translated already (its claimbridge.io/template says so), and a pod that
// carries a decision when the new outcome is a Skip — the apiserver
// reinvoking the webhook on a pod it decided.
func (h *PodHandler) annotate(req admission.Request, submitted *corev1.Pod, mode Mode, outcome translate.Outcome, code translate.ReasonCode, row report.Row, resp admission.Response) admission.Response {
	if outcome == translate.OutcomeSkip {
		switch code {
		case translate.ReasonNoLegacyResources, translate.ReasonMirrorPod, translate.ReasonAlreadyTranslated:
			return resp
		}
		if submitted.Annotations[AnnotationDecision] != "" {
			return resp
		}
	}
	if code == "" {
		if r := decisiveOf(row); r != nil {
			code = r.Code
		}
	}
	return h.annotated(req, submitted, DecisionOf(mode, outcome), code, row, resp)
}

// annotated is resp with a patch that adds the decision's annotations to
// the pod as submitted (built like controller-runtime's defaulter: the
// changed copy against the request's raw object). resp's message stays.
func (h *PodHandler) annotated(req admission.Request, submitted *corev1.Pod, decision string, code translate.ReasonCode, row report.Row, resp admission.Response) admission.Response {
	pod := submitted.DeepCopy()
	setDecision(pod, decision, code, explanation(decision, code, row))
	raw, err := json.Marshal(pod)
	if err != nil {
		return resp // the decision stands without its annotations
	}
	patched := admission.PatchResponseFromRaw(req.Object.Raw, raw)
	if !patched.Allowed {
		return resp
	}
	// Only the annotations: the round trip through the typed pod adds
	// empty fields a client left out (status: {}, creationTimestamp:
	// null), which the patch need not carry.
	kept := patched.Patches[:0]
	for _, op := range patched.Patches {
		if op.Path == "/metadata" || op.Path == "/metadata/annotations" || strings.HasPrefix(op.Path, "/metadata/annotations/") {
			kept = append(kept, op)
		}
	}
	patched.Patches = kept
	patched.Result = resp.Result
	return patched
}

// decisiveOf is the reason that decided a row: its decisive reason, else
// the first warning, else the last reason (as report.Row.Headline).
func decisiveOf(row report.Row) *translate.Reason {
	if row.Decisive != nil && row.Decisive.Code != "" {
		return row.Decisive
	}
	for i := range row.Reasons {
		if row.Reasons[i].Severity == translate.SeverityWarning {
			return &row.Reasons[i]
		}
	}
	if n := len(row.Reasons); n > 0 {
		return &row.Reasons[n-1]
	}
	return nil
}
