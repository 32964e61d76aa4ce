package autoscale_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/tessera-gpu/tessera/autoscale"
	"github.com/tessera-gpu/tessera/autoscale/autoscaletest"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

func policy() autoscale.Policy {
	return autoscale.Policy{Name: "p", Selector: labels.Everything(), IdleAfter: 30 * time.Minute, Cooldown: 10 * time.Minute, MaxParallel: 1}
}

// world is a cluster of 8-GPU nodes with GPUNodes on a fake clock.
type world struct {
	t       *testing.T
	planner *autoscale.Planner
	c       *autoscale.Cluster
}

func newWorld(t *testing.T, nodes int, pol autoscale.Policy) *world {
	var ns []*framework.Node
	states := map[string]autoscale.NodeState{}
	for i := range nodes {
		n := testutil.MakeNode(string(rune('a'+i))).GPUs(8, "A100-80GB").Obj()
		ns = append(ns, n)
		states[n.Name] = autoscale.NodeState{GPUsReady: true}
	}
	return &world{t: t, planner: autoscale.NewPlanner(pol, testutil.Scheduler(t, "tessera")), c: &autoscale.Cluster{Snap: testutil.Snapshot(0, ns, nil), Nodes: states}}
}

// at plans at minute m and returns the decision per node.
func (w *world) at(m int) map[string]autoscale.Decision {
	w.c.Snap.Now = testutil.Epoch.Add(time.Duration(m) * time.Minute)
	out := map[string]autoscale.Decision{}
	for _, d := range w.planner.Plan(w.c).Nodes {
		out[d.Node] = d
	}
	return out
}

func (w *world) node(name string) *framework.Node {
	for _, n := range w.c.Snap.Nodes {
		if n.Name == name {
			return n
		}
	}
	w.t.Fatalf("no node %s", name)
	return nil
}

func (w *world) run(j *framework.Job, nodes ...string) *framework.Job {
	var ns []*framework.Node
	for _, n := range nodes {
		ns = append(ns, w.node(n))
	}
	testutil.Run(j, testutil.Epoch, ns...)
	w.c.Snap.Jobs = append(w.c.Snap.Jobs, j)
	return j
}

func TestEmptyAfterIdleAfter(t *testing.T) {
	w := newWorld(t, 3, policy())
	job := w.run(testutil.MakeJob("train").GPU(8).Obj(), "a")
	st := w.c.Nodes["c"]
	st.GPUsReady = false
	w.c.Nodes["c"] = st
	got := w.at(0)
	autoscaletest.Expect(t, got["a"], false, autoscale.ReasonNotIdle, "1 GPU pods hold 8.0 of 8 GPUs")
	autoscaletest.Expect(t, got["b"], false, autoscale.ReasonNotIdle, "Empty for 0s of 30m0s")
	autoscaletest.Expect(t, got["c"], false, autoscale.ReasonNotReady, "no GPUNode")
	autoscaletest.Expect(t, w.at(29)["b"], false, autoscale.ReasonNotIdle, "Empty for 29m0s")
	got = w.at(31)
	autoscaletest.Expect(t, got["b"], true, "", "Empty for 31m0s")
	autoscaletest.Expect(t, got["c"], false, autoscale.ReasonNotReady, "")

	// GPU utilization samples move the idle start: b was active at minute 20.
	st = w.c.Nodes["b"]
	st.LastActive = testutil.Epoch.Add(20 * time.Minute)
	w.c.Nodes["b"] = st
	autoscaletest.Expect(t, w.at(40)["b"], false, autoscale.ReasonNotIdle, "Empty for 20m0s")
	st.LastActive = time.Time{}
	w.c.Nodes["b"] = st

	// The job ends: a becomes idle from now on, not from the start.
	finish(job)
	autoscaletest.Expect(t, w.at(45)["a"], false, autoscale.ReasonNotIdle, "Empty for 0s")
	got = w.at(80)
	autoscaletest.Expect(t, got["b"], true, "", "")
	autoscaletest.Expect(t, got["a"], false, autoscale.ReasonMaxParallel, "maxParallel 1")
}

func finish(j *framework.Job) {
	for _, task := range j.Tasks {
		if task.Node != nil {
			task.Node.Remove(task)
		}
		task.Status = framework.TaskSucceeded
	}
}

