package snapshot

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// TestMaintainedBuilder follows a builder with a Memo through changes (a gang's pods
// arrive and go, its PodGroup appears, a pod moves from one job to another, a node
// goes) and checks after each that its snapshot is a fresh builder's, and that it
// assembled only the jobs the change touched.
func TestMaintainedBuilder(t *testing.T) {
	live := NewBuilder(epoch, Options{}).WithMemo(NewMemo())
	pods := map[string]*corev1.Pod{}
	nodes := map[string]*corev1.Node{}
	put := func(p *corev1.Pod) {
		pods[p.Namespace+"/"+p.Name] = p
		live.AddPod(p, 0)
	}
	del := func(ns, name string) {
		delete(pods, ns+"/"+name)
		live.RemovePod(ns, name)
	}
	group := testPodGroup("g", "ns", "", 2).Obj()
	var withGroup bool
	check := func(step string, wantAssembled int) {
		t.Helper()
		fresh := NewBuilder(epoch, Options{})
		for _, n := range nodes {
			fresh.AddNode(n, nil)
		}
		for _, p := range pods {
			fresh.AddPod(p, 0)
		}
		if withGroup {
			fresh.AddPodGroup(group)
		}
		want, wantErrs := fresh.Build()
		got, gotErrs := live.Build()
		if g, w := summary(got), summary(want); g != w {
			t.Fatalf("%s: maintained %s, fresh %s", step, g, w)
		}
		if len(gotErrs) != len(wantErrs) {
			t.Fatalf("%s: errors %v, want %v", step, gotErrs, wantErrs)
		}
		if assembled, _ := live.memo.Jobs(); wantAssembled >= 0 && assembled != wantAssembled {
			t.Errorf("%s: assembled %d jobs, want %d", step, assembled, wantAssembled)
		}
	}
	for _, name := range []string{"n1", "n2"} {
		nodes[name] = testNode(name).Obj()
		live.AddNode(nodes[name], nil)
	}
	put(testPod("a", "ns").Obj())
	put(testPod("b", "ns").Group("g").Obj())
	put(testPod("c", "ns").Group("g").RunningOn("n1", epoch).Obj())
	check("first build", 2)
	check("nothing changed", 0)
	put(testPod("d", "ns").Group("g").Obj())
	check("a gang pod arrived", 1)
	withGroup = true
	live.AddPodGroup(group)
	check("the gang's PodGroup appeared", 1)
	put(testPod("a", "ns").Group("g").Obj())
	check("a lone pod joined the gang", 1) // and its own job went
	del("ns", "c")
	check("a running gang pod went", 1)
	put(testPod("e", "ns").RunningOn("n2", epoch).Obj())
	check("a pod runs on n2", 1)
	delete(nodes, "n2")
	live.RemoveNode("n2")
	check("n2 went", -1)
}

// summary is a snapshot's jobs, tasks and placements in order.
func summary(s *framework.Snapshot) string {
	out := ""
	for _, j := range s.Jobs {
		out += fmt.Sprintf("%s min %d [", j.Key(), j.MinMember)
		for _, task := range j.Tasks {
			out += task.Name + ":" + task.Status.String()
			if task.Node != nil {
				out += "@" + task.Node.Name
			}
			out += " "
		}
		out += "] "
	}
	return out
}

// A Memo handed from one builder to another (the scheduler's cache lists its first
// snapshots, then maintains one builder) keeps none of the first builder's pods: not
// through the pods it converted, nor through the jobs of its spare order. A listed pod
// shares its array with the whole list, which one such pointer would keep.
func TestMemoKeepsNoObjectsOfAnEarlierBuilder(t *testing.T) {
	memo := NewMemo()
	listed := map[*corev1.Pod]bool{}
	first := NewBuilder(epoch, Options{}).WithMemo(memo)
	first.AddNode(testNode("n1").Obj(), nil)
	for _, name := range []string{"a", "b", "c"} {
		p := testPod(name, "ns").Obj()
		p.ResourceVersion = "1"
		listed[p] = true
		first.AddPod(p, 0)
	}
	first.Build()
	live := NewBuilder(epoch, Options{}).WithMemo(memo)
	live.AddNode(testNode("n1").Obj(), nil)
	for _, name := range []string{"a", "b", "c"} {
		p := testPod(name, "ns").Obj()
		p.ResourceVersion = "1"
		live.AddPod(p, 0)
	}
	live.Build()
	live.Build()
	for key, e := range memo.pods {
		if listed[e.pod] {
			t.Errorf("pod memo %s keeps the first builder's pod", key)
		}
	}
	for _, e := range memo.spare[:cap(memo.spare)] {
		if e != nil {
			for _, ta := range e.tasks {
				if listed[ta.pod] {
					t.Errorf("spare order keeps job %s of the first builder", e.key)
				}
			}
		}
	}
}
