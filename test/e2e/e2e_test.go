package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/test/testenv"
)

// TestEndToEnd runs the whole system from a Git commit to a smaller cluster, printing a
// timeline, with faults injected on the way: the scheduler killed in the middle of a
// gang's binds, the autoscaler killed in the middle of a drain, the webhook restarted.
func TestEndToEnd(t *testing.T) {
	if os.Getenv("TESSERA_E2E") != "1" {
		t.Skip("set TESSERA_E2E=1 (make e2e) to run the end-to-end test")
	}
	ctx := testenv.Context(t, 25*time.Minute)
	tl := NewTimeline(os.Stdout)
	c, err := Start(ctx, Options{Logf: tl.Logf})
	stopOnCleanup(t, c)
	if err != nil {
		t.Fatal(err)
	}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	go tl.Sample(sampleCtx, c.Client, 2*time.Second)
	defer func() {
		stopSampling()
		fmt.Printf("\nGPU allocation and nodes over the run:\n%s", tl.Chart(8))
	}()
	s := &scenario{t: t, ctx: ctx, c: c, tl: tl}
	for _, step := range []struct {
		name string
		run  func()
	}{
		{"gitops sync", s.gitopsSync},
		{"nodes and GPUs", s.nodesAndGPUs},
		{"placement", s.placement},
		{"tenant bypasses", s.tenantBypasses},
		{"preemption", s.preemption},
		{"scale-down", s.scaleDown},
		{"workload controllers' gangs", s.workloadGangs},
		{"a gang of GPU-share claims", s.claimGang},
		{"scale-up", s.scaleUp},
		{"gitops changes", s.gitopsChanges},
	} {
		s.tl.Logf("== %s", step.name)
		step.run()
		if t.Failed() {
			return
		}
	}
}

type scenario struct {
	t   *testing.T
	ctx context.Context
	c   *Cluster
	tl  *Timeline
	// overlay is the committed clusters/e2e/kustomization.yaml.
	overlay string
}

func (s *scenario) wait(timeout time.Duration, what string, check func() error) {
	s.t.Helper()
	if err := poll(s.ctx, timeout, what, check); err != nil {
		s.t.Fatal(err)
	}
}

// gitopsSync commits the example cluster configuration (and the test's overlay) and
// lets Flux sync it.
func (s *scenario) gitopsSync() {
	overlay, err := ExampleOverlay()
	if err != nil {
		s.t.Fatal(err)
	}
	s.overlay = overlay
	rev, err := s.c.SyncExample(s.ctx, s.overlay)
	if err != nil {
		s.t.Fatal(err)
	}
	var q tesserav1.Queue
	if err := s.c.Client.Get(s.ctx, client.ObjectKey{Name: "train-prod"}, &q); err != nil {
		s.t.Fatal(err)
	}
	deserved := q.Spec.Deserved[tesserav1.ResourceGPU]
	s.tl.Logf("committed %s and Flux applied it: queue train-prod deserves %s GPUs", rev[:8], deserved.String())
}

func (s *scenario) commit(message string, files map[string]string) string {
	s.t.Helper()
	rev, err := s.c.Git.Commit(message, files)
	if err != nil {
		s.t.Fatal(err)
	}
	s.tl.Logf("committed %s %q", rev[:8], message)
	return rev
}

// waitApplied waits until Flux's Kustomization is Ready at revision rev.
func (s *scenario) waitApplied(rev string) {
	s.t.Helper()
	if err := s.c.WaitApplied(s.ctx, rev); err != nil {
		s.t.Fatal(err)
	}
}

