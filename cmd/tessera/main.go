package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tessera-gpu/tessera/internal/version"
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

// subcommands holds the constructors of the implemented subcommands; each lives in its
// own file and registers itself from init.
var subcommands []func() *cobra.Command

func register(newCommand func() *cobra.Command) { subcommands = append(subcommands, newCommand) }

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "tessera",
		Short:         "GPU batch platform for Kubernetes: gang scheduling, GPU slices, queues, idle-node scale-down",
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n") // the same line as `tessera version`
	root.AddCommand(
		&cobra.Command{
			Use:   "version",
			Short: "Print the version",
			Args:  cobra.NoArgs,
			Run: func(cmd *cobra.Command, _ []string) {
				fmt.Fprintln(cmd.OutOrStdout(), version.String())
			},
		},
	)
	for _, newCommand := range subcommands {
		root.AddCommand(newCommand())
	}
	for _, c := range []struct{ use, short string }{
		{"scheduler", "Run the gang / binpack / GPU-slice scheduler (schedulerName: tessera)"},
		{"webhook", "Serve the admission webhooks that evaluate Rego policies"},
		{"autoscaler", "Cordon, drain and remove long-idle GPU nodes through Cluster API"},
		{"node-agent", "Discover GPUs through NVML, publish GPUNode, serve the device plugin"},
		{"simulate", "Replay a cluster trace through the scheduler and compare policies"},
		{"explain", "Explain why a job is pending"},
	} {
		if !registered(root, c.use) {
			root.AddCommand(notImplemented(c.use, c.short))
		}
	}
	plainBoolFlags(root)
	return root
}

// plainBoolFlags makes every boolean flag of cmd and its subcommands print as
// "--name" in help, without pflag's "[=true|false]"; --name=false still works.
func plainBoolFlags(cmd *cobra.Command) {
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.PersistentFlags()} {
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() == "bool" {
				if _, plain := f.Value.(plainBool); !plain {
					f.Value, f.NoOptDefVal = plainBool{f.Value}, "true"
				}
			}
		})
	}
	for _, c := range cmd.Commands() {
		plainBoolFlags(c)
	}
}

// plainBool hides a boolean flag value's IsBoolFlag, which makes pflag print
// "[=true|false]"; NoOptDefVal "true" keeps "--name" meaning true.
type plainBool struct{ pflag.Value }

func registered(root *cobra.Command, name string) bool {
	for _, c := range root.Commands() {
		if c.Name() == name {
			return true
		}
	}
	return false
}

// notImplemented is a subcommand whose component has not landed: it says so and exits 2.
func notImplemented(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:                use,
		Short:              short + " (not implemented yet)",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return &exitCodeError{code: 2, err: fmt.Errorf("%s: not implemented yet", use)}
		},
	}
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
