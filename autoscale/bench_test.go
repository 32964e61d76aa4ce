package autoscale_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// BenchmarkPlan is one planning round over 5,000 nodes of 8 GPUs and 50,000 running
// pods, ten a node each asking a tenth of a GPU: every node is underused and has been
// for longer than idleAfter, so every node is a scale-down candidate and the planner
// asks the scheduler (WhatIf) whether the chosen nodes' pods fit elsewhere.
func BenchmarkPlan(b *testing.B) {
	for _, maxParallel := range []int{1, 10} {
		b.Run(fmt.Sprintf("maxParallel-%d", maxParallel), func(b *testing.B) {
			const nodes, podsPerNode = 5000, 10
			pol := autoscale.Policy{Name: "p", Selector: labels.Everything(), IdleAfter: 30 * time.Minute, MaxParallel: maxParallel, UnderusedShare: 0.5}
			q := testutil.MakeQueue("default").Obj()
			var ns []*framework.Node
			var jobs []*framework.Job
			states := map[string]autoscale.NodeState{}
			for i := range nodes {
				n := testutil.MakeNode(fmt.Sprintf("node-%05d", i)).GPUs(8, "A100-80GB").Label("tessera.dev/rack", fmt.Sprint("rack-", i/20)).Obj()
				n.Index = i
				ns = append(ns, n)
				states[n.Name] = autoscale.NodeState{GPUsReady: true, CountFrom: testutil.Epoch.Add(-time.Hour)}
				for k := range podsPerNode {
					j := testutil.MakeJob(fmt.Sprintf("job-%05d-%d", i, k)).Queue(q).Share(100).CPU(1000).Created(time.Duration(i*podsPerNode+k) * time.Millisecond).Obj()
					testutil.Run(j, testutil.Epoch, n)
					jobs = append(jobs, j)
				}
			}
			c := &autoscale.Cluster{Snap: testutil.Snapshot(time.Hour, ns, jobs, q), Nodes: states}
			pl := autoscale.NewPlanner(pol, testutil.Scheduler(b, "tessera"))
			b.ResetTimer()
			for b.Loop() {
				p := pl.Plan(c)
				if got := len(p.Candidates()); got != maxParallel {
					b.Fatalf("%d candidates, want %d: %+v", got, maxParallel, p.Nodes[0])
				}
			}
		})
	}
}
