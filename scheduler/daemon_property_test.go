package scheduler_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/framework"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
	"github.com/tessera-gpu/tessera/scheduler/testutil"
)

// apiWorld is a random cluster held as API objects, scheduled the daemon's way: every
// session rebuilds the snapshot from the objects, and the session's bindings are
// written back as spec.nodeName and the tessera.dev/gpu-assignment annotation.
type apiWorld struct {
	rng       *rand.Rand
	sched     *scheduler.Scheduler
	after     time.Duration
	now       time.Time
	nodes     []*corev1.Node
	queues    []*tesserav1.Queue
	groups    map[string]*tesserav1.PodGroup
	pods      map[string]*corev1.Pod
	jobs      int
	waitStart map[string]time.Time // job key -> first session it waited in
}

var apiModels = map[string]int64{"A100-80GB": 81920, "T4": 15360}

func newAPIWorld(t *testing.T, seed uint64) *apiWorld {
	rng := rand.New(rand.NewPCG(seed, 0xda3e39cb))
	cfg, err := scheduler.Profile("tessera")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed = int64(seed)
	w := &apiWorld{rng: rng, after: time.Duration(1+rng.IntN(2)) * 10 * time.Minute, now: testutil.Epoch,
		groups: map[string]*tesserav1.PodGroup{}, pods: map[string]*corev1.Pod{}, waitStart: map[string]time.Time{}}
	cfg.ReservationAfter = scheduler.Duration{Duration: w.after}
	if w.sched, err = scheduler.New(cfg); err != nil {
		t.Fatal(err)
	}
	for i := range 2 + rng.IntN(6) {
		model := "A100-80GB"
		if rng.IntN(3) == 0 {
			model = "T4"
		}
		gpus := []int{1, 2, 4, 8, 8}[rng.IntN(5)]
		cpus := strconv.Itoa(16 + rng.IntN(48))
		w.nodes = append(w.nodes, apitest.MakeNode(fmt.Sprintf("n%d", i)).GPUs(gpus, model, apiModels[model]).
			Allocatable(corev1.ResourceCPU, cpus).Allocatable(corev1.ResourceMemory, "512Gi").Allocatable(corev1.ResourcePods, "110").
			Label(tesserav1.LabelRack, fmt.Sprintf("r%d", rng.IntN(2))).Obj())
	}
	for i := range 1 + rng.IntN(2) {
		q := apitest.MakeQueue(fmt.Sprintf("q%d", i)).Weight(int32(1 + rng.IntN(3)))
		if rng.IntN(3) == 0 {
			q.Capability(tesserav1.ResourceGPU, strconv.Itoa(4+rng.IntN(16)))
		}
		w.queues = append(w.queues, q.Obj())
	}
	for range 2 + rng.IntN(8) {
		w.addJob()
	}
	return w
}

// addJob submits a gang: a PodGroup and its pods; sometimes fewer pods than minMember
// exist yet, as when a Job controller creates them one by one.
func (w *apiWorld) addJob() {
	rng := w.rng
	w.jobs++
	name := fmt.Sprintf("j%d", w.jobs)
	tasks := 1 + rng.IntN(4)
	minMember := 1 + rng.IntN(tasks)
	if rng.IntN(8) == 0 {
		minMember = tasks + 1
	}
	w.groups[name] = apitest.MakePodGroup(name, "ns").UID("pg-" + name).Created(w.now).MinMember(int32(minMember)).Obj()
	cpu := fmt.Sprintf("%dm", 500+rng.IntN(8000))
	var gpus, sliceMiB int64
	switch rng.IntN(4) {
	case 0:
	case 1:
		gpus = int64(1 + rng.IntN(4))
	case 2:
		gpus = 8
	case 3:
		sliceMiB = int64(1000 + rng.IntN(40000))
	}
	prio := int32(rng.IntN(3))
	queue := w.queues[rng.IntN(len(w.queues))].Name
	for i := range tasks {
		p := apitest.MakePod(fmt.Sprintf("%s-%d", name, i), "ns").UID(fmt.Sprintf("%s-%d-%d", name, i, w.jobs)).Created(w.now).
			Group(name).Queue(queue).SchedulerName(tesserav1.SchedulerName).Priority(prio).
			RequestAndLimit(corev1.ResourceCPU, cpu).RequestAndLimit(corev1.ResourceMemory, "1Gi")
		if gpus > 0 {
			p.GPU(gpus)
		}
		if sliceMiB > 0 {
			p.GPUMemory(sliceMiB)
		}
		w.pods[p.Obj().Name] = p.Obj()
	}
}

