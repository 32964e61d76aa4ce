package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/tessera-gpu/tessera/internal/cli"
)

func main() {
	root := newRootCommand()
	root.SetArgs(versionShorthand(os.Args[1:], os.Stderr))
	err := root.Execute()
	// klog buffers what it writes and flushes every few seconds: the last lines of a
	// component that stops must not be lost.
	klog.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tessera:", err)
		os.Exit(cli.ExitCode(err))
	}
}

// versionShorthand turns the former "tessera -v" into --version, with a notice: -v is
// the log level on every command now.
func versionShorthand(args []string, stderr io.Writer) []string {
	if len(args) == 1 && args[0] == "-v" {
		fmt.Fprintln(stderr, "Flag shorthand -v for --version has been deprecated, use --version (-v is the log level, as -v=2)")
		return []string{"--version"}
	}
	return args
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
	// -v is the log level (klog's) of every command; --version has no shorthand.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	root.PersistentFlags().AddGoFlag(klogFlags.Lookup("v"))
	// klog's -v is bound to its global level and takes its default from its current
	// value, which an earlier command of the same process may have set.
	root.PersistentFlags().Lookup("v").DefValue = "0"
	for _, newCommand := range subcommands {
		root.AddCommand(newCommand())
	}
	cli.PlainBoolFlags(root)
	cli.UsageErrors(root)
	return root
}

// runDaemon is the RunE of a long-running command. prepare reads and checks everything
// the command is given (flags, files, the kubeconfig) without connecting to anything;
// its error exits with code 2. The component it returns then runs until it returns or
// the process is signalled: it stops within cli.ShutdownGrace of SIGINT or SIGTERM,
// whatever the API server does, and at once on a second signal.
func runDaemon(prepare func() (func(ctx context.Context) error, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		run, err := prepare()
		if err != nil {
			return cli.Usage(err)
		}
		return cli.UntilSignal(cmd.Context(), cli.ShutdownGrace, run)
	}
}

// untilDone runs f, a call that takes no context, and returns its error, or ctx's once
// ctx ends first (f is left to finish on its own, bounded by the request timeout).
func untilDone(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cacheSyncTimeout is how long a daemon waits for its informers to sync before it
// fails (exit code 1, the pod restarts): controller-runtime's default for a
// controller's caches.
const cacheSyncTimeout = 2 * time.Minute

// startManager runs mgr until ctx ends and it has stopped. A manager whose informers
// have not synced within syncTimeout fails; one whose informers never synced is left
// at once when ctx ends: controller-runtime's Start would wait for that sync,
// spinning, until the process exits (kubernetes-sigs/controller-runtime#3440), and it
// holds no Lease yet, starting leader election only once its caches synced.
func startManager(ctx context.Context, mgr manager.Manager, syncTimeout time.Duration) error {
	var synced atomic.Bool
	syncDone := make(chan struct{})
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	go func() {
		defer close(syncDone)
		synced.Store(mgr.GetCache().WaitForCacheSync(syncCtx))
	}()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	syncing := syncDone // nil once the sync is over: a nil channel never receives
	for {
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			if !synced.Load() {
				return nil
			}
			return <-done
		case <-syncing:
			syncing = nil
			if !synced.Load() && ctx.Err() == nil {
				return fmt.Errorf("the informers did not sync within %s: is the API server answering, and may this ServiceAccount list and watch what the component reads?", syncTimeout)
			}
		}
	}
}
