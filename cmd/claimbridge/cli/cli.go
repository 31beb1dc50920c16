// Package cli is claimbridge's command line: the cobra commands, their
// flags and the wiring of each into the packages that do the work. The
// claimbridge binary (cmd/claimbridge) runs Main; hack/clidocs generates
// the CLI reference from NewRootCommand.
package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes: 0 success, 1 invalid input (or a --fail-on condition), 2 usage.
const (
	exitInvalid = 1
	exitUsage   = 2
)

// usageError marks errors in how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitError carries an exit code without a message of its own.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Main runs the command line with the process's arguments and returns the
// exit code.
func Main() int {
	err := NewRootCommand().Execute()
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "claimbridge:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitInvalid
}

// NewRootCommand is the claimbridge command with every subcommand.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "claimbridge",
		Short:         "Move legacy device requests onto Dynamic Resource Allocation",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newServeCommand(), newTranslateCommand(false), newTranslateCommand(true), newAuditCommand(), newRehearseCommand(), newReportCommand(), newKRMCommand(), newPolicyCommand(), newVersionCommand())
	return root
}
