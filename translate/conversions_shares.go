package translate

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// The conversions of GPU Feature Discovery's sharing labels (vocabulary.go):
// nvidia.com/gpu.replicas, the replicas the device plugin advertises per GPU
// (1 when it does not share, "0" with sharing disabled), and
// nvidia.com/gpu.sharing-strategy (none, time-slicing, mps). Their device
// counterpart is the share capacity (shares.go): a device that allows
// multiple allocations and publishes N shares is a GPU time-sliced N ways;
// any other device is not shared. Both directions read the label so, on any
// pod: a pod that selects replicas=1 or strategy none keeps to devices that
// are not shared, as GFD would have kept it off time-sliced nodes. Only for
// a family whose shares the policy translates as consumable shares (a
// shared resource of sharing mode ConsumableShares); for any other the
// label is not the devices' to say, and it stays on the pod.

// forwardReplicas: replicas N > 1 is a device shared N ways, 1 (or 0) a
// device that is not shared; Gt and Lt compare the shares of shared
// devices (a device that is not shared has 1).
func forwardReplicas(p *Policy, rule *v1alpha1.NodeLabelRule, _ string, req labelReq, family string) (effect, error) {
	if p.sharesRule(family) == nil {
		return effect{notForUs: true}, nil
	}
	c := celgen.SplitAttr(rule.Capacity)
	switch req.op {
	case corev1.NodeSelectorOpExists:
		return effect{implied: true}, nil
	case corev1.NodeSelectorOpDoesNotExist:
		return effect{}, notTranslatable("%s asks for nodes GPU Feature Discovery did not label, which a device cannot say", req)
	}
	var parts []string
	for _, v := range req.values {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return effect{}, notTranslatable("%s: %q is not a number of replicas", req.key, v)
		}
		q := celgen.MustQuote(strconv.FormatInt(n, 10))
		switch req.op {
		case corev1.NodeSelectorOpGt:
			if n < 1 {
				return effect{implied: true}, nil
			}
			parts = append(parts, celgen.ShareSelector(c)+" && "+c.CapRef()+".compareTo(quantity("+q+")) > 0")
		case corev1.NodeSelectorOpLt:
			switch {
			case n <= 1:
				return effect{}, notTranslatable("%s: fewer than %d replicas is no GPU", req, n)
			case n == 2:
				parts = append(parts, celgen.ExclusiveSelector)
			default:
				parts = append(parts, "("+celgen.ExclusiveSelector+" || ("+celgen.ShareSelector(c)+" && "+c.CapRef()+".compareTo(quantity("+q+")) < 0))")
			}
		default:
			if n <= 1 {
				parts = append(parts, celgen.ExclusiveSelector)
			} else {
				parts = append(parts, celgen.Shared(c, n))
			}
		}
	}
	if len(parts) == 0 {
		return effect{}, notTranslatable("%s: no value", req.key)
	}
	return partsEffect(parts, req.op), nil
}

// partsEffect selects the devices one of parts admits (In), or none of
// them admits (NotIn).
func partsEffect(parts []string, op corev1.NodeSelectorOperator) effect {
	pred := celgen.Or(parts)
	if op == corev1.NodeSelectorOpNotIn {
		pred = celgen.Not(pred)
	}
	return effect{selectors: []string{pred}}
}

// backwardReplicas is the first device's shares, "1" when it is not shared.
func backwardReplicas(p *Policy, rule *v1alpha1.NodeLabelRule, _ string, n legacyNode) (string, bool) {
	d, f, ok := firstDevice(rule.Families, n)
	if !ok {
		return "", false
	}
	switch s, shared := p.replicas(d, f); {
	case shared && s > 0:
		return strconv.FormatInt(s, 10), true
	case shared:
		return "", false // any number: no count to say
	}
	return "1", true
}

// firstDevice is the node's first device of the first of the families
// that has one, as GFD labels a node by its first GPU.
func firstDevice(families []string, n legacyNode) (LegacyDevice, string, bool) {
	for _, f := range families {
		if ds := n.devices(f); len(ds) > 0 {
			return ds[0], f, true
		}
	}
	return LegacyDevice{}, "", false
}

// GFD's sharing strategies (k8s-device-plugin api/config/v1,
// SharingStrategy).
const (
	strategyNone        = "none"
	strategyTimeSlicing = "time-slicing"
	strategyMPS         = "mps"
)

// forwardSharingStrategy: time-slicing is a shared device, none one that is
// not shared; MPS has no device counterpart (the pod is kept before labels
// are converted, SharedMPSNotMapped, when the policy translates its shares).
func forwardSharingStrategy(p *Policy, rule *v1alpha1.NodeLabelRule, _ string, req labelReq, family string) (effect, error) {
	if p.sharesRule(family) == nil {
		return effect{notForUs: true}, nil
	}
	c := celgen.SplitAttr(rule.Capacity)
	switch req.op {
	case corev1.NodeSelectorOpExists:
		return effect{implied: true}, nil
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
	default:
		return effect{}, notTranslatable("%s: operator %s on a sharing strategy", req.key, req.op)
	}
	var parts []string
	for _, v := range req.values {
		switch v {
		case strategyNone:
			parts = append(parts, celgen.ExclusiveSelector)
		case strategyTimeSlicing:
			parts = append(parts, celgen.ShareSelector(c))
		case strategyMPS:
			if req.op == corev1.NodeSelectorOpNotIn {
				// No DRA device is shared by MPS.
				continue
			}
			return effect{}, notTranslatable("%s: no device says it is shared by MPS", req)
		default:
			return effect{}, notTranslatable("%s: %q is not a sharing strategy GFD writes (none, time-slicing, mps)", req.key, v)
		}
	}
	if len(parts) == 0 {
		return effect{implied: true}, nil
	}
	return partsEffect(parts, req.op), nil
}

// backwardSharingStrategy is time-slicing for a shared first device, none
// otherwise.
func backwardSharingStrategy(p *Policy, rule *v1alpha1.NodeLabelRule, _ string, n legacyNode) (string, bool) {
	d, f, ok := firstDevice(rule.Families, n)
	if !ok {
		return "", false
	}
	if _, shared := p.replicas(d, f); shared {
		return strategyTimeSlicing, true
	}
	return strategyNone, true
}

// canonicalReplicas: GFD writes 0 replicas where sharing is disabled, which
// is a GPU that is not shared, as 1 is.
func canonicalReplicas(_ *v1alpha1.NodeLabelRule, v string) string {
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil:
		return v
	case n == 0:
		return "1"
	}
	return strconv.FormatInt(n, 10)
}
