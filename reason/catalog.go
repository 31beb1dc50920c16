package reason

import (
	"fmt"
	"maps"
	"slices"
)

// Entry describes one reason code.
type Entry struct {
	// Severity the reason is reported with: Warning reasons become
	// admission warnings and count as the decisive reason.
	Severity Severity
	// Outcome the reason leads to when it is the one that decides
	// (decide.Decision.Decisive): Skip or KeepLegacy for the reasons that
	// keep a pod as submitted, Translate for those that let it go through;
	// empty for a reason that only records what translation did.
	Outcome Outcome
	// Remedy says what to do about it, in one line. In the feasibility
	// catalog, %[1]s stands for the kind of hardware of the rows.
	Remedy string
	// Doc is the section of the docs that explains it: a page relative to
	// the repository's root and the anchor of one of its headings
	// ("docs/concepts/translation.md#how-a-pod-is-translated").
	Doc string
}

// NewEntry is an Entry, for the catalogs of other packages.
func NewEntry(severity Severity, outcome Outcome, remedy, doc string) Entry {
	return Entry{Severity: severity, Outcome: outcome, Remedy: remedy, Doc: doc}
}

// Catalog maps reason codes to their entries. A package's catalog is
// built once and never changed.
type Catalog map[Code]Entry

// Lookup returns the entry of a code.
func (c Catalog) Lookup(code Code) (Entry, bool) {
	e, ok := c[code]
	return e, ok
}

// Remedy is the remedy of a code, "" when the catalog has none.
func (c Catalog) Remedy(code Code) string {
	return c[code].Remedy
}

// Codes lists the catalog's codes in sorted order.
func (c Catalog) Codes() []Code {
	return slices.Sorted(maps.Keys(c))
}

// With returns a new catalog of c's entries and others'. A code declared
// twice is a programming error: it panics, at package initialization.
func (c Catalog) With(others ...Catalog) Catalog {
	out := maps.Clone(c)
	for _, o := range others {
		for code, e := range o {
			if _, dup := out[code]; dup {
				panic(fmt.Sprintf("reason code %s is declared twice", code))
			}
			out[code] = e
		}
	}
	return out
}

// Union returns a new catalog of c's entries and others', for a reader of
// reports from several sources: catalogs built on the same ones below share
// their entries. A code with two different entries panics.
func (c Catalog) Union(others ...Catalog) Catalog {
	out := maps.Clone(c)
	for _, o := range others {
		for code, e := range o {
			if have, ok := out[code]; ok && have != e {
				panic(fmt.Sprintf("reason code %s has two different entries", code))
			}
			out[code] = e
		}
	}
	return out
}
