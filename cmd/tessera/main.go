package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tessera-gpu/tessera/internal/cli"
)

// exitCodeError carries a process exit code through cobra.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string { return e.err.Error() }

func main() {
	root := newRootCommand()
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tessera:", err)
		var ec *exitCodeError
		if errors.As(err, &ec) {
			os.Exit(ec.code)
		}
		os.Exit(1)
	}
}

// subcommands holds the subcommands' constructors; each lives in its own file and
// registers itself from init.
var subcommands []func() *cobra.Command

func register(newCommand func() *cobra.Command) { subcommands = append(subcommands, newCommand) }

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "tessera",
		Short:         "GPU batch platform for Kubernetes: gang scheduling, GPU slices, queues, idle-node scale-down",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cli.AddVersion(root) // --version and `tessera version` print the same line
	for _, newCommand := range subcommands {
		root.AddCommand(newCommand())
	}
	cli.PlainBoolFlags(root)
	return root
}

// signalContext is ctx, cancelled on SIGINT or SIGTERM, so a component shuts down cleanly.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// untilSignal runs a long-lived component until it returns or the process is signalled.
func untilSignal(run func(ctx context.Context) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		ctx, stop := signalContext(cmd.Context())
		defer stop()
		return run(ctx)
	}
}
