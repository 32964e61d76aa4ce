package controller

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestUntilListeningWaitsForTheServer: a list refused while the API server is down is
// tried again until the server answers; any other error returns at once.
func TestUntilListeningWaitsForTheServer(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	calls := 0
	start := time.Now()
	got, err := untilListening(context.Background(), func() (string, error) {
		calls++
		if calls < 3 {
			return "", refused
		}
		return "listed", nil
	})
	if err != nil || got != "listed" || calls != 3 {
		t.Fatalf("got %q, %v after %d calls", got, err, calls)
	}
	if took := time.Since(start); took < 2*reconnectEvery {
		t.Errorf("took %s: tried again without waiting", took)
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	calls = 0
	if _, err := untilListening(context.Background(), func() (string, error) { calls++; return "", forbidden }); !apierrors.IsForbidden(err) || calls != 1 {
		t.Errorf("forbidden: %v after %d calls, want it at once", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls = 0
	if _, err := untilListening(ctx, func() (string, error) { calls++; return "", refused }); err == nil || calls != 1 {
		t.Errorf("ended context: %v after %d calls", err, calls)
	}
}