func TestClusterRules(t *testing.T) {
	pol := policy()
	pol.MaxParallel, pol.MinNodes = 10, 2
	w := newWorld(t, 4, pol)
	w.at(0)
	got := w.at(31)
	autoscaletest.Expect(t, got["a"], true, "", "")
	autoscaletest.Expect(t, got["b"], true, "", "")
	autoscaletest.Expect(t, got["c"], false, autoscale.ReasonMinNodes, "below minNodes 2")

	// Nodes being scaled down count against maxParallel and the group's min size.
	w.planner.Policy.MinNodes = 0
	for _, n := range []string{"a", "b", "c", "d"} {
		st := w.c.Nodes[n]
		st.Group = "md"
		w.c.Nodes[n] = st
	}
	st := w.c.Nodes["a"]
	st.InProgress = true
	w.c.Nodes["a"] = st
	w.c.Groups = map[string]autoscale.Group{"md": {Replicas: 4, MinSize: 2}}
	got = w.at(32)
	autoscaletest.Expect(t, got["a"], false, autoscale.ReasonInProgress, "")
	autoscaletest.Expect(t, got["b"], true, "", "")
	autoscaletest.Expect(t, got["c"], false, autoscale.ReasonMinSize, "node group md at 2 replicas may not go below its min size 2")

	// A scale-down is not followed by a pause: maxParallel bounds the nodes going at once.
	autoscaletest.Expect(t, w.at(33)["b"], true, "", "")

	st = w.c.Nodes["b"]
	st.Blocker = &autoscale.Blocker{Reason: autoscale.ReasonPDB, Message: "PodDisruptionBudget x/y allows 0 disruptions"}
	w.c.Nodes["b"] = st
	got = w.at(42)
	autoscaletest.Expect(t, got["b"], false, autoscale.ReasonPDB, "allows 0")
	autoscaletest.Expect(t, got["c"], true, "", "")

	// A node that joined later restarts the cooldown: it came for pending work.
	w.c.LastScaleUp = testutil.Epoch.Add(40 * time.Minute)
	autoscaletest.Expect(t, w.at(43)["c"], false, autoscale.ReasonCooldown, "cooldown after a node joined the cluster until 2026-01-01T00:50:00Z")
	autoscaletest.Expect(t, w.at(51)["c"], true, "", "")
}

// The headroom: empty nodes go after surplusAfter, except as many as the GPUs that
// workloads created within the last bootTime took, less what busy nodes have free;
// those wait idleAfter, and go once that demand is older than bootTime.
func TestHeadroomKeepsEmptyNodesForRecentDemand(t *testing.T) {
	pol := policy()
	pol.MaxParallel, pol.SurplusAfter, pol.BootTime = 4, time.Minute, 5*time.Minute
	w := newWorld(t, 4, pol)
	w.run(testutil.MakeJob("new").GPU(8).Created(time.Minute).Obj(), "a")
	w.at(0)
	got := w.at(2)
	autoscaletest.Expect(t, got["a"], false, autoscale.ReasonNotIdle, "1 GPU pods hold 8.0 of 8 GPUs")
	autoscaletest.Expect(t, got["b"], false, autoscale.ReasonNotIdle,
		"Empty for 2m0s of 30m0s; kept as headroom: workloads created in the last 5m0s hold 8.0 GPUs on these nodes, 8.0 more than the nodes with GPU pods have free")
	autoscaletest.Expect(t, got["c"], true, "", "Empty for 2m0s")
	autoscaletest.Expect(t, got["d"], true, "", "Empty for 2m0s")

	// Free GPUs on busy nodes count against it: c takes 4 GPUs and has 4 free, so of
	// the 12 recent GPUs 8 are headroom, and b still holds them.
	w.run(testutil.MakeJob("half").GPU(4).Created(2*time.Minute).Obj(), "c")
	got = w.at(3)
	autoscaletest.Expect(t, got["b"], false, autoscale.ReasonNotIdle, "hold 12.0 GPUs on these nodes, 8.0 more")
	autoscaletest.Expect(t, got["d"], true, "", "")
	if h := w.planner.Plan(w.c).HeadroomGPUs; h != 8 {
		t.Errorf("plan's headroom %v GPUs, want 8", h)
	}

	// Once the demand is older than bootTime, b goes after surplusAfter too.
	autoscaletest.Expect(t, w.at(8)["b"], true, "", "Empty for 8m0s")
}

func TestUnderusedMovesPodsOnlyWhenTheyFit(t *testing.T) {
	pol := policy()
	pol.UnderusedShare = 0.5
	w := newWorld(t, 3, pol)
	w.run(testutil.MakeJob("small").GPU(2).Obj(), "a")
	w.run(testutil.MakeJob("big").GPU(6).Obj(), "b")
	full := w.run(testutil.MakeJob("full").GPU(8).Obj(), "c")
	w.at(0)
	got := w.at(31)
	autoscaletest.Expect(t, got["a"], true, "", "Underused for 31m0s")
	autoscaletest.Expect(t, got["b"], false, autoscale.ReasonNotIdle, "1 GPU pods hold 6.0 of 8 GPUs")
	autoscaletest.Expect(t, got["c"], false, autoscale.ReasonNotIdle, "")

	finish(full)
	w.c.Snap.Jobs = w.c.Snap.Jobs[:2]
	w.run(testutil.MakeJob("seven").GPU(7).Obj(), "c")
	// a's 2-GPU pod fits neither b (2 free) nor c (1 free)... b has 2 free: it fits.
	autoscaletest.Expect(t, w.at(62)["a"], true, "", "")
	w.run(testutil.MakeJob("two").GPU(2).Obj(), "b")
	autoscaletest.Expect(t, w.at(63)["a"], false, autoscale.ReasonNoPlace, "pod default/small-0 fits on no other node")
}