// nodesAndGPUs checks that every Machine became a Node whose agent published 8 GPUs.
func (s *scenario) nodesAndGPUs() {
	s.wait(2*time.Minute, "a GPUNode with 8 GPUs per node", func() error {
		var gns tesserav1.GPUNodeList
		if err := s.c.Client.List(s.ctx, &gns); err != nil {
			return err
		}
		full := 0
		for _, g := range gns.Items {
			if len(g.Status.Devices) == 8 {
				full++
			}
		}
		if full < 10 {
			return fmt.Errorf("%d of 10 GPUNodes list 8 GPUs", full)
		}
		return nil
	})
	var n corev1.Node
	var nodes corev1.NodeList
	if err := s.c.Client.List(s.ctx, &nodes); err != nil {
		s.t.Fatal(err)
	}
	n = nodes.Items[0]
	s.tl.Logf("10 Machines are kwok Nodes with 8 x %s each (node agents on simulated GPUs)", n.Labels[tesserav1.LabelGPUModel])
}

// placement submits a 32-GPU gang, two 8-GPU fine-tunes and eight 12 GiB experiments as
// plain Jobs, killing the scheduler as the gang starts binding.
func (s *scenario) placement() {
	gang := Job("pretraining", "pretrain", 4, 8, 0, 100*time.Second)
	finetunes := []*batchv1.Job{Job("research", "finetune-a", 1, 8, 0, 100*time.Second), Job("research", "finetune-b", 1, 8, 0, 100*time.Second)}
	experiments := Job("research", "experiments", 8, 0, 12*1024, 90*time.Second)
	for _, j := range append([]*batchv1.Job{gang, experiments}, finetunes...) {
		s.create(j)
	}
	// The scheduler dies as soon as one gang pod is seen bound, and comes back.
	if err := pollEvery(s.ctx, 10*time.Millisecond, 2*time.Minute, "a first gang pod bound", func() error {
		pods, err := JobPods(s.ctx, s.c.Client, gang)
		if err != nil || Bound(pods) == 0 {
			return fmt.Errorf("no gang pod bound yet (%v)", err)
		}
		return nil
	}); err != nil {
		s.t.Fatal(err)
	}
	sched := s.c.Procs["tessera-scheduler"]
	sched.Kill()
	pods, _ := JobPods(s.ctx, s.c.Client, gang)
	s.tl.Logf("killed the scheduler with %d of 4 gang pods bound; restarting it", Bound(pods))
	if err := sched.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.wait(2*time.Minute, "the gang bound whole", func() error {
		pods, err := JobPods(s.ctx, s.c.Client, gang)
		if err != nil {
			return err
		}
		if b := Bound(pods); b != 4 {
			return fmt.Errorf("%d of 4 gang pods bound", b)
		}
		return nil
	})
	s.tl.Logf("gang pretraining/pretrain: 4 of 4 pods bound")
	s.wait(time.Minute, "fine-tunes and experiments bound", func() error {
		for _, j := range append(finetunes, experiments) {
			pods, err := JobPods(s.ctx, s.c.Client, j)
			if err != nil {
				return err
			}
			if Bound(pods) != int(*j.Spec.Parallelism) {
				return fmt.Errorf("%s: %d of %d bound", j.Name, Bound(pods), *j.Spec.Parallelism)
			}
		}
		return nil
	})
	// The webhook's defaults on a plain Job's pod.
	pods, err := JobPods(s.ctx, s.c.Client, gang)
	if err != nil {
		s.t.Fatal(err)
	}
	p := pods[0]
	gpus := p.Spec.Containers[0].Resources.Requests[tesserav1.ResourceGPU]
	if p.Spec.SchedulerName != tesserav1.SchedulerName || p.Spec.PriorityClassName != "production-high" || gpus.Value() != 8 {
		s.t.Fatalf("gang pod not defaulted: schedulerName %q, priorityClassName %q, tessera.dev/gpu %s", p.Spec.SchedulerName, p.Spec.PriorityClassName, gpus.String())
	}
	if _, ok := p.Spec.Containers[0].Resources.Requests[tesserav1.ResourceNvidiaGPU]; ok {
		s.t.Fatalf("gang pod still asks for nvidia.com/gpu: %v", p.Spec.Containers[0].Resources.Requests)
	}
	s.tl.Logf("webhook defaults: schedulerName %s, priority %s, nvidia.com/gpu rewritten to tessera.dev/gpu", p.Spec.SchedulerName, p.Spec.PriorityClassName)
	// Slices share cards; whole GPUs are packed so that whole nodes stay free.
	shared, busy := s.gpuUse()
	if shared == 0 {
		s.t.Fatalf("no GPU holds two 12 GiB slices")
	}
	if free := 10 - busy; free < 2 {
		s.t.Fatalf("binpack left %d whole nodes free, want at least 2 (50 GPUs on 10 x 8)", free)
	}
	s.tl.Logf("%d GPUs hold two or more 12 GiB slices; %d of 10 nodes busy, %d left whole", shared, busy, 10-busy)
}

