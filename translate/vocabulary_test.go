package translate

import (
	"slices"
	"testing"
)

// TestEveryConversionHasBothDirections: a conversion a policy may name has
// its forward, backward and canonical functions, and the table holds no
// conversion a policy cannot name.
func TestEveryConversionHasBothDirections(t *testing.T) {
	for _, c := range conversions {
		v, ok := vocabulary[c]
		if !ok {
			t.Errorf("conversion %s has no entry in the vocabulary table", c)
			continue
		}
		if v.forward == nil || v.backward == nil || v.canonical == nil {
			t.Errorf("conversion %s lacks a direction: forward %v, backward %v, canonical %v", c, v.forward != nil, v.backward != nil, v.canonical != nil)
		}
	}
	for c := range vocabulary {
		if !slices.Contains(conversions, c) {
			t.Errorf("the vocabulary table has %s, which policies cannot name", c)
		}
	}
}