func TestPendingGangKeepsItsNodes(t *testing.T) {
	w := newWorld(t, 4, policy())
	w.planner.Policy.MaxParallel = 4
	q := testutil.MakeQueue("train").DeservedGPUs(32).Obj()
	w.c.Snap.Queues = []*framework.Queue{q}
	blocker := w.run(testutil.MakeJob("blocker").GPU(1).Queue(q).Obj(), "a")
	_ = blocker
	gang := testutil.MakeJob("gang").Tasks(4).GPU(8).Queue(q).Obj()
	gang.Inqueue = true
	w.c.Snap.Jobs = append(w.c.Snap.Jobs, gang)
	w.at(0)
	got := w.at(31)
	for _, n := range []string{"b", "c", "d"} {
		autoscaletest.Expect(t, got[n], false, autoscale.ReasonNeededByGang, "pending job default/gang waits within queue train's deserved share")
	}
	// Without the gang and queue rules (the CA-like baseline), the nodes go, but the
	// deserved share is kept by the queue rules alone.
	w.planner.Queues = false
	got = w.at(32)
	autoscaletest.Expect(t, got["b"], true, "", "")
	w.planner.Queues = true
	gang.Tasks = nil
	w.c.Snap.Jobs = w.c.Snap.Jobs[:1]
	got = w.at(33)
	// The queue's work holds 1 GPU of its deserved 32: an idle share is not kept.
	autoscaletest.Expect(t, got["b"], true, "", "")
	// Work that asks for more of the share than removing b would leave keeps b.
	waiting := testutil.MakeJob("waiting").Tasks(3).GPU(8).Queue(q).Obj()
	w.c.Snap.Jobs = append(w.c.Snap.Jobs, waiting)
	got = w.at(34)
	autoscaletest.Expect(t, got["b"], false, autoscale.ReasonDeserved, "the queues' work asks for 25 GPUs of their deserved shares; only 24 would be left")
}

// Revalidate plans one node being scaled down again: the cooldown and maxParallel it
// holds its slot under do not apply, no other node is chosen, and the other rules do.
func TestRevalidate(t *testing.T) {
	w := newWorld(t, 3, policy())
	w.at(0)
	w.at(31)
	for _, n := range []string{"a", "b"} {
		st := w.c.Nodes[n]
		st.InProgress = true
		w.c.Nodes[n] = st
	}
	w.c.LastScaleUp = testutil.Epoch.Add(31 * time.Minute)
	w.c.Snap.Now = testutil.Epoch.Add(32 * time.Minute)
	autoscaletest.Expect(t, w.planner.Revalidate(w.c, "b"), true, "", "Empty for 32m0s")
	if d := w.planner.Plan(w.c).Nodes[2]; d.Node != "c" || d.Candidate {
		t.Fatalf("the plan chose %+v while a and b are in progress (maxParallel 1)", d)
	}
	w.planner.Policy.MinNodes = 3
	autoscaletest.Expect(t, w.planner.Revalidate(w.c, "b"), false, autoscale.ReasonMinNodes, "")
	w.planner.Policy.MinNodes = 0
	w.run(testutil.MakeJob("train").GPU(8).Obj(), "b")
	autoscaletest.Expect(t, w.planner.Revalidate(w.c, "b"), false, autoscale.ReasonNotIdle, "")
	if d := w.planner.Revalidate(w.c, "x"); d.Candidate {
		t.Fatalf("unknown node: %+v", d)
	}
}

// An underused node whose pods checkpoint soon goes right after they do: evicting them
// at once would throw away more work than the node costs until then.
func TestUnderusedWaitsForACheckpointWhenCheaper(t *testing.T) {
	pol := policy()
	pol.UnderusedShare = 0.5
	w := newWorld(t, 2, pol)
	j := w.run(testutil.MakeJob("ckpt").GPU(3).Obj(), "a")
	for _, task := range j.Tasks {
		task.CheckpointEvery = 40 * time.Minute
	}
	w.run(testutil.MakeJob("other").GPU(2).Obj(), "b")
	w.at(0)
	// At 31m: 3 GPUs x 31m lost now, against the node's 8 GPUs x 9m till the checkpoint.
	autoscaletest.Expect(t, w.at(31)["a"], false, autoscale.ReasonCheckpoint, "waiting 9m0s for their next ones")
	autoscaletest.Expect(t, w.at(41)["a"], true, "", "")
	// A checkpoint the pod reports resets its clock.
	for _, task := range j.Tasks {
		task.CheckpointedAt = testutil.Epoch.Add(78 * time.Minute)
	}
	autoscaletest.Expect(t, w.at(79)["a"], true, "", "")
}
