package translate

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// Whole-node drivers. A driver that prepares only claims taking every one
// of its devices on a node (the Google TPU DRA driver: its kubelet plugin
// refuses a claim for fewer chips than the node has) strands a claim for
// fewer: the scheduler binds the pod, the kubelet never starts it. Its
// devices publish the node's count (ResourceRule.WholeNodeCount, the TPU
// driver's chipCount), so a pod asking for N of the resource asks for
// devices of nodes with exactly N: the allocator takes no other node, and
// where the fleet has none the placement check keeps the pod as submitted.

// wholeNode is the selector "count attribute == N" of a whole-node rule,
// N the pod's effective count of the resource (all its containers', as
// kube-scheduler counts it: one claim takes them all), and says so once.
func (t *translation) wholeNode(res corev1.ResourceName, rule *v1alpha1.ResourceRule) (string, error) {
	q := podfacts.EffectiveRequests(t.pod)[res]
	n := q.Value()
	expr, err := celgen.Requirement(celgen.SplitAttr(rule.WholeNodeCount), v1alpha1.AttrInt, "In", []string{strconv.FormatInt(n, 10)})
	if err != nil {
		return "", fmt.Errorf("wholeNodeCount %s: %w", rule.WholeNodeCount, err)
	}
	if !t.saidWholeNode[res] {
		if t.saidWholeNode == nil {
			t.saidWholeNode = map[corev1.ResourceName]bool{}
		}
		t.saidWholeNode[res] = true
		t.add(say(ReasonWholeNodeOnly, nil, "%s: %d asks for every device of a node with exactly %d (%s == %d): %s's driver prepares only claims for all of a node's devices",
			res, n, n, rule.WholeNodeCount, n, rule.DeviceClassName))
	}
	return expr, nil
}
