package celgen

import (
	"fmt"
	"strings"

	"github.com/claimbridge/claimbridge/api/v1alpha1"
)

// CardType is the CEL selector that admits the devices HAMi admits:
// the type (the attribute, with the prefix) in lower case contains an entry
// of use, if any, and none of noUse. HAMi folds case with Go's Unicode upper
// case, CEL's lowerAscii only ASCII letters, so an entry must be printable
// ASCII.
func CardType(c *v1alpha1.CardTypeRule, use, noUse []string) (string, error) {
	a := SplitAttr(c.Attribute)
	typ := a.Ref()
	if c.Prefix != "" {
		prefix, err := Quote(c.Prefix)
		if err != nil {
			return "", err
		}
		withDash, err := Quote(c.Prefix + "-")
		if err != nil {
			return "", err
		}
		typ = "(" + a.Ref() + ".startsWith(" + prefix + ") ? " + a.Ref() + " : " + withDash + " + " + a.Ref() + ")"
	}
	contains := func(entries []string) (string, error) {
		parts := make([]string, 0, len(entries))
		for _, e := range entries {
			if !printableASCII(e) {
				return "", fmt.Errorf("card type %q is not printable ASCII, which a selector cannot compare as HAMi does (ignoring case)", e)
			}
			lit, err := Quote(strings.ToLower(e))
			if err != nil {
				return "", err
			}
			parts = append(parts, "ct.contains("+lit+")")
		}
		return strings.Join(parts, " || "), nil
	}
	var body []string
	if len(use) > 0 {
		p, err := contains(use)
		if err != nil {
			return "", err
		}
		body = append(body, "("+p+")")
	}
	if len(noUse) > 0 {
		p, err := contains(noUse)
		if err != nil {
			return "", err
		}
		body = append(body, "!("+p+")")
	}
	return a.Guard() + " && cel.bind(ct, " + typ + ".lowerAscii(), " + strings.Join(body, " && ") + ")", nil
}

// printableASCII reports whether s is printable ASCII only.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