// gpuUse counts GPUs shared by several slices and nodes with any GPU pod.
func (s *scenario) gpuUse() (shared, busyNodes int) {
	var pods corev1.PodList
	if err := s.c.Client.List(s.ctx, &pods); err != nil {
		s.t.Fatal(err)
	}
	perGPU := map[string]int{}
	nodes := map[string]bool{}
	for _, p := range pods.Items {
		if Bound([]corev1.Pod{p}) == 0 || podGPUs(&p) == 0 {
			continue
		}
		nodes[p.Spec.NodeName] = true
		a, err := tesserav1.ParseGPUAssignment(p.Annotations[tesserav1.AnnotationGPUAssign])
		if err != nil {
			s.t.Fatalf("pod %s: %v", p.Name, err)
		}
		for _, c := range a.Containers {
			if c.MemoryMiB > 0 {
				for _, u := range c.UUIDs {
					perGPU[a.Node+"/"+u]++
				}
			}
		}
	}
	for _, n := range perGPU {
		if n > 1 {
			shared++
		}
	}
	return shared, len(nodes)
}

// preemption fills train-prod with an offline-low Job, then submits a production-high
// one that needs its GPUs: the low one is evicted, and later runs to completion.
func (s *scenario) preemption() {
	low := Job("pretraining", "offline-eval", 3, 8, 0, 40*time.Second)
	low.Spec.Template.Spec.PriorityClassName = "offline-low"
	s.create(low)
	s.wait(time.Minute, "the offline Job bound", func() error {
		pods, err := JobPods(s.ctx, s.c.Client, low)
		if err != nil || Bound(pods) != 3 {
			return fmt.Errorf("offline-eval: %d of 3 bound (%v)", Bound(pods), err)
		}
		return nil
	})
	before, _ := JobPods(s.ctx, s.c.Client, low)
	s.tl.Logf("offline-eval (offline-low, 3 x 8 GPUs) running; the cluster has %.0f of 80 GPUs allocated", s.allocated())
	high := Job("pretraining", "urgent", 3, 8, 0, 30*time.Second)
	s.create(high)
	s.wait(2*time.Minute, "the urgent Job bound", func() error {
		pods, err := JobPods(s.ctx, s.c.Client, high)
		if err != nil || Bound(pods) != 3 {
			return fmt.Errorf("urgent: %d of 3 bound (%v)", Bound(pods), err)
		}
		return nil
	})
	after, _ := JobPods(s.ctx, s.c.Client, low)
	evicted := 0
	for _, p := range before {
		if !slices.ContainsFunc(after, func(q corev1.Pod) bool { return q.UID == p.UID && q.DeletionTimestamp == nil }) {
			evicted++
		}
	}
	if evicted == 0 {
		s.t.Fatalf("urgent ran without evicting offline-eval's pods")
	}
	s.tl.Logf("urgent (production-high) bound; %d offline-eval pods evicted", evicted)
	s.wait(4*time.Minute, "offline-eval to resume and complete", func() error { return JobDone(s.ctx, s.c.Client, low) })
	s.tl.Logf("offline-eval came back and completed")
}

