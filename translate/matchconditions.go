package translate

import (
	"slices"
	"strings"

	"github.com/claimbridge/claimbridge/api"
	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// MatchCondition is an admission webhook matchCondition (same fields as
// admissionregistration.k8s.io/v1 MatchCondition).
type MatchCondition struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

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
func (p *Policy) MatchConditions() []MatchCondition {
	var exact, prefixes []string
	for _, r := range p.spec.Resources {
		if len(r.OnlyWith) > 0 {
			continue // companions (cpu) never make a pod worth sending on their own
		}
		if base, ok := strings.CutSuffix(r.Name, "*"); ok {
			prefixes = append(prefixes, base)
		} else {
			exact = append(exact, r.Name)
		}
	}
	slices.Sort(exact)
	exact = slices.Compact(exact)
	slices.Sort(prefixes)
	prefixes = slices.Compact(prefixes)

	var tests []string
	if len(exact) > 0 {
		lits := make([]string, 0, len(exact))
		for _, e := range exact {
			lits = append(lits, mustCELString(e))
		}
		tests = append(tests, "k in ["+strings.Join(lits, ", ")+"]")
	}
	for _, pre := range prefixes {
		tests = append(tests, "k.startsWith("+mustCELString(pre)+")")
	}
	mapped := strings.Join(tests, " || ")
	if mapped == "" {
		mapped = "false"
	}
	container := "(has(c.resources) && ((has(c.resources.limits) && c.resources.limits.exists(k, " + mapped + ")) || " +
		"(has(c.resources.requests) && c.resources.requests.exists(k, " + mapped + "))))"
	if len(exact) == 0 && len(prefixes) == 0 {
		container = "false"
	}
	devices := "object.spec.containers.exists(c, " + container + ") || " +
		"(has(object.spec.initContainers) && object.spec.initContainers.exists(c, " + container + "))"
	optOut := "!(has(object.metadata.annotations) && " + mustCELString(api.AnnotationSkip) + " in object.metadata.annotations && " +
		"object.metadata.annotations[" + mustCELString(api.AnnotationSkip) + "] == \"true\")"
	var schedulers []string
	for _, s := range p.Schedulers() { // not those with output Skip
		schedulers = append(schedulers, mustCELString(s))
	}
	scheduler := "(has(object.spec.schedulerName) && object.spec.schedulerName != \"\" ? object.spec.schedulerName : " +
		mustCELString(v1alpha1.DefaultScheduler) + ") in [" + strings.Join(schedulers, ", ") + "]"
	return []MatchCondition{
		{Name: "requests-mapped-devices", Expression: devices},
		{Name: "not-opted-out", Expression: optOut},
		{Name: "not-bound-at-creation", Expression: "!has(object.spec.nodeName) || object.spec.nodeName == \"\""},
		{Name: "scheduler-allocates-claims", Expression: scheduler},
	}
}
