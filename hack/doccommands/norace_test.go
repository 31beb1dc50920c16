//go:build !race

package doccommands

const race = false
