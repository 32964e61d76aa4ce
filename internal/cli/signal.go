package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// ShutdownGrace is how long a command has to stop once SIGINT or SIGTERM arrived
// before it exits anyway: within a few seconds, whatever the API server does.
const ShutdownGrace = 5 * time.Second

// UntilSignal runs run with a context cancelled on the first SIGINT or SIGTERM (or when
// ctx ends). From then on run has grace to return; when it has not returned by then, or
// on a second signal, UntilSignal returns an error at once and leaves run behind: the
// process is to exit. Without a signal it returns what run returns; after one, a
// context.Canceled that run returns counts as a clean stop.
func UntilSignal(ctx context.Context, grace time.Duration, run func(context.Context) error) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return untilSignal(ctx, sigs, grace, run)
}

func untilSignal(parent context.Context, sigs <-chan os.Signal, grace time.Duration, run func(context.Context) error) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	why := "context ended"
	select {
	case err := <-done:
		return err
	case s := <-sigs:
		why = s.String()
	case <-parent.Done():
	}
	cancel()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-done:
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	case s := <-sigs:
		return fmt.Errorf("%s during shutdown (after %s): stopping at once", s, why)
	case <-timer.C:
		return fmt.Errorf("not stopped %s after %s: stopping at once (an API server that does not answer?)", grace, why)
	}
}
