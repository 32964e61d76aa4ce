package controller

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// memoryLock is a Lease in memory that can be made unreachable, as a Lease is while
// the API server restarts.
type memoryLock struct {
	id   string
	mu   sync.Mutex
	rec  *resourcelock.LeaderElectionRecord
	down atomic.Bool
}

var errDown = errors.New("connection refused")

func (l *memoryLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	if l.down.Load() {
		return nil, nil, errDown
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rec == nil {
		return nil, nil, apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, l.id)
	}
	rec := *l.rec
	raw, _ := json.Marshal(rec)
	return &rec, raw, nil
}

func (l *memoryLock) Create(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.Update(context.Background(), r)
}

func (l *memoryLock) Update(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	if l.down.Load() {
		return errDown
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec = &r
	return nil
}

func (l *memoryLock) RecordEvent(string) {}
func (l *memoryLock) Identity() string   { return l.id }
func (l *memoryLock) Describe() string   { return "memory/" + l.id }
func (l *memoryLock) setDown(down bool)  { l.down.Store(down) }

func (l *memoryLock) holder() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec.HolderIdentity
}

// terms counts the terms a runnable ran, and whether one runs now.
type terms struct {
	started, ended atomic.Int32
	fail           error
}

func (t *terms) Start(ctx context.Context) error {
	t.started.Add(1)
	defer t.ended.Add(1)
	if t.fail != nil {
		return t.fail
	}
	<-ctx.Done()
	return nil
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLostLeaseLeadsAgainInTheSameProcess: a leader that cannot renew its Lease (the
// API server down past the renew deadline) ends its term, keeps running, and leads again
// in a new term once the Lease is reachable; it never runs two terms at once.
func TestLostLeaseLeadsAgainInTheSameProcess(t *testing.T) {
	lock := &memoryLock{id: "a"}
	l := newLeading(lock, "test", 600*time.Millisecond, 400*time.Millisecond, 100*time.Millisecond, testr.New(t))
	work := &terms{}
	if !l.add(work) {
		t.Fatal("add before start refused")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	waitFor(t, "first term", 2*time.Second, func() bool { return work.started.Load() == 1 && l.Leading() })
	if l.add(&terms{}) {
		t.Error("add after start accepted")
	}
	lock.setDown(true)
	waitFor(t, "term ended when the Lease could not be renewed", 2*time.Second, func() bool { return work.ended.Load() == 1 && !l.Leading() })
	time.Sleep(300 * time.Millisecond)
	if work.started.Load() != 1 {
		t.Fatal("a term started while the Lease was unreachable")
	}
	select {
	case err := <-done:
		t.Fatalf("Start returned when the Lease was lost: %v", err)
	default:
	}
	lock.setDown(false)
	waitFor(t, "second term once the Lease is reachable", 2*time.Second, func() bool { return work.started.Load() == 2 && l.Leading() })
	if got := work.started.Load() - work.ended.Load(); got != 1 {
		t.Errorf("%d terms run at once", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start: %v", err)
	}
	if work.ended.Load() != 2 {
		t.Errorf("the term still runs after Start returned")
	}
	if h := lock.holder(); h != "" {
		t.Errorf("Lease still held by %q after the stop; want it released", h)
	}
}

// TestFailedRunnableEndsTheLeader: a runnable that fails ends Start with its error,
// and the Lease is released for the standby.
func TestFailedRunnableEndsTheLeader(t *testing.T) {
	lock := &memoryLock{id: "a"}
	l := newLeading(lock, "test", 600*time.Millisecond, 400*time.Millisecond, 100*time.Millisecond, testr.New(t))
	boom := errors.New("boom")
	l.add(&terms{})
	l.add(&terms{fail: boom})
	errc := make(chan error, 1)
	go func() { errc <- l.Start(context.Background()) }()
	select {
	case err := <-errc:
		if !errors.Is(err, boom) {
			t.Fatalf("Start: %v, want boom", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Start did not return after a runnable failed")
	}
	if h := lock.holder(); h != "" {
		t.Errorf("Lease still held by %q; want it released", h)
	}
}

// TestStandbyDoesNotLead: a second replica waits while the first holds the Lease.
func TestStandbyDoesNotLead(t *testing.T) {
	lock := &memoryLock{id: "b"}
	now := time.Now()
	lock.rec = &resourcelock.LeaderElectionRecord{HolderIdentity: "a", LeaseDurationSeconds: 60, AcquireTime: metav1.NewTime(now), RenewTime: metav1.NewTime(now)}
	l := newLeading(lock, "test", 600*time.Millisecond, 400*time.Millisecond, 100*time.Millisecond, testr.New(t))
	work := &terms{}
	l.add(work)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Start(ctx) }()
	time.Sleep(500 * time.Millisecond)
	if work.started.Load() != 0 || l.Leading() {
		t.Fatal("the standby led while another replica held the Lease")
	}
}