// scaleDown waits for every Job to finish and the idle nodes to go through Cluster
// API, killing the autoscaler in the middle of the first drain.
func (s *scenario) scaleDown() {
	s.wait(5*time.Minute, "every Job complete", func() error {
		var jobs batchv1.JobList
		if err := s.c.Client.List(s.ctx, &jobs); err != nil {
			return err
		}
		for i := range jobs.Items {
			if err := JobDone(s.ctx, s.c.Client, &jobs.Items[i]); err != nil {
				return err
			}
		}
		return nil
	})
	s.tl.Logf("every Job completed; the nodes are idle")
	s.wait(2*time.Minute, "a node cordoned", func() error {
		var nodes corev1.NodeList
		if err := s.c.Client.List(s.ctx, &nodes); err != nil {
			return err
		}
		for _, n := range nodes.Items {
			if n.Spec.Unschedulable {
				return nil
			}
		}
		return fmt.Errorf("no node cordoned yet")
	})
	as := s.c.Procs["tessera-autoscaler"]
	as.Kill()
	s.tl.Logf("a node is cordoned: killed the autoscaler, restarting it")
	if err := as.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.wait(6*time.Minute, "the MachineDeployment at its 2 minimum nodes", func() error {
		var md clusterv1.MachineDeployment
		if err := s.c.Client.Get(s.ctx, client.ObjectKey{Namespace: ClusterNamespace, Name: DeploymentName}, &md); err != nil {
			return err
		}
		var ms clusterv1.MachineList
		if err := s.c.Client.List(s.ctx, &ms, client.InNamespace(ClusterNamespace)); err != nil {
			return err
		}
		var nodes corev1.NodeList
		if err := s.c.Client.List(s.ctx, &nodes); err != nil {
			return err
		}
		if *md.Spec.Replicas != 2 || len(ms.Items) != 2 || len(nodes.Items) != 2 {
			return fmt.Errorf("replicas %d, %d Machines, %d Nodes", *md.Spec.Replicas, len(ms.Items), len(nodes.Items))
		}
		return nil
	})
	var policy tesserav1.ScaleDownPolicy
	if err := s.c.Client.Get(s.ctx, client.ObjectKey{Name: "idle-gpu-nodes"}, &policy); err != nil {
		s.t.Fatal(err)
	}
	removed := map[string]bool{}
	for _, r := range policy.Status.RecentScaleDowns {
		removed[r.Node] = true
	}
	if len(policy.Status.RecentScaleDowns) != 8 || len(removed) != 8 {
		s.t.Fatalf("ScaleDownPolicy records %d scale-downs of %d nodes, want 8 of 8: %+v", len(policy.Status.RecentScaleDowns), len(removed), policy.Status.RecentScaleDowns)
	}
	s.tl.Logf("MachineDeployment %s scaled 10 -> 2: 8 Machines deleted, their Nodes gone, each scale-down recorded once", DeploymentName)
	s.wait(time.Minute, "the TesseraNodeScaledDown alert", func() error {
		alerts, err := s.c.Alerts(s.ctx)
		if err != nil {
			return err
		}
		for _, a := range alerts {
			if a.Labels["alertname"] == "TesseraNodeScaledDown" && a.State == "firing" {
				s.tl.Logf("Prometheus: TesseraNodeScaledDown firing: %s", a.Annotations["summary"])
				return nil
			}
		}
		return fmt.Errorf("not firing; alerts: %v", alerts)
	})
}

