package translate

import "github.com/claimbridge/claimbridge/translate/celgen"

// MatchConditions returns the CEL matchConditions that let kube-apiserver send
// the webhook only the pods this policy can act on: pods with a container
// (app, init or sidecar) that requests or limits an extended resource the
// policy maps, that did not opt out, that are not bound at creation
// (spec.nodeName) and whose scheduler is one of the policy's schedulers
// whose output is not Skip.
// Pods that only carry node labels the policy knows are not sent: without a
// device request there is nothing to translate. Every condition must hold
// (the API ANDs matchConditions). The webhook sees the pod after API
// defaulting, which sets schedulerName; the condition also reads an empty
// one as default-scheduler, as translation does.
func (p *Policy) MatchConditions() []celgen.MatchCondition {
	return celgen.MatchConditions(p.spec.Resources, p.Schedulers())
}
