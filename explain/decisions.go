package explain

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/reason"
	"github.com/claimbridge/claimbridge/translate"
)

// Reason codes of pods the webhook never decided.
const (
	// ReasonNotSeenByWebhook: a pod in an opted-in namespace that asks for
	// a device the policy maps carries no decision although the webhook's
	// matchConditions would have sent it: it was created before the
	// namespace opted in or claimbridge ran, or while the webhook could
	// not be reached (failurePolicy Ignore).
	ReasonNotSeenByWebhook reason.Code = "NotSeenByWebhook"
)

// DecisionOf maps an admission outcome in a mode to the annotation value.
func DecisionOf(mode api.Mode, outcome reason.Outcome) string {
	switch outcome {
	case reason.OutcomeTranslate:
		if mode == api.ModeEnforce {
			return api.DecisionTranslated
		}
		return api.DecisionWouldTranslate
	case reason.OutcomeKeepLegacy:
		return api.DecisionKeptLegacy
	default:
		return api.DecisionSkipped
	}
}

// Unseen says why a pod that asks for devices the policy maps carries no
// decision of the webhook, from what the pod shows: the matchConditions
// that keep it away (OptedOut, SchedulerNotListed, SchedulerSkipped,
// NodeNamePreset) or, when none would, NotSeenByWebhook. ok is false for a
// pod that carries a decision, is translated or asks for no mapped device.
// started is when the webhook began watching: a pod bound to a node and
// created after it, with no decision, was bound at creation (a pod bound
// by kube-scheduler would have been sent first).
func Unseen(p *corev1.Pod, pol *translate.Policy, started time.Time) (code reason.Code, cause string, ok bool) {
	if p.Annotations[api.AnnotationDecision] != "" || p.Annotations[api.AnnotationTemplate] != "" {
		return "", "", false
	}
	if len(pol.DevicesRequested(p)) == 0 {
		return "", "", false
	}
	scheduler := p.Spec.SchedulerName
	if scheduler == "" {
		scheduler = v1alpha1.DefaultScheduler
	}
	switch {
	case p.Annotations[api.AnnotationSkip] == "true":
		return translate.ReasonOptedOut, "the pod opted out with the annotation " + api.AnnotationSkip, true
	case !slices.Contains(pol.Schedulers(), scheduler):
		if _, listed := pol.SchedulerProfile(scheduler); listed {
			return translate.ReasonSchedulerSkipped, fmt.Sprintf("the policy lists scheduler %q with output Skip: the webhook's matchConditions do not send its pods", scheduler), true
		}
		return translate.ReasonSchedulerNotListed, fmt.Sprintf("scheduler %q is not one the policy lists: the webhook's matchConditions do not send its pods", scheduler), true
	case p.Spec.NodeName != "" && !p.CreationTimestamp.Time.Before(started.Truncate(time.Second)):
		// The creation time has whole seconds: a pod created in the second
		// the webhook began is taken as created after.
		return translate.ReasonNodeNamePreset, fmt.Sprintf("bound to node %q at creation: the webhook's matchConditions do not send pods that no scheduler places", p.Spec.NodeName), true
	}
	return ReasonNotSeenByWebhook, "no decision recorded: created before the namespace opted in or before claimbridge ran, or while the webhook could not be reached (failurePolicy Ignore)", true
}

// OutcomeOf is the outcome of a decision annotation.
func OutcomeOf(decision string) reason.Outcome {
	switch decision {
	case api.DecisionTranslated, api.DecisionWouldTranslate:
		return reason.OutcomeTranslate
	case api.DecisionKeptLegacy:
		return reason.OutcomeKeepLegacy
	}
	return reason.OutcomeSkip
}

// excludedNamespaces are never decided, whatever their labels say.
var excludedNamespaces = []string{"kube-system"}

// Excluded: the namespace is kube-system or claimbridge's own (own); the
// webhook never changes their pods and nothing judges them.
func Excluded(namespace, own string) bool {
	return namespace == own || slices.Contains(excludedNamespaces, namespace)
}
