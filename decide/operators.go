package decide

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/reason"
)

// ReasonOperatorReadsLimit: the operator that makes the workload reads the
// device count translation would remove, and has no field where the count
// could be said instead. For a pod: LeaderWorkerSet's pod webhook gives
// the multi-host TPU environment only to pods that ask for google.com/tpu
// (a custom resource's template: internal/offline and the operator table
// of docs/reference/workloads.md). KeepLegacy.
const ReasonOperatorReadsLimit reason.Code = "OperatorReadsLimit"

// ReasonMultiHostTPUEnvironment: the pod is a worker of a multi-host TPU
// slice whose environment the platform gives only to pods that request
// google.com/tpu: GKE's TPU webhook gives TPU_WORKER_ID and
// TPU_WORKER_HOSTNAMES to the pods of an Indexed Job (JobSet's Jobs are
// Indexed) with a subdomain and parallelism above 1; the TPU webhook of
// GKE's Ray operator add-on to the workers of a multi-host Ray group.
// Translated, the workers would start without it. KeepLegacy.
const ReasonMultiHostTPUEnvironment reason.Code = "MultiHostTPUEnvironment"

// Labels and annotations the controllers put on the pods they make.
const (
	// jobCompletionIndex marks a pod of an Indexed Job, as an annotation
	// (and since Kubernetes 1.28 a label too): batch/v1
	// JobCompletionIndexAnnotation.
	jobCompletionIndex = "batch.kubernetes.io/job-completion-index"
	// rayNodeType is KubeRay's label of a Ray pod's role, "head" or
	// "worker" (ray-operator/controllers/ray/utils/constant.go,
	// RayNodeTypeLabelKey).
	rayNodeType = "ray.io/node-type"
)

// lwsSetLabel marks a pod a LeaderWorkerSet made
// (kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go,
// SetNameLabelKey).
const lwsSetLabel = "leaderworkerset.sigs.k8s.io/name"

// operatorReadsPod says why a pod whose device request an operator or the
// platform reads from the pod itself stays as submitted, and with which
// reason code; "" for any other pod.
//
// Operators read a custom resource before they make its pods, so their
// pods are translated as any pod, with these exceptions: the workers of a
// multi-host TPU slice whose environment GKE gives only to pods that ask
// for google.com/tpu (multiHostTPUWorker, MultiHostTPUEnvironment), and
// LeaderWorkerSet's
// own pod webhook (kubernetes-sigs/lws pkg/webhooks/pod_webhook.go,
// PodWebhook.Default → pkg/utils/accelerators/tpu.go, AddTPUVariables)
// gives TPU_WORKER_HOSTNAMES, TPU_WORKER_ID and TPU_PROCESS_ADDRESSES only
// to pods that ask for google.com/tpu, and its pod controller reads the
// leader pod's request (pkg/controllers/pod_controller.go,
// AddTPUAnnotations). Mutating webhooks run in the order of their
// configurations' names, claimbridge's usually before LeaderWorkerSet's
// (lws-mutating-webhook-configuration): translated, the pod would reach it
// without the request and start without the environment; and whatever the
// order, the controller would find a leader that asks for no TPU
// (OperatorReadsLimit).
func operatorReadsPod(pod *corev1.Pod) (reason.Code, string) {
	if !podfacts.RequestsTPU(pod) {
		return "", ""
	}
	if _, ok := pod.Labels[lwsSetLabel]; ok {
		return ReasonOperatorReadsLimit, "LeaderWorkerSet's pod webhook (after claimbridge's) gives the multi-host TPU environment (TPU_WORKER_HOSTNAMES, TPU_WORKER_ID) " +
			"only to pods that ask for google.com/tpu, and its controller reads the leader's request: translated, the group would start without it"
	}
	if why := multiHostTPUWorker(pod); why != "" {
		return ReasonMultiHostTPUEnvironment, why
	}
	return "", ""
}

// multiHostTPUWorker says why a pod is a worker of a multi-host TPU slice
// whose environment the platform gives only to pods that request
// google.com/tpu, "" for any other pod:
//
//   - a pod of an Indexed Job (the completion-index annotation or label)
//     with a subdomain: GKE's TPU webhook sets TPU_WORKER_ID and
//     TPU_WORKER_HOSTNAMES for the pods of an Indexed Job with a subdomain
//     and parallelism above 1 that request google.com/tpu (GKE's "Deploy
//     TPU workloads" page, multi-host slices; JobSet makes Indexed Jobs with
//     a subdomain by default). A pod does not show its Job's parallelism:
//     the subdomain, which only a pod that looks its peers up needs, stands
//     for it;
//   - a KubeRay worker (label ray.io/node-type: worker) whose topology
//     selector names a slice of more chips than it asks for: the TPU
//     webhook of GKE's Ray operator add-on sets them for the workers of a
//     multi-host group (numOfHosts above 1, which a pod does not show).
//
// A pod whose TPU containers set both variables themselves needs no
// webhook. The offline tools read the workload's own fields instead
// (internal/podtemplates: completionMode, parallelism, numOfHosts).
func multiHostTPUWorker(pod *corev1.Pod) string {
	if podfacts.SetsTPUEnvironment(pod) {
		return ""
	}
	_, annotated := pod.Annotations[jobCompletionIndex]
	_, labelled := pod.Labels[jobCompletionIndex]
	if (annotated || labelled) && pod.Spec.Subdomain != "" {
		return "GKE gives the multi-host TPU environment (TPU_WORKER_ID, TPU_WORKER_HOSTNAMES) only to the pods of an Indexed Job with a subdomain that ask for google.com/tpu: " +
			"translated, the slice's workers would start without it and could not find each other"
	}
	if pod.Labels[rayNodeType] == "worker" && podfacts.MultiHostTPUSlice(pod) {
		return "the TPU webhook of GKE's Ray operator add-on gives the multi-host TPU environment (TPU_WORKER_ID, TPU_WORKER_HOSTNAMES) only to Ray workers that ask for google.com/tpu: " +
			"translated, the slice's workers would start without it and could not find each other"
	}
	return ""
}
