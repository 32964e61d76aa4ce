package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/scheduler/snapshot"
)

// watched returns a cache over cl whose event handlers have reported every object of
// cl, as Watch's do once the informers have synced.
func watched(cl *cluster, opts snapshot.Options) *Cache {
	c := New(cl, opts)
	c.track()
	for range Objects() {
		c.synced = append(c.synced, func() bool { return true })
	}
	for _, o := range cl.all() {
		c.observe(o, false)
	}
	return c
}

// BenchmarkSnapshot measures one session's snapshot at 5,000 nodes of 8 GPUs and
// 50,000 pods: full lists every object and converts it (a cache without events);
// unchanged and changed-N take it from a watching cache when nothing, or N pods (half
// of them bound, half replaced by new pending ones) changed since the last snapshot.
func BenchmarkSnapshot(b *testing.B) {
	const nodes, pods = 5000, 50000
	rng := rand.New(rand.NewPCG(1, 2))
	cl := bigCluster(nodes, pods, rng)
	ctx := context.Background()
	b.Run("full", func(b *testing.B) {
		c := New(cl, snapshot.Options{})
		b.ReportAllocs()
		for b.Loop() {
			in, err := c.list(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if snap, _, _ := c.snapshot(&in, epoch, nil); len(snap.Nodes) != nodes {
				b.Fatal(len(snap.Nodes))
			}
		}
	})
	for _, changed := range []int{0, 10, 100, 1000} {
		name := "unchanged"
		if changed > 0 {
			name = fmt.Sprintf("changed-%d", changed)
		}
		b.Run(name, func(b *testing.B) {
			c := watched(cl, snapshot.Options{})
			if _, _, _, err := c.Snapshot(ctx, epoch); err != nil {
				b.Fatal(err)
			}
			next := pods
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for i := range changed {
					if i%2 == 0 { // a pending pod is bound
						old, ok := cl.get(bigPod(pods-1-rng.IntN(pods/4), false, nodes, rng).Obj()).(*corev1.Pod)
						if !ok {
							continue
						}
						p := *old
						p.Spec.NodeName = gpuNodeName(rng.IntN(nodes))
						cl.put(&p)
						c.observe(&p, false)
					} else { // a pod completes and a new one arrives
						old := cl.get(bigPod(rng.IntN(pods), false, nodes, rng).Obj())
						if old != nil {
							cl.del(old)
							c.observe(old, true)
						}
						p := bigPod(next, false, nodes, rng).Obj()
						next++
						cl.put(p)
						c.observe(p, false)
					}
				}
				b.StartTimer()
				snap, _, _, err := c.Snapshot(ctx, epoch)
				if err != nil || len(snap.Nodes) != nodes {
					b.Fatal(err)
				}
			}
			assembled, _ := c.memo.Jobs()
			b.ReportMetric(float64(assembled), "assembled/op")
			reused, converted := c.memo.Stats()
			b.ReportMetric(float64(converted), "converted/op")
			b.ReportMetric(float64(reused), "reused/op")
		})
	}
}
