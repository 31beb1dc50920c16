package webhook

import (
	"bytes"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"
)

// decodePod decodes the pod of a request. One for a core/v1 Pod in JSON,
// which is what kube-apiserver sends a pod webhook, is unmarshalled as the
// API machinery's JSON serializer unmarshals it (case-sensitive keys,
// integers kept as integers, unknown fields ignored), without first
// reading its kind out of the JSON: the request names it. Anything else,
// and an object whose own apiVersion or kind is not the request's, goes to
// d, the scheme's decoder, which says what it is.
func decodePod(d admission.Decoder, req admission.Request, pod *corev1.Pod) error {
	raw := bytes.TrimLeft(req.Object.Raw, " \t\r\n")
	if req.Kind.Group != "" || req.Kind.Version != "v1" || req.Kind.Kind != "Pod" || len(raw) == 0 || raw[0] != '{' {
		return d.Decode(req, pod)
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, pod); err != nil {
		return err
	}
	if (pod.Kind != "" && pod.Kind != "Pod") || (pod.APIVersion != "" && pod.APIVersion != "v1") {
		*pod = corev1.Pod{}
		return d.Decode(req, pod)
	}
	return nil
}
