package dra

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/nodeagent/cdi"
	"github.com/tessera-gpu/tessera/nodeagent/dra/dratest"
	"github.com/tessera-gpu/tessera/nodeagent/mps"
	"github.com/tessera-gpu/tessera/nodeagent/nvidia/nvidiatest"
	"github.com/tessera-gpu/tessera/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, func(e *testenv.Env) { env = e })
}

// kubelet plays the kubelet's part towards the driver.
type kubelet struct {
	*dratest.Kubelet
	driver *Driver
	kube   kubernetes.Interface
	node   string
	gpus   []GPU
	mps    *dratest.MPSControl
}

// startDriver runs the driver for node on gpus against the real API server, with MPS
// on and its control daemon running, and connects to it as the kubelet does.
func startDriver(t *testing.T, node string, gpus *nvidiatest.Node) *kubelet {
	t.Helper()
	if env == nil {
		testenv.SkipOrFail(t, fmt.Errorf("no API server"))
	}
	ctx := testenv.Context(t, 60*time.Second)
	if err := env.Client.Create(ctx, apitest.MakeNode(node).Obj()); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(env.Config)
	bc := record.NewBroadcaster()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	t.Cleanup(bc.Shutdown)

	root := dratest.SocketDir(t)
	pipe, registry := filepath.Join(root, "mps"), filepath.Join(root, "registry")
	for _, dir := range []string{pipe, registry} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	control := dratest.StartMPSControl(t, root)

	src := gpus.Source()
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	inv, err := src.Inventory()
	if err != nil {
		t.Fatal(err)
	}
	var list []GPU
	for _, d := range inv.Devices {
		list = append(list, GPU{Device: d})
	}
	d, err := New(Options{NodeName: node, Kube: kube, MPS: &mps.ControlDaemon{Command: control.Command, PipeDirectory: pipe}, CDIDir: filepath.Join(root, "cdi"),
		PluginsDir: filepath.Join(root, "plugins"), RegistryDir: registry, Log: testr.New(t),
		Recorder: bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tessera-node-agent", Host: node})})
	if err != nil {
		t.Fatal(err)
	}
	d.SetGPUs(list, "")
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		if err := d.Run(runCtx); err != nil {
			t.Errorf("driver: %v", err)
		}
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &kubelet{Kubelet: dratest.Connect(t, ctx, registry), driver: d, kube: kube, node: node, gpus: list, mps: control}
}

// claim creates a claim for one GPU and writes its allocation as a scheduler would:
// device gpu-<index> of the node's pool, consuming share of its memory when set, with
// the opaque configurations configs.
func (k *kubelet) claim(t *testing.T, name string, index int, share string, configs ...resourceapi.DeviceAllocationConfiguration) *resourceapi.ResourceClaim {
	t.Helper()
	ctx := context.Background()
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: DriverName}}}}}}
	c, err := k.kube.ResourceV1().ResourceClaims("default").Create(ctx, c, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	result := resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: DriverName, Pool: k.node, Device: DeviceName(index)}
	if share != "" {
		shareID := types.UID(uuid.NewUUID())
		result.ShareID = &shareID
		result.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{CapacityMemory: resource.MustParse(share)}
	}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{result}, Config: configs}}
	c, err = k.kube.ResourceV1().ResourceClaims("default").UpdateStatus(ctx, c, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// claimSpec is what the claim's CDI device gives a container: its environment and
// mounts.
func (k *kubelet) claimSpec(t *testing.T, c *resourceapi.ResourceClaim) (env []string, mounts []string) {
	t.Helper()
	d := dratest.ReadClaimDevice(t, k.driver.cdi.Dir, c)
	if want := claimDeviceName(c, c.Status.Allocation.Devices.Results[0]); d.Name != want {
		t.Fatalf("CDI device %s, want %s", d.Name, want)
	}
	return d.Env, d.Mounts
}

func TestDRAPrepareWholeGPUAndShare(t *testing.T) {
	gpus := nvidiatest.DGXA100()
	gpus.SetComputeMode(1, nvml.COMPUTEMODE_EXCLUSIVE_PROCESS)
	k := startDriver(t, "dra-prepare", gpus)
	pipe := k.driver.opts.MPS.PipeDir()

	whole := k.claim(t, "whole", 0, "")
	share := k.claim(t, "share", 1, "10Gi")
	for range 2 { // the kubelet retries: preparing again answers the same
		r := k.Prepare(t, whole)
		if r.Error != "" || len(r.Devices) != 1 {
			t.Fatalf("whole GPU: %v", r)
		}
		d := r.Devices[0]
		want := []string{"nvidia.com/gpu=" + gpus.UUID(0), cdi.QualifiedName(string(whole.UID) + "-gpu-gpu-0")}
		if d.PoolName != k.node || d.DeviceName != "gpu-0" || !slices.Equal(d.RequestNames, []string{"gpu"}) || !slices.Equal(d.CdiDeviceIds, want) {
			t.Fatalf("whole GPU device %v, want CDI devices %v", d, want)
		}
		env, mounts := k.claimSpec(t, whole)
		if !slices.Equal(env, []string{"TESSERA_GPU_MEMORY_LIMIT_MIB=40960"}) || len(mounts) != 0 {
			t.Fatalf("whole GPU: env %v, mounts %v", env, mounts)
		}

		r = k.Prepare(t, share)
		if r.Error != "" || len(r.Devices) != 1 {
			t.Fatalf("share: %v", r)
		}
		want = []string{"nvidia.com/gpu=" + gpus.UUID(1), cdi.QualifiedName(string(share.UID) + "-gpu-gpu-1")}
		if d := r.Devices[0]; d.DeviceName != "gpu-1" || !slices.Equal(d.CdiDeviceIds, want) || d.ShareId == nil || *d.ShareId != string(*share.Status.Allocation.Devices.Results[0].ShareID) {
			t.Fatalf("share device %v, want CDI devices %v and the allocation's share ID", d, want)
		}
		env, mounts = k.claimSpec(t, share)
		wantEnv := []string{"TESSERA_GPU_MEMORY_LIMIT_MIB=10240", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=" + gpus.UUID(1) + "=10240M", "CUDA_MPS_PIPE_DIRECTORY=" + pipe}
		if !slices.Equal(env, wantEnv) || !slices.Equal(mounts, []string{pipe + ":" + pipe}) {
			t.Fatalf("share: env %v, mounts %v; want env %v and the MPS pipe directory mounted", env, mounts, wantEnv)
		}
	}

	for _, c := range []*resourceapi.ResourceClaim{whole, share} {
		for range 2 { // unprepare is idempotent too
			k.Unprepare(t, c)
		}
		dratest.SpecRemoved(t, k.driver.cdi.Dir, c)
	}
}

func TestDRAShareRefusedWithoutMPS(t *testing.T) {
	gpus := nvidiatest.DGXA100()
	gpus.SetComputeMode(3, nvml.COMPUTEMODE_EXCLUSIVE_PROCESS)
	k := startDriver(t, "dra-refuse", gpus)

	// GPU 2 is in DEFAULT compute mode: a share there is not enforced.
	c := k.claim(t, "share-default-mode", 2, "8Gi")
	r := k.Prepare(t, c)
	for _, want := range []string{"default/share-default-mode", "GPU gpu-2 (" + gpus.UUID(2), "compute mode Default",
		"-c EXCLUSIVE_PROCESS", "nvidia-cuda-mps-control -d", "GPU Operator's MPS sharing"} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("error %q lacks %q", r.Error, want)
		}
	}
	if len(r.Devices) != 0 {
		t.Errorf("refused claim got devices %v", r.Devices)
	}
	if _, err := os.Stat(k.driver.cdi.Path(string(c.UID))); !os.IsNotExist(err) {
		t.Errorf("refused claim has a CDI spec (%v)", err)
	}
	waitForEvent(t, k.kube, c, "compute mode Default")

	// GPU 3 is in EXCLUSIVE_PROCESS mode, but the MPS control daemon stops.
	k.mps.Stop(t)
	c = k.claim(t, "share-no-daemon", 3, "8Gi")
	if r := k.Prepare(t, c); !strings.Contains(r.Error, "the MPS control daemon is not running") || !strings.Contains(r.Error, "nvidia-cuda-mps-control -d") {
		t.Errorf("error %q: want the MPS control daemon named, and how to start it", r.Error)
	}

	// A whole GPU in DEFAULT mode needs no MPS.
	if r := k.Prepare(t, k.claim(t, "whole-default-mode", 2, "")); r.Error != "" {
		t.Errorf("whole GPU refused: %s", r.Error)
	}
}

