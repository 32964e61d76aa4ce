package daemon_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/internal/controller"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/daemon"
	"github.com/tessera-gpu/tessera/test/testenv"
)

const leaseNamespace = "tessera-system"

// startManager runs the scheduler as `tessera scheduler` does, with leader election,
// until the returned stop is called or the test ends.
func (h *harness) startManager(cfg *rest.Config, id string) (stop func()) {
	return h.startManagerAs(cfg, id, "")
}

// startManagerAs is startManager with the replica's identity in the Lease ("": new at
// every start).
func (h *harness) startManagerAs(cfg *rest.Config, id, identity string) (stop func()) {
	h.t.Helper()
	return testenv.RunManager(h.t, h.ctx, h.managerAs(cfg, id, identity))
}

// managerAs is the manager startManagerAs runs, not started.
func (h *harness) managerAs(cfg *rest.Config, id, identity string) manager.Manager {
	h.t.Helper()
	sc, err := scheduler.Profile("tessera")
	if err != nil {
		h.t.Fatal(err)
	}
	mgr, _, err := daemon.NewManager(cfg, env.Scheme, daemon.Config{Scheduler: sc, Daemon: daemon.Options{Period: h.period},
		Serving: controller.Serving{LeaderElect: true, LeaderElectionNamespace: leaseNamespace, LeaderElectionID: id, LeaseDuration: 2 * time.Second,
			LeaderElectionIdentity: identity, MetricsAddr: "0", ProbeAddr: "0"}, Log: testr.New(h.t)})
	if err != nil {
		h.t.Fatal(err)
	}
	return mgr
}

func ensureNamespace(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if err := env.Client.Create(ctx, apitest.MakeNamespace(name).Obj()); err != nil && !isExists(err) {
		t.Fatal(err)
	}
}

// TestDeployRBACGrantsEnough applies the scheduler's RBAC of the kustomize base (rendered
// from the chart) and runs the scheduler as
// its ServiceAccount through everything it writes: a lease, binds, a resource claim's
// allocation, an implicit gang's
// PodGroup and its status, a Queue's status, an eviction and events. Removing any verb
// from the chart's scheduler/rbac.yaml fails this test.
func TestDeployRBACGrantsEnough(t *testing.T) {
	h := newHarness(t)
	ensureNamespace(t, h.ctx, leaseNamespace)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Apply(h.ctx, filepath.Join(root, "deploy", "kustomize", "base", "scheduler", "rbac.yaml")); err != nil {
		t.Fatal(err)
	}
	h.node("a", 8, nil)
	h.draNode("b", 1)
	q := apitest.MakeQueue("rbac").Weight(1).Obj()
	q.Spec.AllowedPriorityClasses = []string{h.highPriority()}
	if err := h.c.Create(h.ctx, q); err != nil {
		t.Fatal(err)
	}
	h.pod(h.makePod("too-big").GPU(16).Queue("rbac"))
	h.pod(h.makePod("low").GPU(6).Queue("rbac"))
	for i := range 2 {
		h.pod(h.makePod(fmt.Sprintf("g-%d", i)).GPU(1).Queue("rbac").Group("g").Annotation(tesserav1.AnnotationMinAvailable, "2"))
	}
	h.claimPod(h.makePod("claim").Queue("rbac"), 1, "")
	sa := rest.CopyConfig(env.Config)
	sa.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:tessera-system:tessera-scheduler"}
	h.startManager(sa, "rbac-test")
	h.eventually("binds, a claim's allocation, implicit PodGroup and its status as the ServiceAccount", 20*time.Second, func() string {
		if n := h.bound(); n != 4 {
			return fmt.Sprintf("%d of 4 bound", n)
		}
		if c := h.claim("claim"); c.Status.Allocation == nil {
			return "claim not allocated"
		}
		if pg := h.getPodGroup("g"); pg == nil || pg.Status.Phase != tesserav1.PodGroupRunning {
			return fmt.Sprintf("PodGroup g: %+v", pg)
		}
		return ""
	})
	h.pod(h.makePod("high").GPU(6).PriorityClass(h.highPriority()).Queue("rbac"))
	h.eventually("eviction, Queue status and events as the ServiceAccount", 20*time.Second, func() string {
		var low corev1.Pod
		if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "low"}, &low); err != nil || low.DeletionTimestamp == nil {
			return "low not evicted"
		}
		var got tesserav1.Queue
		if err := h.c.Get(h.ctx, client.ObjectKey{Name: "rbac"}, &got); err != nil {
			return err.Error()
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, tesserav1.ConditionReady) {
			return fmt.Sprintf("queue status %+v", got.Status)
		}
		var evs eventsv1.EventList
		if err := h.c.List(h.ctx, &evs, client.InNamespace(h.ns)); err != nil {
			return err.Error()
		}
		reasons := map[string]bool{}
		for _, e := range evs.Items {
			reasons[e.Reason] = true
		}
		if !reasons["FailedScheduling"] || !reasons["Preempted"] {
			return fmt.Sprintf("events %v", reasons)
		}
		return ""
	})
}