// gitopsChanges commits a smaller train-dev capability (the scheduler follows it), then,
// after a webhook restart, a policy that does not compile (rejected, reported by Flux,
// the old policies keep working).
func (s *scenario) gitopsChanges() {
	s.overlay = strings.NewReplacer(
		`path: /spec/deserved/tessera.dev~1gpu, value: "24"`, `path: /spec/deserved/tessera.dev~1gpu, value: "8"`,
		`path: /spec/capability/tessera.dev~1gpu, value: "40"`, `path: /spec/capability/tessera.dev~1gpu, value: "8"`,
	).Replace(s.overlay)
	rev := s.commit("train-dev: deserves and may use 8 GPUs", map[string]string{"clusters/e2e/kustomization.yaml": s.overlay})
	s.waitApplied(rev)
	a, b := Job("research", "tune-a", 1, 8, 0, 0), Job("research", "tune-b", 1, 8, 0, 0)
	s.create(a)
	s.create(b)
	s.wait(time.Minute, "one fine-tune bound, the other held by the capability", func() error {
		pa, _ := JobPods(s.ctx, s.c.Client, a)
		pb, _ := JobPods(s.ctx, s.c.Client, b)
		if Bound(pa)+Bound(pb) != 1 || len(pa)+len(pb) != 2 {
			return fmt.Errorf("%d of 2 fine-tunes bound", Bound(pa)+Bound(pb))
		}
		return nil
	})
	s.tl.Logf("Flux applied %s: train-dev deserves and may use 8 GPUs, so 1 of 2 8-GPU fine-tunes runs (16 GPUs free)", rev[:8])

	wh := s.c.Procs["tessera-webhook"]
	wh.Stop(10 * time.Second)
	if err := wh.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.tl.Logf("restarted the webhook")
	broken, err := os.ReadFile(filepath.Join("testdata", "broken-policy.yaml"))
	if err != nil {
		s.t.Fatal(err)
	}
	withBroken := strings.Replace(s.overlay, "  - ../example\n", "  - ../example\n  - broken-policy.yaml\n", 1)
	s.commit("policy: broken Rego", map[string]string{"clusters/e2e/kustomization.yaml": withBroken, "clusters/e2e/broken-policy.yaml": string(broken)})
	s.wait(3*time.Minute, "Flux to report the broken policy", func() error {
		ready, msg, _, err := s.c.KustomizationStatus(s.ctx, "tessera")
		if err != nil {
			return err
		}
		if ready != "False" || !strings.Contains(msg, "broken") {
			return fmt.Errorf("ready=%s: %s", ready, msg)
		}
		s.tl.Logf("Flux: Kustomization failed: %.200s", msg)
		return nil
	})
	if err := s.c.Client.Get(s.ctx, client.ObjectKey{Name: "broken"}, &tesserav1.AdmissionPolicy{}); !apierrors.IsNotFound(err) {
		s.t.Fatalf("the broken AdmissionPolicy reached the cluster: %v", err)
	}
	// The old policy still denies 9 GPUs outside train-prod; new work is still defaulted.
	err = s.c.Client.Create(s.ctx, Job("research", "too-big", 1, 9, 0, 0))
	if err == nil || !strings.Contains(err.Error(), "at most 8 GPUs") {
		s.t.Fatalf("a 9-GPU Job in research: got %v, want the max-gpus-per-pod denial", err)
	}
	msg := err.Error()
	s.tl.Logf("max-gpus-per-pod still denies: ...%s", msg[strings.Index(msg, "a pod may ask"):])
	after := Job("research", "after-broken", 1, 0, 12*1024, 0)
	s.create(after)
	s.wait(time.Minute, "the later Job's pod defaulted", func() error {
		pods, err := JobPods(s.ctx, s.c.Client, after)
		if err != nil || len(pods) == 0 {
			return fmt.Errorf("no pod yet (%v)", err)
		}
		if pods[0].Spec.SchedulerName != tesserav1.SchedulerName {
			return fmt.Errorf("schedulerName %q", pods[0].Spec.SchedulerName)
		}
		return nil
	})
	s.tl.Logf("a Job submitted afterwards is still defaulted (schedulerName tessera)")
}

func (s *scenario) create(o client.Object) {
	s.t.Helper()
	if err := s.c.Client.Create(s.ctx, o); err != nil {
		s.t.Fatalf("create %s/%s: %v", o.GetNamespace(), o.GetName(), err)
	}
}

func (s *scenario) allocated() float64 {
	smp, err := sample(s.ctx, s.c.Client)
	if err != nil {
		s.t.Fatal(err)
	}
	return smp.AllocatedGPU
}

// stopOnCleanup stops the cluster, if it started, when the test ends: with its state and
// its components' logs when the test failed, removing its directory when it passed.
func stopOnCleanup(t *testing.T, c *Cluster) {
	if c == nil {
		return
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster state:\n%s\ncomponent logs (all of them in %s):\n%s", c.Describe(context.Background()), c.logDir, c.Logs(40))
		}
		c.Stop()
		if !t.Failed() {
			_ = os.RemoveAll(c.Dir)
		}
	})
}
