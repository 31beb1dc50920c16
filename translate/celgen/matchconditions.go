package celgen

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
// the webhook only the pods a policy of these resource rules and these
// schedulers (those whose output is not Skip) can act on
// (translate.Policy.MatchConditions says which pods).
func MatchConditions(resources []v1alpha1.ResourceRule, schedulers []string) []MatchCondition {
	var exact, prefixes []string
	for _, r := range resources {
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
			lits = append(lits, MustQuote(e))
		}
		tests = append(tests, "k in ["+strings.Join(lits, ", ")+"]")
	}
	for _, pre := range prefixes {
		tests = append(tests, "k.startsWith("+MustQuote(pre)+")")
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
	optOut := "!(has(object.metadata.annotations) && " + MustQuote(api.AnnotationSkip) + " in object.metadata.annotations && " +
		"object.metadata.annotations[" + MustQuote(api.AnnotationSkip) + "] == \"true\")"
	var quoted []string
	for _, s := range schedulers { // not those with output Skip
		quoted = append(quoted, MustQuote(s))
	}
	scheduler := "(has(object.spec.schedulerName) && object.spec.schedulerName != \"\" ? object.spec.schedulerName : " +
		MustQuote(v1alpha1.DefaultScheduler) + ") in [" + strings.Join(quoted, ", ") + "]"
	return []MatchCondition{
		{Name: "requests-mapped-devices", Expression: devices},
		{Name: "not-opted-out", Expression: optOut},
		{Name: "not-bound-at-creation", Expression: "!has(object.spec.nodeName) || object.spec.nodeName == \"\""},
		{Name: "scheduler-allocates-claims", Expression: scheduler},
	}
}