// session rebuilds the snapshot from the objects, runs a session, checks the
// invariants and writes the decisions back.
func (w *apiWorld) session(t *testing.T, label string) {
	t.Helper()
	b := snapshot.NewBuilder(w.now, snapshot.Options{})
	for _, n := range w.nodes {
		b.AddNode(n, nil)
	}
	for _, q := range w.queues {
		b.AddQueue(q)
	}
	for _, g := range w.groups {
		b.AddPodGroup(g)
	}
	for _, p := range w.pods {
		b.AddPod(p, 0)
	}
	snap, errs := b.Build()
	if len(errs) > 0 {
		t.Fatalf("%s: the snapshot of written-back objects has errors: %v", label, errs)
	}
	r := w.sched.RunSession(snap)
	checkInvariants(t, label, true, snap, r)
	w.checkReservation(t, label, snap)
	for _, e := range r.Evictions { // the controller recreates an evicted pod, pending
		p := w.pods[e.Task.Name]
		p.Spec.NodeName, p.Annotations = "", nil
		p.UID += "r"
	}
	for _, bd := range r.Bindings {
		p := w.pods[bd.Task.Name]
		p.Spec.NodeName = bd.Node.Name
		p.Status.StartTime = &metav1.Time{Time: w.now}
		if a, ok := snapshot.Assignment(bd.Task, bd.Node, bd.GPUs); ok {
			p.Annotations = map[string]string{tesserav1.AnnotationGPUAssign: a.Encode()}
		}
	}
	w.now = w.now.Add(time.Duration(1+w.rng.IntN(10)) * time.Minute)
	for name, g := range w.groups { // some running gangs finish
		if w.rng.IntN(5) == 0 {
			for _, p := range w.pods {
				if p.Labels[tesserav1.LabelPodGroup] == name && p.Spec.NodeName != "" {
					p.Status.Phase = corev1.PodSucceeded
				}
			}
			_ = g
		}
	}
	for range w.rng.IntN(3) {
		w.addJob()
	}
}

// checkReservation: once a gang has waited for capacity longer than reservationAfter,
// some node is reserved for a starving gang (the first in job order), whatever the
// snapshot forgot between sessions.
func (w *apiWorld) checkReservation(t *testing.T, label string, snap *framework.Snapshot) {
	t.Helper()
	starving, fitsSomewhere := false, true
	for _, j := range snap.Jobs {
		waiting := j.Count(framework.TaskPending) > 0 && j.Pending != nil
		if !waiting {
			delete(w.waitStart, j.Key())
			continue
		}
		start, ok := w.waitStart[j.Key()]
		if !ok {
			w.waitStart[j.Key()] = snap.Now
			continue
		}
		switch j.Pending.Code {
		case framework.ReasonUnschedulable, framework.ReasonGangIncomplete, framework.ReasonTopology, framework.ReasonWaitingInLine:
		default:
			continue
		}
		// A running gang's extra pods get no reservation, nor does a gang whose queue
		// holds more than its deserved share (its share by weight when it has none).
		share, _ := w.sched.Share(j.Queue)
		if snap.Now.Sub(start) > w.after && len(j.Tasks) >= j.MinMember && !j.Ready() &&
			(j.Queue == nil || j.Queue.Allocated.GPU <= cmp.Or(share.Deserved.GPU, share.Entitled.GPU)) {
			starving = true
			fitsSomewhere = fitsSomewhere && fitsEmptyNode(j, snap)
		}
	}
	if !starving || !fitsSomewhere {
		return
	}
	for _, n := range snap.Nodes {
		if n.Reserved != nil {
			return
		}
	}
	t.Fatalf("%s: a gang waited past reservationAfter %s and no node is reserved", label, w.after)
}

// fitsEmptyNode reports whether the job's pending tasks fit the nodes when they are all
// empty (a gang no freed cluster could hold gets no reservation).
func fitsEmptyNode(j *framework.Job, snap *framework.Snapshot) bool {
	pending := 0
	var t *framework.Task
	for _, task := range j.Tasks {
		if task.Status == framework.TaskPending {
			pending++
			if t == nil {
				t = task
			}
		}
	}
	if t == nil {
		return true
	}
	room := 0
	for _, n := range snap.Nodes {
		room += scheduler.CapacityFor(t, n)
	}
	return room >= pending
}

// TestPropertyDaemonWay checks the invariants when every session starts from API
// objects, as the scheduler daemon's do: nothing a session keeps on the snapshot
// survives, so waiting times, admissions and reservations must live in the Scheduler.
func TestPropertyDaemonWay(t *testing.T) {
	clusters, sessions := envInt(t, "TESSERA_PROPERTY_CLUSTERS", 1500), 8
	if testing.Short() {
		clusters = 100
	}
	for c := range clusters {
		w := newAPIWorld(t, uint64(c))
		for s := range sessions {
			w.session(t, fmt.Sprintf("seed %d session %d", c, s))
		}
	}
}
