package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// TestNoEvictionWhenTheJobFits: a job that fits in free capacity never evicts anyone,
// in any profile. Here it waits behind its queue's head, a gang that fits nowhere, so
// allocate leaves it to backfill; preempt and reclaim, which run before backfill, must
// not make room for it that it does not need.
func TestNoEvictionWhenTheJobFits(t *testing.T) {
	cases := []struct {
		name string
		// build returns the snapshot's nodes, jobs and queues, and the job that fits.
		build func() ([]*framework.Node, []*framework.Job, []*framework.Queue, *framework.Job)
	}{
		{"preempt: a lower-priority job of the same queue", func() ([]*framework.Node, []*framework.Job, []*framework.Queue, *framework.Job) {
			q := testutil.MakeQueue("q").Obj()
			n := testutil.MakeNode("n").GPUs(8, "A100-80GB").Obj()
			low := testutil.MakeJob("low").GPU(4).Queue(q).Priority(0).Obj()
			testutil.Run(low, testutil.Epoch, n)
			head := testutil.MakeJob("head").Tasks(2).GPU(4).Models("H100").Queue(q).Priority(10).Created(time.Second).Obj()
			small := testutil.MakeJob("small").GPU(2).Queue(q).Priority(10).Created(2 * time.Second).Obj()
			return []*framework.Node{n}, []*framework.Job{low, head, small}, []*framework.Queue{q}, small
		}},
		{"reclaim: a queue beyond its share", func() ([]*framework.Node, []*framework.Job, []*framework.Queue, *framework.Job) {
			lender := testutil.MakeQueue("lender").Obj()
			borrower := testutil.MakeQueue("borrower").Obj()
			n := testutil.MakeNode("n").GPUs(8, "A100-80GB").Obj()
			borrowed := testutil.MakeJob("borrowed").GPU(6).Queue(borrower).Obj()
			testutil.Run(borrowed, testutil.Epoch, n)
			head := testutil.MakeJob("head").Tasks(2).GPU(4).Models("H100").Queue(lender).Created(time.Second).Obj()
			small := testutil.MakeJob("small").GPU(2).Queue(lender).Created(2 * time.Second).Obj()
			return []*framework.Node{n}, []*framework.Job{borrowed, head, small}, []*framework.Queue{lender, borrower}, small
		}},
	}
	for _, profile := range scheduler.ProfileNames() {
		for _, tc := range cases {
			t.Run(profile+"/"+tc.name, func(t *testing.T) {
				nodes, jobs, queues, fits := tc.build()
				snap := testutil.Snapshot(time.Hour, nodes, jobs, queues...)
				waitedAnHour(snap.Now, jobs...)
				res := testutil.Scheduler(t, profile).RunSession(snap)
				if got := evictedJobs(res); len(got) > 0 {
					t.Errorf("evicted %v for a job that fits in free capacity", got)
				}
				// Allocate stops a queue at its head only where backfill goes on; an enqueue
				// gate may keep the job out (Volcano's counts the head's gang as admitted).
				cfg, _ := scheduler.Profile(profile)
				if strings.Contains(cfg.Actions, "backfill") && fits.Inqueue && fits.Count(framework.TaskAllocated) != 1 {
					t.Errorf("%s not placed: %v", fits.Name, fits.Pending)
				}
			})
		}
	}
}
