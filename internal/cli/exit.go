package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// Exit codes of every Tessera command.
const (
	// ExitFailure: the command started and failed (an API server that does not
	// answer, a write refused, findings for lint).
	ExitFailure = 1
	// ExitUsage: the command could not start from what it was given (bad flags or
	// arguments, a file a flag names that cannot be read, no kubeconfig).
	ExitUsage = 2
)

// ExitError carries a process exit code with its error.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode implements the interface ExitCode looks for.
func (e *ExitError) ExitCode() int { return e.Code }

// Usage marks err as unusable input: exit code ExitUsage. nil stays nil.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return err
	}
	return &ExitError{Code: ExitUsage, Err: err}
}

// ExitCode is the process exit code of err: 0 for nil, the code of the first error in
// its chain with an ExitCode method, else ExitFailure.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	return ExitFailure
}

// UsageErrors makes flag and argument errors of cmd and its subcommands exit with
// ExitUsage. Call it once every subcommand is added.
func UsageErrors(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return Usage(err) })
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error { return Usage(args(c, a)) }
	}
	for _, c := range cmd.Commands() {
		UsageErrors(c)
	}
}
