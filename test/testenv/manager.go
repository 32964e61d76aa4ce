package testenv

import (
	"context"
	"testing"
)

// Runnable is what RunManager starts: a controller-runtime manager.
type Runnable interface {
	Start(ctx context.Context) error
}

// RunManager starts mgr in the background until stop is called or the test ends; stop
// waits for it to return. An error from the manager is logged.
func RunManager(tb testing.TB, ctx context.Context, mgr Runnable) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			tb.Logf("manager: %v", err)
		}
	}()
	stop = func() { cancel(); <-done }
	tb.Cleanup(stop)
	return stop
}
