package explain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/claimbridge/claimbridge/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/feasibility"
	"github.com/claimbridge/claimbridge/translate"
)

// Judged drops the resources the policy reads as capacities of a device.
func Judged(p *translate.Policy, gaps []feasibility.Unservable) []feasibility.Unservable {
	rules := p.Spec().Resources
	return slices.DeleteFunc(gaps, func(g feasibility.Unservable) bool {
		return slices.ContainsFunc(rules, func(r v1alpha1.ResourceRule) bool {
			return r.CapacityOf != "" && matchesResource(r.Name, g.Resource)
		})
	})
}

// matchesResource: a rule's name, exact or a pattern with a trailing *.
func matchesResource(rule string, name corev1.ResourceName) bool {
	if prefix, ok := strings.CutSuffix(rule, "*"); ok {
		return strings.HasPrefix(string(name), prefix)
	}
	return rule == string(name)
}

// UnservableMessage says what no node offers: "no node offers
// nvidia.com/gpu any more (DRA replaced the device plugin)", or "no node
// offers 8 nvidia.com/gpu (at most 4 on one node)".
func UnservableMessage(gaps []feasibility.Unservable, dra bool) string {
	var parts, excluded []string
	var elsewhere []string
	gone := true
	for _, g := range gaps {
		switch {
		case len(g.Elsewhere) > 0:
			excluded = append(excluded, string(g.Resource))
			for _, n := range g.Elsewhere {
				if !slices.Contains(elsewhere, n) {
					elsewhere = append(elsewhere, n)
				}
			}
		case g.Most.IsZero():
			parts = append(parts, string(g.Resource))
		default:
			gone = false
			parts = append(parts, fmt.Sprintf("%s %s (at most %s on one node)", g.Requested.String(), g.Resource, g.Most.String()))
		}
	}
	var msgs []string
	if len(parts) > 0 {
		msg := "no node offers " + strings.Join(parts, ", ")
		if gone && dra {
			msg += " any more (DRA replaced the device plugin)"
		}
		msgs = append(msgs, msg)
	}
	if len(excluded) > 0 {
		msgs = append(msgs, fmt.Sprintf("no node this pod may run on offers %s: only %s, which its node selector, affinity, tolerations or nodeName exclude",
			strings.Join(excluded, ", "), nodeList(elsewhere)))
	}
	return strings.Join(msgs, "; ")
}

// nodeList names up to three nodes: "a, b, c and 4 more".
func nodeList(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}

// Consequence is what happens to the pod, or would had it not been
// denied: it waits Pending, or the kubelet of the node it is bound to
// refuses it.
func Consequence(pod *corev1.Pod, denied bool) string {
	switch {
	case pod.Spec.NodeName != "" && denied:
		return "; the kubelet of " + pod.Spec.NodeName + " would refuse this pod"
	case pod.Spec.NodeName != "":
		return "; the kubelet of " + pod.Spec.NodeName + " will refuse this pod"
	case denied:
		return "; this pod would stay Pending"
	}
	return "; this pod stays Pending"
}
