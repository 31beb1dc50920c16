package legacy

// The policy's fallbacks on the legacy side of the placement check: a
// fallback from H100 to A100 says the operator accepts A100 nodes for such a
// pod, so the pod with the fallback's labels and counts is the pod as
// submitted too.

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/translate"
)

// FallbackVariants are the pod as submitted as the policy's fallbacks
// widen it: for a fallback whose match the pod asks for (the resource, and
// the match's labels in its nodeSelector or in every required term), the
// pod with the alternative's labels in place of the match's and its device
// count multiplied.
func FallbackVariants(p *translate.Policy, pod *corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	spec := p.Spec()
	for i := range spec.Fallbacks {
		fb := &spec.Fallbacks[i]
		res := corev1.ResourceName(fb.Match.Resource)
		if !asksFor(pod, res) || !hasLabels(pod, fb.Match.NodeSelector) {
			continue
		}
		for _, alt := range fb.Alternatives {
			v := pod.DeepCopy()
			dropLabels(v, fb.Match.NodeSelector)
			if len(alt.NodeSelector) > 0 && v.Spec.NodeSelector == nil {
				v.Spec.NodeSelector = map[string]string{}
			}
			for k, val := range alt.NodeSelector {
				v.Spec.NodeSelector[k] = p.CanonicalLabelValue(k, val)
			}
			to := res
			if alt.Resource != "" {
				to = corev1.ResourceName(alt.Resource)
			}
			replaceResource(v, res, to, max(alt.CountMultiplier, 1))
			out = append(out, v)
		}
	}
	return out
}

func asksFor(pod *corev1.Pod, res corev1.ResourceName) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if _, ok := c.Resources.Limits[res]; ok {
				return true
			}
			if _, ok := c.Resources.Requests[res]; ok {
				return true
			}
		}
	}
	return false
}

// hasLabels: every label is required by the nodeSelector, or by every
// required term as "key In [value]".
func hasLabels(pod *corev1.Pod, labels map[string]string) bool {
	for k, v := range labels {
		if pod.Spec.NodeSelector[k] == v {
			continue
		}
		a := pod.Spec.Affinity
		if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			return false
		}
		terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) == 0 {
			return false
		}
		for _, t := range terms {
			if !slices.ContainsFunc(t.MatchExpressions, func(e corev1.NodeSelectorRequirement) bool {
				return e.Key == k && e.Operator == corev1.NodeSelectorOpIn && slices.Equal(e.Values, []string{v})
			}) {
				return false
			}
		}
	}
	return true
}

func dropLabels(pod *corev1.Pod, labels map[string]string) {
	for k := range labels {
		delete(pod.Spec.NodeSelector, k)
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return
	}
	for i := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		t := &a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i]
		t.MatchExpressions = slices.DeleteFunc(t.MatchExpressions, func(e corev1.NodeSelectorRequirement) bool {
			_, ok := labels[e.Key]
			return ok
		})
	}
}

func replaceResource(pod *corev1.Pod, from, to corev1.ResourceName, mul int64) {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			for _, rl := range []corev1.ResourceList{list[i].Resources.Limits, list[i].Resources.Requests} {
				q, ok := rl[from]
				if !ok {
					continue
				}
				delete(rl, from)
				n := q.Value() * mul
				q.Set(n)
				rl[to] = q
			}
		}
	}
}
