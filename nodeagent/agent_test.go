package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia/nvidiatest"
	"github.com/tessera-gpu/tessera/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, func(e *testenv.Env) { env = e })
}

type harness struct {
	ctx   context.Context
	node  string
	gpus  *nvidiatest.Node
	reg   *prometheus.Registry
	agent *Agent
}

// start runs an agent for node against the real API server and a simulated GPU node.
func start(t *testing.T, node string, gpus *nvidiatest.Node, procRoot string) *harness {
	t.Helper()
	if env == nil {
		testenv.SkipOrFail(t, fmt.Errorf("no API server"))
	}
	return startAs(t, env.Config, node, gpus, procRoot)
}

// startAs runs the agent with the credentials of cfg.
func startAs(t *testing.T, cfg *rest.Config, node string, gpus *nvidiatest.Node, procRoot string) *harness {
	t.Helper()
	return startConfig(t, cfg, Config{NodeName: node, SharesPerGPU: 2, SampleInterval: 50 * time.Millisecond, IdleUtilizationPercent: 5,
		ProcRoot: procRoot, RetryMin: 200 * time.Millisecond, RetryMax: 400 * time.Millisecond}, gpus)
}

// startConfig runs the agent configured by acfg with the credentials of cfg.
func startConfig(t *testing.T, cfg *rest.Config, acfg Config, gpus *nvidiatest.Node) *harness {
	t.Helper()
	node := acfg.NodeName
	ctx := testenv.Context(t, 60*time.Second)
	if err := env.Client.Create(ctx, apitest.MakeNode(node).Obj()); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	bc := record.NewBroadcaster()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	t.Cleanup(bc.Shutdown)
	reg := prometheus.NewPedanticRegistry()
	a, err := New(acfg,
		Deps{GPUs: gpus.Source(), Kube: kube, Dynamic: dynamic.NewForConfigOrDie(cfg), Registry: reg,
			Recorder: bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tessera-node-agent", Host: node}), Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = a.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &harness{ctx: ctx, node: node, gpus: gpus, reg: reg, agent: a}
}

// eventually polls cond until it returns "" or the deadline passes.
func eventually(t *testing.T, what string, cond func() string) {
	t.Helper()
	testenv.Eventually(t, what, 30*time.Second, cond)
}

func (h *harness) gpuNode(t *testing.T) *tesserav1.GPUNode {
	t.Helper()
	var gn tesserav1.GPUNode
	if err := env.Client.Get(h.ctx, client.ObjectKey{Name: h.node}, &gn); err != nil {
		return nil
	}
	return &gn
}

func healthy(gn *tesserav1.GPUNode) *metav1.Condition {
	if gn == nil {
		return nil
	}
	return meta.FindStatusCondition(gn.Status.Conditions, tesserav1.ConditionHealthy)
}

func TestNVMLMissingThenRecovers(t *testing.T) {
	gpus := nvidiatest.DGXH100()
	gpus.FailInit(nvml.ERROR_LIBRARY_NOT_FOUND, 2)
	h := start(t, "agent-recover", gpus, t.TempDir())

	eventually(t, "Healthy=False NVMLUnavailable while the driver is missing", func() string {
		c := healthy(h.gpuNode(t))
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonNVMLUnavailable || !strings.Contains(c.Message, "libnvidia-ml.so.1") {
			return fmt.Sprintf("condition %+v", c)
		}
		return ""
	})
	eventually(t, "GPUs published once NVML answers", func() string {
		gn := h.gpuNode(t)
		c := healthy(gn)
		if c == nil || c.Status != metav1.ConditionTrue || len(gn.Status.Devices) != 8 {
			return fmt.Sprintf("condition %+v", c)
		}
		return ""
	})
	gn := h.gpuNode(t)
	if gn.Status.DriverVersion != "550.54.15" || gn.Status.CUDAVersion != "12.4" || len(gn.Status.Links) != 28 || gn.Status.SharesPerGPU != 2 {
		t.Fatalf("status = %+v", gn.Status)
	}
	for _, d := range gn.Status.Devices {
		if d.UUID != gpus.UUID(int(d.Index)) || d.Island != 0 || !d.Healthy || d.MemoryMiB != 80*1024 {
			t.Fatalf("device %+v", d)
		}
	}
	if gn.Status.Links[0].NVLinks != 18 {
		t.Fatalf("link %+v, want 18 NVLinks", gn.Status.Links[0])
	}
	if len(gn.OwnerReferences) != 1 || gn.OwnerReferences[0].Name != h.node {
		t.Fatalf("owner references %+v", gn.OwnerReferences)
	}
	var node corev1.Node
	eventually(t, "node labels and gpu-memory", func() string {
		if err := env.Client.Get(h.ctx, client.ObjectKey{Name: h.node}, &node); err != nil {
			return err.Error()
		}
		mem := node.Status.Allocatable[tesserav1.ResourceGPUMemory]
		if node.Labels[tesserav1.LabelGPUCount] != "8" || node.Labels[tesserav1.LabelGPUModel] != "NVIDIA-H100-80GB-HBM3" || mem.Value() != 8*80*1024 {
			return fmt.Sprintf("labels %v allocatable %v", node.Labels, node.Status.Allocatable)
		}
		return ""
	})
	if got := testutil.ToFloat64(h.agent.metrics.NVMLUpGauge()); got != 1 {
		t.Fatalf("tessera_node_agent_nvml_up = %v, want 1", got)
	}

	// GPU 3 falls off the bus and GPU 5 reports Xid 79.
	gpus.Lose(3)
	gpus.Xid(5, 79)
	eventually(t, "lost and Xid GPUs unhealthy", func() string {
		gn := h.gpuNode(t)
		if gn == nil {
			return "no GPUNode"
		}
		d3, d5 := gn.Status.Devices[3], gn.Status.Devices[5]
		c := healthy(gn)
		if d3.Healthy || d3.UnhealthyReason != nvidia.LostReason || d5.Healthy || !strings.Contains(d5.UnhealthyReason, "Xid 79") ||
			c.Status != metav1.ConditionFalse || c.Reason != ReasonGPUUnhealthy {
			return fmt.Sprintf("devices 3 %+v 5 %+v condition %+v", d3, d5, c)
		}
		return ""
	})
	eventually(t, "allocatable gpu-memory without the two GPUs", func() string {
		if err := env.Client.Get(h.ctx, client.ObjectKey{Name: h.node}, &node); err != nil {
			return err.Error()
		}
		if mem := node.Status.Allocatable[tesserav1.ResourceGPUMemory]; mem.Value() != 6*80*1024 {
			return fmt.Sprintf("allocatable %s", mem.String())
		}
		return ""
	})
}

func TestSliceUsageMetricsEventAndLastActive(t *testing.T) {
	gpus := nvidiatest.DGXA100()
	procRoot := t.TempDir()
	h := start(t, "agent-slices", gpus, procRoot)
	ns := apitest.MakeNamespace("team-slices").Obj()
	if err := env.Client.Create(h.ctx, ns); err != nil {
		t.Fatal(err)
	}
	assign := tesserav1.GPUAssignment{Node: h.node, Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{gpus.UUID(1)}, MemoryMiB: 10240}}}
	pod := apitest.MakePod("train-0", ns.Name).NodeName(h.node).Assignment(assign).Obj()
	if err := env.Client.Create(h.ctx, pod); err != nil {
		t.Fatal(err)
	}
	// The pod's process 4242 holds 12000 MiB on GPU 1; process 1 is a host process.
	writeCgroup(t, procRoot, 4242, "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"+
		strings.ReplaceAll(string(pod.UID), "-", "_")+".slice/cri-containerd-"+strings.Repeat("ab", 32)+".scope\n")
	writeCgroup(t, procRoot, 1, "0::/init.scope\n")
	gpus.SetUsage(1, nvidiatest.Usage{UtilizationPercent: 80, MemoryUsedMiB: 12500, Processes: map[uint32]uint64{4242: 12000, 1: 500}})

	eventually(t, "slice metrics", func() string {
		limit := testutil.ToFloat64(h.agent.metrics.SliceLimit(ns.Name, pod.Name))
		used := testutil.ToFloat64(h.agent.metrics.SliceUsed(ns.Name, pod.Name))
		if limit != 10240<<20 || used != 12000<<20 {
			return fmt.Sprintf("limit %v used %v", limit, used)
		}
		return ""
	})
	eventually(t, "GPUMemorySliceExceeded event on the pod", func() string {
		var events corev1.EventList
		if err := env.Client.List(h.ctx, &events, client.InNamespace(ns.Name)); err != nil {
			return err.Error()
		}
		for _, e := range events.Items {
			if e.Reason == ReasonSliceExceeded && e.InvolvedObject.UID == pod.UID && e.Type == corev1.EventTypeWarning &&
				strings.Contains(e.Message, "12000 MiB") && strings.Contains(e.Message, "10240 MiB") {
				return ""
			}
		}
		return fmt.Sprintf("%d events, none %s", len(events.Items), ReasonSliceExceeded)
	})
	var first *metav1.Time
	eventually(t, "lastActiveTime and sampled utilisation", func() string {
		gn := h.gpuNode(t)
		if gn == nil || gn.Status.LastActiveTime == nil || gn.Status.Devices[1].UtilizationPercent != 80 || gn.Status.Devices[1].MemoryUsedMiB != 12500 {
			return "not yet"
		}
		first = gn.Status.LastActiveTime
		return ""
	})
	// Idle: lastActiveTime stops moving.
	gpus.SetUsage(1, nvidiatest.Usage{})
	time.Sleep(1100 * time.Millisecond)
	var idleSince *metav1.Time
	eventually(t, "utilisation back to 0", func() string {
		gn := h.gpuNode(t)
		if gn.Status.Devices[1].UtilizationPercent != 0 {
			return "still busy"
		}
		idleSince = gn.Status.LastActiveTime
		return ""
	})
	time.Sleep(1100 * time.Millisecond)
	gn := h.gpuNode(t)
	if !gn.Status.LastActiveTime.Equal(idleSince) || idleSince.Before(first) {
		t.Fatalf("lastActiveTime moved while idle: %v -> %v", idleSince, gn.Status.LastActiveTime)
	}
}

func writeCgroup(t *testing.T, root string, pid int, content string) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