// TestLeaderHandOver: of two replicas one schedules; when it stops, the other takes
// the Lease over and schedules the next pod.
func TestLeaderHandOver(t *testing.T) {
	h := newHarness(t)
	ensureNamespace(t, h.ctx, leaseNamespace)
	h.node("a", 8, nil)
	const id = "handover-test"
	stopFirst := h.startManager(env.Config, id)
	h.pod(h.makePod("first").GPU(1))
	h.eventually("first bound", 20*time.Second, func() string {
		if h.bound() != 1 {
			return "not yet"
		}
		return ""
	})
	holder := func() string {
		var l coordinationv1.Lease
		if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: leaseNamespace, Name: id}, &l); err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	first := holder()
	if first == "" {
		t.Fatal("no Lease holder")
	}
	h.startManager(env.Config, id)
	stopFirst()
	h.pod(h.makePod("second").GPU(1))
	h.eventually("second replica took over and bound the next pod", 20*time.Second, func() string {
		if h.bound() != 2 {
			return fmt.Sprintf("lease held by %q", holder())
		}
		return ""
	})
	if now := holder(); now == first || now == "" {
		t.Fatalf("lease holder %q after hand-over, was %q", now, first)
	}
}

// TestRestartedLeaderResumesItsLease: a replica whose identity holds an unexpired Lease
// (a container restarted in the same pod) leads at once; another identity waits.
func TestRestartedLeaderResumesItsLease(t *testing.T) {
	h := newHarness(t)
	ensureNamespace(t, h.ctx, leaseNamespace)
	h.node("a", 8, nil)
	const id, crashed = "resume-test", "host_pod-uid-1"
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNamespace, Name: id},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(crashed), LeaseDurationSeconds: ptr.To[int32](600),
			AcquireTime: &now, RenewTime: &now}}
	if err := h.c.Create(h.ctx, lease); err != nil {
		t.Fatal(err)
	}
	stopOther := h.startManagerAs(env.Config, id, "host_pod-uid-2")
	h.pod(h.makePod("first").GPU(1))
	time.Sleep(3 * time.Second)
	if n := h.bound(); n != 0 {
		t.Fatalf("another identity bound %d pods while the Lease was held", n)
	}
	stopOther()
	h.startManagerAs(env.Config, id, crashed)
	h.eventually("the restarted leader resumed its Lease and bound", 20*time.Second, func() string {
		if h.bound() != 1 {
			return "not yet"
		}
		return ""
	})
}

// TestLeaderLeadsAgainAfterAPIServerRestart: a leader that cannot renew its Lease, the
// API server down past the renew deadline, keeps running and, once the server is back,
// leads again and binds, without exiting (controller-runtime's own election ends the
// process there, and the restarted process lists the cluster again).
func TestLeaderLeadsAgainAfterAPIServerRestart(t *testing.T) {
	h := newHarness(t)
	ensureNamespace(t, h.ctx, leaseNamespace)
	h.node("a", 8, nil)
	mgr := h.managerAs(env.Config, "restart-test", "host_pod-uid-r")
	ctx, cancel := context.WithCancel(h.ctx)
	exited := make(chan error, 1)
	go func() { exited <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-exited
	})
	h.pod(h.makePod("first").GPU(1))
	h.eventually("first bound", 20*time.Second, func() string {
		if h.bound() != 1 {
			return "not yet"
		}
		return ""
	})
	// The Lease lasts 2s, so its renew deadline (1.3s) passes while the server is down.
	if err := env.Restart(h.ctx, "kube-apiserver", 3*time.Second); err != nil {
		t.Fatal(err)
	}
	h.pod(h.makePod("second").GPU(1))
	h.eventually("the leader led again and bound the next pod", 20*time.Second, func() string {
		if h.bound() != 2 {
			return "not yet"
		}
		return ""
	})
	select {
	case err := <-exited:
		t.Fatalf("the manager ended when its Lease could not be renewed: %v", err)
	default:
	}
}
