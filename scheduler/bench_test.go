package scheduler_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// benchSnapshot builds nodes x 8 A100s, two racks per zone of 40 nodes, and 10 pending
// pods per node (1 GPU, 4 CPUs, 16 GiB each), as single pods or 8-pod gangs; with
// claims, the GPUs are published as devices and the pods ask them through resource
// claims.
func benchSnapshot(nodes, gang int, claims bool) *framework.Snapshot {
	ns := make([]*framework.Node, nodes)
	for i := range ns {
		ns[i] = testutil.MakeNode(fmt.Sprintf("node-%05d", i)).GPUs(8, "A100-80GB").
			Label("tessera.dev/rack", fmt.Sprintf("rack-%d", i/20)).
			Label("topology.kubernetes.io/zone", fmt.Sprintf("zone-%d", i/400)).Obj()
	}
	pods := nodes * 10
	jobs := make([]*framework.Job, 0, pods/gang)
	for i := 0; i < pods/gang; i++ {
		jobs = append(jobs, testutil.MakeJob(fmt.Sprintf("job-%06d", i)).Tasks(gang).GPU(1).CPU(4000).Memory(16<<30).
			Created(time.Duration(i)*time.Millisecond).Obj())
	}
	if claims {
		for _, n := range ns {
			for i := range n.GPUs {
				n.GPUs[i].Device, n.GPUs[i].Shareable = fmt.Sprintf("gpu-%d", i), true
			}
			n.Refresh()
		}
		for _, j := range jobs {
			for _, t := range j.Tasks {
				t.GPU.Claim = &framework.ClaimRequest{}
			}
		}
	}
	return testutil.Snapshot(0, ns, jobs)
}

// BenchmarkAllocate measures one session placing pending pods onto an empty cluster,
// their GPUs asked as extended resources or through resource claims.
func BenchmarkAllocate(b *testing.B) {
	for _, nodes := range []int{500, 5000, 20000} {
		for _, kind := range []struct {
			name   string
			gang   int
			claims bool
		}{{"single", 1, false}, {"gang8", 8, false}, {"single-claims", 1, true}, {"gang8-claims", 8, true}} {
			b.Run(fmt.Sprintf("nodes=%d/%s", nodes, kind.name), func(b *testing.B) {
				cfg, err := scheduler.Profile("tessera")
				if err != nil {
					b.Fatal(err)
				}
				placed := 0
				var elapsed time.Duration
				var heap uint64
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					s, err := scheduler.New(cfg)
					if err != nil {
						b.Fatal(err)
					}
					runtime.GC()
					var before runtime.MemStats
					runtime.ReadMemStats(&before)
					snap := benchSnapshot(nodes, kind.gang, kind.claims)
					b.StartTimer()
					start := time.Now()
					r := s.RunSession(snap)
					elapsed += time.Since(start)
					b.StopTimer()
					var after runtime.MemStats
					runtime.ReadMemStats(&after)
					heap = max(heap, after.HeapAlloc-before.HeapAlloc)
					placed += len(r.Bindings)
					b.StartTimer()
				}
				b.ReportMetric(float64(placed)/elapsed.Seconds(), "pods/s")
				b.ReportMetric(float64(heap)/(1<<20), "MiB-snapshot+session")
			})
		}
	}
}
