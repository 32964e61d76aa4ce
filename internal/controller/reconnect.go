package controller

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

// How an informer's list or watch waits for an API server that is not listening.
const (
	// reconnectEvery is the time between two tries.
	reconnectEvery = 250 * time.Millisecond
	// reconnectFor bounds the tries; after it the error reaches the informer, which
	// backs off as it always does.
	reconnectFor = time.Minute
)

// ReconnectingInformers makes the informers of opts resume a watch broken by an API
// server restart within reconnectEvery of the server listening again. Without it, each
// list or watch refused while the server is down counts against the informer's backoff
// (0.8 s doubling to 30 s, and reset only after two minutes without one), so a
// restart of a few seconds, or two within two minutes, leaves the cache stale for
// several seconds more after the server is back. A refused connection is cheap to try
// again; any other error reaches the informer at once.
func ReconnectingInformers(opts crcache.Options) crcache.Options {
	if opts.NewInformer != nil {
		return opts
	}
	opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		return toolscache.NewSharedIndexInformer(reconnecting{toolscache.ToListerWatcherWithContext(lw)}, obj, resync, idx)
	}
	return opts
}

// reconnecting is a ListerWatcher whose lists and watches wait for an API server that
// refuses connections.
type reconnecting struct {
	lw toolscache.ListerWatcherWithContext
}

var _ toolscache.ListerWatcherWithContext = reconnecting{}

func (r reconnecting) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return untilListening(ctx, func() (runtime.Object, error) { return r.lw.ListWithContext(ctx, opts) })
}

func (r reconnecting) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return untilListening(ctx, func() (watch.Interface, error) { return r.lw.WatchWithContext(ctx, opts) })
}

func (r reconnecting) List(opts metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), opts)
}

func (r reconnecting) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), opts)
}

// untilListening calls f until it returns anything but a sign that the API server is
// not listening, every reconnectEvery for up to reconnectFor, or until ctx ends.
func untilListening[T any](ctx context.Context, f func() (T, error)) (T, error) {
	deadline := time.Now().Add(reconnectFor)
	for {
		v, err := f()
		if err == nil || !notListening(err) || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(reconnectEvery):
		}
	}
}

// notListening reports whether err says the API server is down or starting: a
// connection refused or reset, a response cut short, or 503 while it starts.
func notListening(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err) || apierrors.IsServiceUnavailable(err)
}
