// Command claimbridge moves legacy GPU/TPU/NIC workloads onto Dynamic
// Resource Allocation: an admission webhook (serve) and offline tools
// (translate, audit, policy).
package main

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

func main() {
	root := newRootCommand()
	err := root.Execute()
	if err == nil {
		return
	}
	var ee exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "claimbridge:", err)
	var ue usageError
	if errors.As(err, &ue) {
		os.Exit(exitUsage)
	}
	os.Exit(exitInvalid)
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "claimbridge",
		Short:         "Move legacy device requests onto Dynamic Resource Allocation",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newServeCommand(), newTranslateCommand(false), newTranslateCommand(true), newAuditCommand(), newReportCommand(), newKRMCommand(), newPolicyCommand(), newVersionCommand())
	return root
}
