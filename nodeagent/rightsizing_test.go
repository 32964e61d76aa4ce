package nodeagent

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia/nvidiatest"
	"github.com/tessera-gpu/tessera/rightsize/recommender"
)

// TestRightSizingHistory runs the agent on a simulated DGX H100 and the recommender
// against the same API server: three runs of a Job, each using GPU memory on its GPU,
// end; their peaks travel through the GPUNode into the Job's GPUProfile, which
// recommends a slice after the third.
func TestRightSizingHistory(t *testing.T) {
	gpus, procRoot := nvidiatest.DGXH100(), t.TempDir()
	h := start(t, "agent-history", gpus, procRoot)
	ns := apitest.MakeNamespace("team-history").Obj()
	if err := env.Client.Create(h.ctx, ns); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recommender.Setup(mgr, recommender.Options{Log: testr.New(t)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan struct{})
	go func() { _ = mgr.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	for i, peakMiB := range []uint64{30000, 31000, 32000} {
		assign := tesserav1.GPUAssignment{Node: h.node, Containers: []tesserav1.ContainerGPUs{{Container: apitest.Container, UUIDs: []string{gpus.UUID(i)}}}}
		pod := apitest.MakePod(fmt.Sprintf("train-%d", i), ns.Name).NodeName(h.node).Assignment(assign).ControlledBy("Job", "train").Obj()
		if err := env.Client.Create(h.ctx, pod); err != nil {
			t.Fatal(err)
		}
		pid := uint32(1000 + i)
		writeCgroup(t, procRoot, int(pid), "0::/kubepods.slice/kubepods-pod"+strings.ReplaceAll(string(pod.UID), "-", "_")+
			".slice/cri-containerd-"+strings.Repeat("ef", 32)+".scope\n")
		// The run grows to its peak, then ends.
		gpus.SetUsage(i, nvidiatest.Usage{UtilizationPercent: 90, MemoryUsedMiB: 4000, Processes: map[uint32]uint64{pid: 4000}})
		eventually(t, "the running pod's entry", func() string { return h.entry(t, pod, 4000) })
		gpus.SetUsage(i, nvidiatest.Usage{UtilizationPercent: 90, MemoryUsedMiB: peakMiB, Processes: map[uint32]uint64{pid: peakMiB}})
		eventually(t, "the grown peak", func() string { return h.entry(t, pod, int64(peakMiB)) })
		pod.Status.Phase = corev1.PodSucceeded
		if err := env.Client.Status().Update(h.ctx, pod); err != nil {
			t.Fatal(err)
		}
		gpus.SetUsage(i, nvidiatest.Usage{})
		eventually(t, "the run recorded", func() string {
			var prof tesserav1.GPUProfile
			if err := env.Client.Get(h.ctx, client.ObjectKey{Namespace: ns.Name, Name: "job.train"}, &prof); err != nil {
				return err.Error()
			}
			if prof.Status.Runs != int32(i+1) || prof.Status.MaxPeakMiB != int64(peakMiB) || prof.Status.GPUMemoryMiB != 80*1024 {
				return fmt.Sprintf("status %+v", prof.Status)
			}
			if i == 2 && prof.Status.RecommendedMiB != 38*1024 {
				// p95: the bucket holding 32000 MiB ends at 32993; + 15% = 37942, rounded up.
				return fmt.Sprintf("recommendation %d MiB: %s", prof.Status.RecommendedMiB, prof.Status.Reason)
			}
			return ""
		})
	}
}

// entry is "" once the GPUNode's entry for pod carries peak.
func (h *harness) entry(t *testing.T, pod *corev1.Pod, peak int64) string {
	gn := h.gpuNode(t)
	if gn == nil {
		return "no GPUNode"
	}
	for _, p := range gn.Status.Pods {
		if p.UID == string(pod.UID) {
			if p.PeakMiB != peak || p.Workload != "Job/train" {
				return fmt.Sprintf("entry %+v", p)
			}
			return ""
		}
	}
	return fmt.Sprintf("no entry for %s among %d", pod.Name, len(gn.Status.Pods))
}
