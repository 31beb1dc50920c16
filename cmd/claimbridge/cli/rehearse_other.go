//go:build !unix

package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// newRehearseCommand: the rehearsal runs a control plane of Linux or macOS processes.
func newRehearseCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rehearse",
		Short: "Forecast the switch to DRA, then rehearse it on a local control plane (Linux and macOS only)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("rehearse runs a local control plane, on Linux and macOS only")
		},
	}
}
