package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// leading runs the leader's runnables while this replica holds its Lease, one term at a
// time: when the Lease is lost (a renewal missed its deadline, as when the API server
// is down for longer), the term's context ends, its runnables return, and the replica
// campaigns again in the same process. Its informer caches stay warm, so a leader that
// lost its Lease to an API server restart leads again as soon as the Lease is renewed,
// instead of exiting, starting again and listing the cluster (controller-runtime's own
// election ends the process). A runnable it runs must be restartable: Start is called
// again, with the next term's context, after it returned.
type leading struct {
	config leaderelection.LeaderElectionConfig
	log    logr.Logger

	mu        sync.Mutex
	runnables []manager.Runnable
	started   bool
	leader    atomic.Bool
}

var _ manager.LeaderElectionRunnable = (*leading)(nil)

func newLeading(lock resourcelock.Interface, name string, lease, renew, retry time.Duration, log logr.Logger) *leading {
	l := &leading{log: log}
	l.config = leaderelection.LeaderElectionConfig{
		Lock: lock, Name: name, LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry,
		ReleaseOnCancel: true,
	}
	return l
}

// add makes r one of the leader's runnables; false once the terms have started.
func (l *leading) add(r manager.Runnable) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		return false
	}
	l.runnables = append(l.runnables, r)
	return true
}

// NeedLeaderElection is false: the manager starts it on every replica, and it elects.
func (l *leading) NeedLeaderElection() bool { return false }

// Start campaigns, runs a term while leading, and campaigns again after each term,
// until ctx ends or a runnable fails.
func (l *leading) Start(ctx context.Context) error {
	l.mu.Lock()
	l.started = true
	runnables := l.runnables
	l.mu.Unlock()
	for ctx.Err() == nil {
		// Run acquires the Lease, calls OnStartedLeading in a goroutine of its own, renews,
		// and returns once the Lease is lost or its context ends, ending the term's.
		terms := make(chan context.Context)
		cfg := l.config
		cfg.Callbacks = leaderelection.LeaderCallbacks{
			OnStartedLeading: func(term context.Context) {
				select {
				case terms <- term:
				case <-term.Done():
				}
			},
			OnStoppedLeading: func() {},
		}
		elector, err := leaderelection.NewLeaderElector(cfg)
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		runCtx, stopRun := context.WithCancel(ctx)
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			elector.Run(runCtx)
		}()
		var termErr error
		select {
		case term := <-terms:
			if term.Err() == nil {
				termErr = l.term(term, runnables)
			}
		case <-ran:
		}
		stopRun()
		<-ran
		if termErr != nil {
			return termErr
		}
		if ctx.Err() == nil {
			l.log.Info("lost the Lease; campaigning again with the caches kept", "lease", l.config.Lock.Describe())
		}
	}
	return nil
}

// term runs runnables until ctx ends or one fails; it returns once all returned.
func (l *leading) term(ctx context.Context, runnables []manager.Runnable) error {
	l.leader.Store(true)
	defer l.leader.Store(false)
	l.log.Info("leading", "lease", l.config.Lock.Describe())
	g, gctx := errgroup.WithContext(ctx)
	for _, r := range runnables {
		g.Go(func() error {
			if err := r.Start(gctx); err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		})
	}
	return g.Wait()
}

// Leading reports whether this replica leads now.
func (l *leading) Leading() bool { return l.leader.Load() }

// electingManager is a manager whose Lease is held by leading: Add gives the runnables
// that need election to it.
type electingManager struct {
	manager.Manager
	elect *leading
}

// Add runs r on the leader only when it needs election (the default for a
// manager.Runnable that does not say), on every replica otherwise.
func (m electingManager) Add(r manager.Runnable) error {
	if le, ok := r.(manager.LeaderElectionRunnable); ok && !le.NeedLeaderElection() {
		return m.Manager.Add(r)
	}
	if !m.elect.add(r) {
		return errors.New("a runnable that needs leader election was added after the manager started")
	}
	return nil
}

// IsLeader reports whether mgr's replica leads now: always true for a manager that
// does not elect (one replica, or a manager NewManager did not build).
func IsLeader(mgr manager.Manager) func() bool {
	if m, ok := mgr.(electingManager); ok {
		return m.elect.Leading
	}
	return func() bool { return true }
}

// WhileLeading wraps a controller's reconciler for a controller that runs on every
// replica (a controller-runtime controller cannot be started again for a new term):
// on a replica that does not lead, a request waits retry and is tried again.
func WhileLeading(leader func() bool, retry time.Duration, r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if !leader() {
			return reconcile.Result{RequeueAfter: retry}, nil
		}
		return r.Reconcile(ctx, req)
	})
}