// waitForEvent waits for the Warning event on claim whose message holds want.
func waitForEvent(t *testing.T, kube kubernetes.Interface, c *resourceapi.ResourceClaim, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last []string
	for time.Now().Before(deadline) {
		events, err := kube.CoreV1().Events(c.Namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		last = last[:0]
		for _, e := range events.Items {
			if e.InvolvedObject.UID == c.UID {
				if e.Type == corev1.EventTypeWarning && e.Reason == ReasonPrepareFailed && strings.Contains(e.Message, want) {
					return
				}
				last = append(last, e.Reason+": "+e.Message)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no %s event on claim %s mentioning %q; events: %v", ReasonPrepareFailed, c.Name, want, last)
}

// shareConfig is the claim's GPUShareConfig with memoryLimit limit, for all requests.
func shareConfig(limit string) resourceapi.DeviceAllocationConfiguration {
	raw := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"memoryLimit":%q}`, tesserav1.GPUShareConfigAPIVersion, tesserav1.GPUShareConfigKind, limit)
	return resourceapi.DeviceAllocationConfiguration{Source: resourceapi.AllocationConfigSourceClaim,
		DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: DriverName, Parameters: runtime.RawExtension{Raw: []byte(raw)}}}}
}

// A share whose claim sets a GPUShareConfig memoryLimit gets the limit as its MPS
// pinned-memory limit; a limit below the share or above the GPU is refused.
func TestDRAShareLimit(t *testing.T) {
	gpus := nvidiatest.DGXA100()
	for i := range 3 {
		gpus.SetComputeMode(i, nvml.COMPUTEMODE_EXCLUSIVE_PROCESS)
	}
	k := startDriver(t, "dra-limit", gpus)
	burst := k.claim(t, "burst", 0, "10Gi", shareConfig("24Gi"))
	if r := k.Prepare(t, burst); r.Error != "" {
		t.Fatal(r.Error)
	}
	env, _ := k.claimSpec(t, burst)
	if !slices.Contains(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="+gpus.UUID(0)+"=24576M") || !slices.Contains(env, "TESSERA_GPU_MEMORY_LIMIT_MIB=24576") {
		t.Fatalf("env %v, want the limit of 24576 MiB", env)
	}
	for name, tc := range map[string]struct {
		index        int
		limit, error string
	}{
		"below":   {1, "4Gi", "memoryLimit of 4096 MiB is below its share of 10240 MiB"},
		"too-big": {2, "1Ti", "is larger than GPU " + gpus.UUID(2)},
		"not-qty": {2, "lots", `memoryLimit is "lots", not a quantity`},
	} {
		c := k.claim(t, name, tc.index, "10Gi", shareConfig(tc.limit))
		if r := k.Prepare(t, c); !strings.Contains(r.Error, tc.error) {
			t.Errorf("%s: error %q, want %q", name, r.Error, tc.error)
		}
	}
}
