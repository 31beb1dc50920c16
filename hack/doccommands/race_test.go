//go:build race

package doccommands

// race: this test binary was built with -race, so claimbridge is too; the
// build then reuses the packages go test -race has just compiled.
const race = true
