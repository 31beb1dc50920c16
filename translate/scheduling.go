package translate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// A translated pod relies on its scheduler to allocate its claim: kube-
// scheduler's DynamicResources plugin does, and so do some other schedulers
// (PolicySpec.Schedulers says which). A pod bound at creation (spec.nodeName)
// passes no scheduler at all: the kubelet would wait for a claim no one
// allocates. Such pods keep their device-plugin resources.

// schedulerName is the pod's scheduler as API defaulting names it: an empty
// schedulerName is kube-scheduler's.
func schedulerName(pod *corev1.Pod) string {
	if pod.Spec.SchedulerName == "" {
		return v1alpha1.DefaultScheduler
	}
	return pod.Spec.SchedulerName
}

// scheduledWithClaims checks that a pod that asks for a device the policy
// maps will be placed by a scheduler that allocates claims. A pod that asks
// for none is left to collectUses (NoLegacyResources). It returns false
// when the pod is skipped.
func (t *translation) scheduledWithClaims() bool {
	if !t.asksForMappedResource() {
		return true
	}
	pod := t.pod
	if pod.Spec.NodeName != "" {
		t.add(say(ReasonNodeNamePreset, field.NewPath("spec", "nodeName"),
			"the pod is bound to node %q at creation, without a scheduler, so no one would allocate a claim; it keeps its device-plugin resources", pod.Spec.NodeName))
		return false
	}
	// schedulers.go: the scheduler's output profile, and Kueue's.
	return t.resolveOutput()
}

// asksForMappedResource reports whether a container asks for a resource a
// device or capacity rule maps (companions such as CPUs do not count).
func (t *translation) asksForMappedResource() bool {
	for _, list := range [][]corev1.Container{t.pod.Spec.InitContainers, t.pod.Spec.Containers} {
		for i := range list {
			for _, rl := range []corev1.ResourceList{list[i].Resources.Limits, list[i].Resources.Requests} {
				for n := range rl {
					if rule, _, ok := t.p.resourceRule(string(n)); ok && len(rule.OnlyWith) == 0 {
						return true
					}
				}
			}
		}
	}
	return false
}

// keepsPreemption checks what translation does to the pod's preemption. In
// Kubernetes 1.37 a pod whose devices come from a claim cannot preempt
// lower-priority pods to get them: the DynamicResources plugin implements
// no PreFilterExtensions, so the preemption dry run never frees a victim's
// devices, and a node where the claim does not fit is
// UnschedulableAndUnresolvable, never a preemption candidate
// (pkg/scheduler/framework/plugins/dynamicresources, v1.37.2; no
// DRAPreemption gate exists in 1.37). It warns (PreemptionLost) when the pod
// could preempt, and returns false when the policy keeps such pods legacy.
// With preemption.draPreemption the scheduler preempts for claims, and
// nothing is lost.
func (t *translation) keepsPreemption() bool {
	if t.p.spec.Preemption.DRAPreemption {
		return true // the scheduler preempts for claims (KEP-5690)
	}
	spec := t.pod.Spec
	if spec.PreemptionPolicy != nil && *spec.PreemptionPolicy == corev1.PreemptNever {
		return true
	}
	var who string
	var p *field.Path
	unresolved := false
	switch {
	case spec.Priority != nil && *spec.Priority > 0:
		who, p = fmt.Sprintf("priority %d", *spec.Priority), field.NewPath("spec", "priority")
	case spec.Priority == nil && spec.PriorityClassName != "":
		// A manifest: the Priority admission plugin resolves the class later.
		who, p, unresolved = fmt.Sprintf("priorityClassName %q (priority not resolved yet)", spec.PriorityClassName), field.NewPath("spec", "priorityClassName"), true
	default:
		return true
	}
	msg := fmt.Sprintf("with %s the pod may preempt lower-priority pods, but in Kubernetes 1.37 a pod whose devices come from a claim cannot preempt for them: translated, it would wait for devices to free up", who)
	limit := t.p.spec.Preemption.KeepLegacyAbovePriority
	if limit != nil && (unresolved || *spec.Priority > *limit) {
		t.add(say(ReasonPreemptionLost, p, "%s; kept as submitted (spec.preemption.keepLegacyAbovePriority: %d)", msg, *limit))
		return false
	}
	t.add(say(ReasonPreemptionLost, p, "%s", msg))
	return true
}
