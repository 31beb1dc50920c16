package decide

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/translate"
)

// ReasonOperatorReadsLimit: the operator that makes the workload reads the
// device count translation would remove, and has no field where the count
// could be said instead. For a pod: LeaderWorkerSet's pod webhook gives
// the multi-host TPU environment only to pods that ask for google.com/tpu
// (a custom resource's template: internal/offline and the operator table
// of docs/reference/workloads.md). KeepLegacy.
const ReasonOperatorReadsLimit translate.ReasonCode = "OperatorReadsLimit"

// lwsSetLabel marks a pod a LeaderWorkerSet made
// (kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go,
// SetNameLabelKey).
const lwsSetLabel = "leaderworkerset.sigs.k8s.io/name"

// operatorReadsPod says why a pod whose device count an operator reads
// from the pod itself stays as submitted, "" for any other pod.
//
// Operators read a custom resource before they make its pods, so their
// pods are translated as any pod, with one exception: LeaderWorkerSet's
// own pod webhook (kubernetes-sigs/lws pkg/webhooks/pod_webhook.go,
// PodWebhook.Default → pkg/utils/accelerators/tpu.go, AddTPUVariables)
// gives TPU_WORKER_HOSTNAMES, TPU_WORKER_ID and TPU_PROCESS_ADDRESSES only
// to pods that ask for google.com/tpu, and its pod controller reads the
// leader pod's request (pkg/controllers/pod_controller.go,
// AddTPUAnnotations). Mutating webhooks run in the order of their
// configurations' names, claimbridge's usually before LeaderWorkerSet's
// (lws-mutating-webhook-configuration): translated, the pod would reach it
// without the request and start without the environment; and whatever the
// order, the controller would find a leader that asks for no TPU.
func operatorReadsPod(pod *corev1.Pod) string {
	if _, ok := pod.Labels[lwsSetLabel]; !ok || !requestsTPU(pod) {
		return ""
	}
	return "LeaderWorkerSet's pod webhook (after claimbridge's) gives the multi-host TPU environment (TPU_WORKER_HOSTNAMES, TPU_WORKER_ID) " +
		"only to pods that ask for google.com/tpu, and its controller reads the leader's request: translated, the group would start without it"
}

// requestsTPU is LeaderWorkerSet's PodRequestsTPUs: google.com/tpu in the
// limits or requests of a container or init container.
func requestsTPU(pod *corev1.Pod) bool {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
				if q, ok := l["google.com/tpu"]; ok && !q.IsZero() {
					return true
				}
			}
		}
	}
	return false
}
