package translate

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
	"github.com/claimbridge/claimbridge/podfacts"
	"github.com/claimbridge/claimbridge/translate/celgen"
)

// Card types. HAMi's scheduler gives a pod only devices whose type its
// annotations admit (Project-HAMi/HAMi pkg/device/devices.go, CheckType):
// nvidia.com/use-gputype and nvidia.com/nouse-gputype are comma-separated
// lists; an entry (trimmed, non-empty) matches a card whose type contains
// it, ignoring case; a card qualifies when it matches an entry of use-gputype
// (if the annotation is set and not blank) and none of nouse-gputype. The
// type of an NVIDIA card is its NVML name, with "NVIDIA-" before a name that
// does not start with "NVIDIA" (pkg/device-plugin/nvidiadevice/nvinternal/
// plugin/register.go). A claim knows nothing of annotations, so translation
// turns them into a selector on the attribute that holds the name
// (ResourceRule.CardType): otherwise the pod would get any GPU. HAMi's own
// DRA webhook (Project-HAMi/HAMi-DRA pkg/webhook/dra/mutating.go) compares
// productName with the whole annotation for equality, which a list or a
// short name ("A100") never matches; claimbridge follows the scheduler.

// cardTypeSuffixes end the keys of HAMi's card-type annotations in every
// vendor's domain (nvidia.com/use-gputype, amd.com/nouse-gputype).
var cardTypeSuffixes = []string{"/use-gputype", "/nouse-gputype"}

// cardTypes reads the card-type annotations of every resource rule the
// pod's device uses have: a rule with CardType gets its selector
// (t.cardSel, which alternative adds to every alternative of the rule's
// requests); a pod that carries HAMi's annotations in the domain of a
// resource whose rule does not read them stays as submitted. It returns
// false to keep the pod.
func (t *translation) cardTypes() bool {
	ann := t.pod.Annotations
	seen := map[*v1alpha1.ResourceRule]bool{}
	for _, u := range t.uses {
		r := u.rule
		if seen[r] {
			continue
		}
		seen[r] = true
		if r.CardType == nil {
			domain, _, _ := strings.Cut(string(u.resource), "/")
			for _, s := range cardTypeSuffixes {
				key := domain + s
				if len(cardTypeEntries(ann[key])) > 0 {
					t.add(say(ReasonCardTypeNotTranslatable, annotationPath(key),
						"HAMi's scheduler gives the pod only %s devices whose card type this annotation admits, and the policy's rule for %s says of no device attribute how to select them (resources[].cardType): as a claim the pod could get any device; it keeps its device-plugin resources", u.resource, r.Name))
					return false
				}
			}
			continue
		}
		c := r.CardType
		use, noUse := cardTypeEntries(ann[c.Use]), []string(nil)
		if c.NoUse != "" {
			noUse = cardTypeEntries(ann[c.NoUse])
		}
		if len(use) == 0 && len(noUse) == 0 {
			continue
		}
		key := c.Use
		if len(use) == 0 {
			key = c.NoUse
		}
		expr, err := celgen.CardType(c, use, noUse)
		if err != nil {
			t.add(say(ReasonCardTypeNotTranslatable, annotationPath(key), "%v; the pod keeps its device-plugin resources", err))
			return false
		}
		if t.cardSel == nil {
			t.cardSel = map[*v1alpha1.ResourceRule]string{}
		}
		t.cardSel[r] = expr
		var what []string
		if len(use) > 0 {
			what = append(what, fmt.Sprintf("%s=%s: contains %s", c.Use, ann[c.Use], orList(use)))
		}
		if len(noUse) > 0 {
			what = append(what, fmt.Sprintf("%s=%s: contains none of %s", c.NoUse, ann[c.NoUse], strings.Join(noUse, ", ")))
		}
		t.add(say(ReasonCardTypeTranslated, annotationPath(key),
			"became a selector on %s of every request of %s, as HAMi's scheduler matches a card's type (%s), ignoring case: %s",
			c.Attribute, r.Name, cardTypeText(c), strings.Join(what, "; ")))
	}
	return true
}

func annotationPath(key string) *field.Path {
	return field.NewPath("metadata", "annotations").Key(key)
}

// cardTypeEntries splits an annotation as HAMi does: comma-separated, each
// entry trimmed, empty ones left out.
func cardTypeEntries(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// cardTypeText says how the type is made of the attribute.
func cardTypeText(c *v1alpha1.CardTypeRule) string {
	if c.Prefix == "" {
		return "the attribute's value"
	}
	return fmt.Sprintf("%s, with %s- before a value that does not start with %s", celgen.SplitAttr(c.Attribute).ID, c.Prefix, c.Prefix)
}

// orList is "a", "a or b", "a, b or c".
func orList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// LegacyDeviceSelectors are the selectors, per extended resource the pod
// asks for, that the device plugin's scheduler adds for this pod to the
// devices of the resource (the card types of ResourceRule.CardType): the
// placement check's legacy view counts only the devices that pass them, as
// HAMi's scheduler would. Resources without any are absent; annotations
// that cannot be expressed are left out (translation keeps such a pod
// legacy before any check).
func (p *Policy) LegacyDeviceSelectors(pod *corev1.Pod) map[corev1.ResourceName][]string {
	var out map[corev1.ResourceName][]string
	for _, n := range podfacts.ResourceNames(pod) {
		rule, _, ok := p.resourceRule(string(n))
		if !ok || rule.CardType == nil {
			continue
		}
		c := rule.CardType
		use, noUse := cardTypeEntries(pod.Annotations[c.Use]), []string(nil)
		if c.NoUse != "" {
			noUse = cardTypeEntries(pod.Annotations[c.NoUse])
		}
		if len(use) == 0 && len(noUse) == 0 {
			continue
		}
		expr, err := celgen.CardType(c, use, noUse)
		if err != nil {
			continue
		}
		if out == nil {
			out = map[corev1.ResourceName][]string{}
		}
		out[n] = []string{expr}
	}
	return out
}
