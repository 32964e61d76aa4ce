package cli

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A command that stops when told returns what it returns; one that does not is left
// behind after the grace, or at once on a second signal.
func TestUntilSignal(t *testing.T) {
	stops := func(ctx context.Context) error { <-ctx.Done(); return nil }
	hangs := func(context.Context) error { select {} }
	fails := errors.New("failed")
	for _, c := range []struct {
		name    string
		run     func(context.Context) error
		signals int
		want    string // error; empty: nil
		within  time.Duration
	}{
		{"returns by itself", func(context.Context) error { return fails }, 0, "failed", time.Second},
		{"stops on the signal", stops, 1, "", time.Second},
		{"hangs past the grace", hangs, 1, "not stopped 300ms after terminated", 2 * time.Second},
		{"second signal", hangs, 2, "terminated during shutdown", 200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			sigs := make(chan os.Signal, 2)
			for range c.signals {
				sigs <- syscall.SIGTERM
			}
			start := time.Now()
			err := untilSignal(context.Background(), sigs, 300*time.Millisecond, c.run)
			if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
			if d := time.Since(start); d > c.within {
				t.Errorf("took %s", d)
			}
		})
	}
}

// The real signal reaches the command through UntilSignal.
func TestUntilSignalProcess(t *testing.T) {
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- UntilSignal(context.Background(), time.Second, func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			return nil
		})
	}()
	<-started
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not stop the command")
	}
}
