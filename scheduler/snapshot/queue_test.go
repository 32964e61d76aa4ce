package snapshot

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler/framework"
)

func queueByName(s *framework.Snapshot, name string) *framework.Queue {
	for _, q := range s.Queues {
		if q.Name == name {
			return q
		}
	}
	return nil
}

func TestQueueSpec(t *testing.T) {
	snap, errs := buildOne(t, Options{}, func(b *Builder) {
		b.AddQueue(apitest.MakeQueue("plain").Obj())
		b.AddQueue(apitest.MakeQueue("full").Weight(3).Priority(7).Reclaimable(false).
			Deserved(tesserav1.ResourceGPU, "4").Deserved(corev1.ResourceCPU, "10").
			Capability(tesserav1.ResourceNvidiaGPU, "8").Capability("example.com/fpga", "2").
			Guarantee(tesserav1.ResourceGPU, "1").Obj())
		b.queues["full"].Spec.MaxMinRuntime = &metav1.Duration{Duration: 2 * time.Hour}
		// Tasks and nodes that use scalar resources: every queue must admit them unless it caps them.
		b.AddNode(testNode("n").Allocatable("rdma/hca", "4").Allocatable("example.com/fpga", "4").Obj(), nil)
		b.AddPod(testPod("p", "ns").Request("rdma/hca", "1").Queue("plain").Obj(), 0)
	})
	wantErrs(t, errs)
	plain := queueByName(snap, "plain")
	if plain.Weight != 1 || !plain.Reclaimable || !plain.Deserved.IsZero() || !plain.Guarantee.IsZero() {
		t.Errorf("plain = %+v", plain)
	}
	if plain.MaxMinRuntime != tesserav1.DefaultMaxMinRuntime {
		t.Errorf("plain: maxMinRuntime %s, want the default %s", plain.MaxMinRuntime, tesserav1.DefaultMaxMinRuntime)
	}
	full := queueByName(snap, "full")
	if full.MaxMinRuntime != 2*time.Hour {
		t.Errorf("full: maxMinRuntime %s, want 2h", full.MaxMinRuntime)
	}
	if full.Weight != 3 || full.Priority != 7 || full.Reclaimable || full.Deserved.GPU != 4000 || full.Deserved.MilliCPU != 10000 || full.Guarantee.GPU != 1000 {
		t.Errorf("full = %+v", full)
	}
	unl := framework.Unlimited.MilliCPU
	for _, c := range []struct {
		q    *framework.Queue
		name corev1.ResourceName
		want int64
	}{
		{plain, corev1.ResourceCPU, unl}, {plain, corev1.ResourceMemory, unl}, {plain, "tessera.dev/gpu", unl}, {plain, corev1.ResourcePods, unl},
		{plain, "rdma/hca", unl}, {plain, "example.com/fpga", unl},
		{full, "tessera.dev/gpu", 8000}, {full, "example.com/fpga", 2}, {full, corev1.ResourceCPU, unl}, {full, "rdma/hca", unl},
	} {
		if got := c.q.Capability.Get(c.name); got != c.want {
			t.Errorf("%s capability[%s] = %d, want %d", c.q.Name, c.name, got, c.want)
		}
	}
	// A task asking an extended resource fits an unlimited capability, and a capped one
	// is capped.
	task := snap.Jobs[0].Tasks[0]
	task.Request.Scalar["example.com/fpga"] = 3
	if ok, res := task.Request.FitsIn(&framework.Resources{}, &plain.Capability); !ok {
		t.Errorf("task does not fit an unlimited capability: %s", res)
	}
	if ok, res := task.Request.FitsIn(&framework.Resources{}, &full.Capability); ok || res != "example.com/fpga" {
		t.Errorf("task fits a capped capability: %v %s", ok, res)
	}
}

func TestQueueParents(t *testing.T) {
	cases := []struct {
		name     string
		parents  map[string]string // queue -> parent
		want     map[string]string // queue -> resolved parent
		children map[string][]string
		errs     []string
	}{
		{name: "tree", parents: map[string]string{"root": "", "b": "root", "a": "root", "leaf": "a"},
			want:     map[string]string{"root": "", "a": "root", "b": "root", "leaf": "a"},
			children: map[string][]string{"root": {"a", "b"}, "a": {"leaf"}}},
		{name: "unknown parent", parents: map[string]string{"a": "ghost"}, want: map[string]string{"a": ""},
			errs: []string{`Queue a: spec.parent: queue "ghost" does not exist`}},
		{name: "cycle", parents: map[string]string{"a": "b", "b": "c", "c": "a", "d": "a"},
			want: map[string]string{"a": "", "b": "", "c": "", "d": "a"}, children: map[string][]string{"a": {"d"}},
			errs: []string{"queues form a cycle a -> b -> c -> a"}},
		{name: "self", parents: map[string]string{"a": "a"}, want: map[string]string{"a": ""}, errs: []string{"cycle a -> a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap, errs := buildOne(t, Options{}, func(b *Builder) {
				for name, parent := range tc.parents {
					b.AddQueue(apitest.MakeQueue(name).Parent(parent).Obj())
				}
			})
			wantErrs(t, errs, tc.errs...)
			for name, parent := range tc.want {
				q := queueByName(snap, name)
				got := ""
				if q.Parent != nil {
					got = q.Parent.Name
				}
				if got != parent {
					t.Errorf("parent of %s = %q, want %q", name, got, parent)
				}
				var kids []string
				for _, c := range q.Children {
					kids = append(kids, c.Name)
				}
				if want := tc.children[name]; len(kids) != len(want) || (len(want) > 0 && kids[0] != want[0]) {
					t.Errorf("children of %s = %v, want %v", name, kids, want)
				}
			}
		})
	}
}
