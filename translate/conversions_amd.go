package translate

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// The forms of AMD's node labeller (ROCm/k8s-device-plugin
// cmd/k8s-node-labeller, v1.31.0.10), in all four directions of the
// vocabulary (vocabulary.go). The labeller and the AMD DRA driver
// (ROCm/k8s-gpu-dra-driver, pkg/amdgpu) read the same sysfs and KFD files
// and write them differently:
//
//   - device-id: the labeller writes sysfs's device file without its "0x"
//     (74a1), the driver's deviceID keeps it (0x74a1) — HexID;
//   - vram: the labeller writes the first memory bank's size_in_bytes in
//     MiB, rounded down, divided by 1024 and rounded to the nearest whole
//     number, with a G (192G); the driver's memory capacity is the bytes —
//     RoundedGiB.

var hexID = regexp.MustCompile(`^[0-9a-f]+$`)

// hexValue is a label's hexadecimal ID in lower case without "0x"; ok is
// false when it is not one.
func hexValue(v string) (string, bool) {
	v = strings.ToLower(v)
	v = strings.TrimPrefix(v, "0x")
	return v, hexID.MatchString(v) && len(v) <= 16
}

// forwardHexID compares a hexadecimal ID written without "0x" with a string
// attribute that has it, in either case.
func forwardHexID(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
	a := celgen.SplitAttr(rule.Attribute)
	if eff, ok := presence(req, a.Guard()); ok {
		return eff, nil
	}
	if req.op != corev1.NodeSelectorOpIn && req.op != corev1.NodeSelectorOpNotIn {
		return effect{}, notTranslatable("%s: operator %s on a hexadecimal ID", req.key, req.op)
	}
	var ids []string
	for _, v := range req.values {
		h, ok := hexValue(v)
		if !ok {
			return effect{}, notTranslatable("%s: %q is not a hexadecimal ID", req.key, v)
		}
		ids = append(ids, "0x"+h)
	}
	pred, err := celgen.StringIn(a.Ref()+".lowerAscii()", ids)
	if err != nil {
		return effect{}, notTranslatable("%s: %v", req.key, err)
	}
	return effect{selectors: []string{celgen.Guarded(a.Guard(), pred, req.op == corev1.NodeSelectorOpNotIn)}}, nil
}

// backwardHexID is the first device's ID without "0x", in lower case.
func backwardHexID(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, n legacyNode) (string, bool) {
	for _, f := range rule.Families {
		for _, d := range n.devices(f) {
			if a, ok := d.attribute(rule.Attribute); ok && a.StringValue != nil {
				if h, ok := hexValue(*a.StringValue); ok {
					return h, true
				}
			}
		}
	}
	return "", false
}

// canonicalHexID writes an ID in lower case without "0x".
func canonicalHexID(_ *v1alpha1.NodeLabelRule, v string) string {
	if h, ok := hexValue(v); ok {
		return h
	}
	return v
}

// deviceHexID: the driver writes sysfs's device file, "0x" and lower case.
func deviceHexID(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, v string) (deviceFact, error) {
	h, ok := hexValue(v)
	if !ok {
		return deviceFact{}, fmt.Errorf("%q is not a hexadecimal ID", v)
	}
	return deviceFact{attribute: rule.Attribute, candidates: []candidate{{value: stringAttr("0x" + h)}}}, nil
}

// roundedGiB reads "192G": a whole number of GiB.
func roundedGiB(v string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSuffix(v, "G"), 10, 64)
	if err != nil || !strings.HasSuffix(v, "G") || n < 0 || n > 1<<30 {
		return 0, false
	}
	return n, true
}

// gibRange is the byte range, in MiB, [lo, hi), whose size the labeller
// writes as n GiB: it rounds the whole MiB to the nearest GiB, halves up,
// so n G is [n·1024−512, n·1024+512) MiB.
func gibRange(n int64) (lo, hi int64) {
	return max(0, n*1024-512), n*1024 + 512
}

// forwardRoundedGiB compares a rounded number of GiB with a byte capacity:
// the exact sizes the labeller rounds to it.
func forwardRoundedGiB(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, req labelReq, _ string) (effect, error) {
	c := celgen.SplitAttr(rule.Capacity)
	if eff, ok := presence(req, c.CapGuard()); ok {
		return eff, nil
	}
	if req.op != corev1.NodeSelectorOpIn && req.op != corev1.NodeSelectorOpNotIn {
		// Gt and Lt compare integers; "192G" is not one, on any node.
		return effect{}, notTranslatable("%s: operator %s on a size with a unit", req.key, req.op)
	}
	var parts []string
	for _, v := range req.values {
		n, ok := roundedGiB(v)
		if !ok {
			return effect{}, notTranslatable("%s: %q is not a whole number of GiB (192G)", req.key, v)
		}
		lo, hi := gibRange(n)
		parts = append(parts, c.CapInMi(lo, hi))
	}
	return capacityEffect(c, req, parts)
}

// backwardRoundedGiB writes the first device's capacity as the labeller
// does: whole MiB, then the nearest whole GiB.
func backwardRoundedGiB(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, n legacyNode) (string, bool) {
	for _, f := range rule.Families {
		for _, d := range n.devices(f) {
			if q, ok := d.capacity(rule.Capacity); ok {
				mib := q.Value() >> 20
				return strconv.FormatInt(int64(math.Round(float64(mib)/1024)), 10) + "G", true
			}
		}
	}
	return "", false
}

// canonicalRoundedGiB drops leading zeros ("0192G" is "192G").
func canonicalRoundedGiB(_ *v1alpha1.NodeLabelRule, v string) string {
	if n, ok := roundedGiB(v); ok {
		return strconv.FormatInt(n, 10) + "G"
	}
	return v
}

// deviceRoundedGiB: n G is written n Gi, the middle of the sizes the
// labeller rounds to it: the driver publishes the exact size, within 512Mi
// of it (the note says so).
func deviceRoundedGiB(_ *Policy, rule *v1alpha1.NodeLabelRule, _ string, v string) (deviceFact, error) {
	n, ok := roundedGiB(v)
	if !ok {
		return deviceFact{}, fmt.Errorf("%q is not a whole number of GiB", v)
	}
	return deviceFact{capacity: rule.Capacity, quantity: *resource.NewQuantity(n<<30, resource.BinarySI),
		note: fmt.Sprintf("%s: the label's %s is rounded to whole GiB; written as %dGi, the driver publishes the exact size (at least %dMi, under %dMi)",
			shortName(rule.Capacity), v, n, max(0, n*1024-512), n*1024+512)}, nil
}
