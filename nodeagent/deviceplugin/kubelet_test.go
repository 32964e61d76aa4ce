package deviceplugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	pb "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// These tests play the kubelet's part over the plugin's real sockets: registration,
// ListAndWatch, GetPreferredAllocation, then Allocate, whose answer they record in the
// kubelet's checkpoint (the pod resources API) as the kubelet does.

// admit is the kubelet admitting the container of pod that asks for n devices of the
// plugin's resource: it lists the devices, asks for a preferred allocation among the
// healthy ones, allocates the preferred ones and records them.
func admit(t *testing.T, s setup, pod *corev1.Pod, n int) (*pb.ContainerAllocateResponse, error) {
	t.Helper()
	return admitContainer(t, s, pod, "main", n)
}

// admitContainer is admit for one container of pod.
func admitContainer(t *testing.T, s setup, pod *corev1.Pod, container string, n int) (*pb.ContainerAllocateResponse, error) {
	t.Helper()
	return admitBetween(t, s, pod, container, n, func() {})
}

// admitBetween is admitContainer, running between after the kubelet got its preferred
// allocation and before it allocates.
func admitBetween(t *testing.T, s setup, pod *corev1.Pod, container string, n int, between func()) (*pb.ContainerAllocateResponse, error) {
	t.Helper()
	s.kubelet.receive(pod)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := s.client.ListAndWatch(ctx, &pb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	devs, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var avail []string
	for _, d := range devs.Devices {
		if d.Health == pb.Healthy {
			avail = append(avail, d.ID)
		}
	}
	pref, err := s.client.GetPreferredAllocation(ctx, &pb.PreferredAllocationRequest{ContainerRequests: []*pb.ContainerPreferredAllocationRequest{
		{AvailableDeviceIDs: avail, AllocationSize: int32(n)}}})
	if err != nil {
		t.Fatal(err)
	}
	ids := pref.ContainerResponses[0].DeviceIDs
	between()
	resp, err := s.client.Allocate(ctx, &pb.AllocateRequest{ContainerRequests: []*pb.ContainerAllocateRequest{{DevicesIds: ids}}})
	if err != nil {
		return nil, err
	}
	s.kubelet.record(s.plugin.opts.ResourceName, pod, container, ids)
	return resp.ContainerResponses[0], nil
}

// withEnv gives the pod's container its own NVIDIA_VISIBLE_DEVICES, as many CUDA images
// and some tenants do.
func withEnv(pod *corev1.Pod, value string) *corev1.Pod {
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: EnvVisibleDevices, Value: value})
	return pod
}

// mergedEnv is the container's environment as the kubelet builds it: the device
// plugin's, then the pod's own, which wins.
func mergedEnv(r *pb.ContainerAllocateResponse, pod *corev1.Pod) map[string]string {
	env := map[string]string{}
	for k, v := range r.Envs {
		env[k] = v
	}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	return env
}

// injected is the GPUs a CDI-capable runtime with the NVIDIA container toolkit locked
// down (accept-nvidia-visible-devices-envvar-when-unprivileged = false, device lists
// as volume mounts accepted) gives an unprivileged container: the CDI devices of the
// CRI request and of cdi.k8s.io/ annotations, and the GPUs of device-list mounts. The
// environment is not read: what the pod sets there changes nothing.
func injected(r *pb.ContainerAllocateResponse) []string {
	var out []string
	add := func(name string) {
		if uuid, ok := strings.CutPrefix(name, DefaultCDIKind+"="); ok && !slices.Contains(out, uuid) {
			out = append(out, uuid)
		}
	}
	for _, d := range r.CdiDevices {
		add(d.Name)
	}
	for k, v := range r.Annotations {
		if strings.HasPrefix(k, cdiAnnotationPrefix) {
			for _, name := range strings.Split(v, ",") {
				add(name)
			}
		}
	}
	for _, m := range r.Mounts {
		if dir, uuid := filepath.Split(m.ContainerPath); filepath.Clean(dir) == VolumeMountsRoot && m.HostPath == "/dev/null" {
			add(DefaultCDIKind + "=" + uuid)
		}
	}
	return out
}

// A container gets the GPUs of its assignment as devices, whichever strategy, and the
// NVIDIA_VISIBLE_DEVICES=all of its pod gives it no other GPU; with the envvar strategy
// alone, the pod's value is what the container's environment ends up with.
func TestKubeletDeliversGPUsAsDevices(t *testing.T) {
	whole := tesserav1.GPUAssignment{Node: node, Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{gpus[1].UUID}}}}
	for _, tc := range []struct {
		strategies []string
		check      func(t *testing.T, r *pb.ContainerAllocateResponse)
	}{
		{[]string{StrategyCDICRI}, func(t *testing.T, r *pb.ContainerAllocateResponse) {
			if got := cdiNames(r); !slices.Equal(got, []string{"nvidia.com/gpu=" + gpus[1].UUID}) || len(r.Mounts) > 0 || len(r.Annotations) > 0 {
				t.Errorf("response %v, want the GPU's CDI device alone", r)
			}
			if r.Envs[EnvVisibleDevices] != VoidDevices {
				t.Errorf("%s = %q, want %q", EnvVisibleDevices, r.Envs[EnvVisibleDevices], VoidDevices)
			}
		}},
		{[]string{StrategyCDIAnnotations}, func(t *testing.T, r *pb.ContainerAllocateResponse) {
			want := map[string]string{"cdi.k8s.io/tessera-gpu_uid-p": "nvidia.com/gpu=" + gpus[1].UUID}
			if len(r.Annotations) != 1 || r.Annotations["cdi.k8s.io/tessera-gpu_uid-p"] != want["cdi.k8s.io/tessera-gpu_uid-p"] || len(r.CdiDevices) > 0 {
				t.Errorf("annotations %v, want %v", r.Annotations, want)
			}
		}},
		{[]string{StrategyVolumeMounts}, func(t *testing.T, r *pb.ContainerAllocateResponse) {
			if len(r.Mounts) != 1 || r.Mounts[0].HostPath != "/dev/null" || r.Mounts[0].ContainerPath != VolumeMountsRoot+"/"+gpus[1].UUID {
				t.Errorf("mounts %v, want /dev/null at %s/%s", r.Mounts, VolumeMountsRoot, gpus[1].UUID)
			}
			if r.Envs[EnvVisibleDevices] != VolumeMountsRoot {
				t.Errorf("%s = %q, want %q", EnvVisibleDevices, r.Envs[EnvVisibleDevices], VolumeMountsRoot)
			}
		}},
	} {
		t.Run(strings.Join(tc.strategies, ","), func(t *testing.T) {
			pod := withEnv(makePod("p", 0, 1).Assignment(whole).Obj(), "all")
			s := startWith(t, Options{SharesPerGPU: 1, Strategies: tc.strategies}, pod)
			r, err := admit(t, s, pod, 1)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, r)
			if got := injected(r); !slices.Equal(got, []string{gpus[1].UUID}) {
				t.Errorf("the runtime injects %v, want the assigned GPU alone", got)
			}
			if r.Envs[EnvMemoryLimitMiB] != "81920" {
				t.Errorf("memory limit %q, want 81920", r.Envs[EnvMemoryLimitMiB])
			}
		})
	}
	t.Run("envvar", func(t *testing.T) {
		pod := withEnv(makePod("p", 0, 1).Assignment(whole).Obj(), "all")
		s := startWith(t, Options{SharesPerGPU: 1, Strategies: []string{StrategyEnvvar}}, pod)
		r, err := admit(t, s, pod, 1)
		if err != nil {
			t.Fatal(err)
		}
		if r.Envs[EnvVisibleDevices] != gpus[1].UUID || len(injected(r)) > 0 {
			t.Fatalf("response %v", r)
		}
		// Why the envvar strategy alone is not delivery: the pod's value wins.
		if got := mergedEnv(r, pod)[EnvVisibleDevices]; got != "all" {
			t.Fatalf("merged %s = %q, want the pod's all", EnvVisibleDevices, got)
		}
		if !EnvOnly(s.plugin.opts.Strategies) || EnvOnly([]string{StrategyEnvvar, StrategyCDICRI}) {
			t.Fatal("EnvOnly")
		}
	})
}

// A slice pod asks tessera.dev/gpu-memory and one tessera.dev/gpu-slice: the kubelet
// allocates the slice resource, and the container gets its one GPU as a device and its
// limit, held by the MPS control daemon as well. A slice-resource request whose
// assignment is whole GPUs is refused.
func TestKubeletAllocatesSlice(t *testing.T) {
	slicePod := func(name string, created int, a tesserav1.GPUAssignment) *corev1.Pod {
		return withEnv(makePod(name, created, 0).Limit(tesserav1.ResourceGPUSlice, "1").Limit(tesserav1.ResourceGPUMemory, "20480").Assignment(a).Obj(),
			"all")
	}
	small := slicePod("small", 0, slice(gpus[0].UUID, 8192))
	big := slicePod("big", 10, slice(gpus[0].UUID, 20480))
	whole := slicePod("whole", 20, tesserav1.GPUAssignment{Node: node, Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{gpus[1].UUID}}}})
	mps := &fakeMPS{}
	var r refusals
	s := startWith(t, Options{ResourceName: tesserav1.ResourceGPUSlice, Slices: true, SharesPerGPU: 8, MPS: mps, OnRefusal: r.add}, small, big, whole)
	if s.reg.ResourceName != string(tesserav1.ResourceGPUSlice) {
		t.Fatalf("registered %s", s.reg.ResourceName)
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{{small, "8192"}, {big, "20480"}} {
		resp, err := admit(t, s, tc.pod, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := injected(resp); !slices.Equal(got, []string{gpus[0].UUID}) {
			t.Fatalf("%s: the runtime injects %v, want %s", tc.pod.Name, got, gpus[0].UUID)
		}
		if resp.Envs[EnvMemoryLimitMiB] != tc.want || resp.Envs[EnvMPSMemoryLimit] != "0="+tc.want+"M" {
			t.Fatalf("%s: envs %v, want a limit of %s MiB", tc.pod.Name, resp.Envs, tc.want)
		}
	}
	// The MPS control daemon holds the GPU's clients to its largest slice whatever their
	// environment says.
	if got := mps.limit(gpus[0].UUID); got != 20480 {
		t.Fatalf("MPS limit of %s = %d MiB, want 20480", gpus[0].UUID, got)
	}
	if _, err := admit(t, s, whole, 1); err == nil || !strings.Contains(err.Error(), "not a slice of one GPU") {
		t.Fatalf("whole-GPU assignment through the slice resource: %v", err)
	}
	if got := r.list(); !slices.Equal(got, []string{RefusedInvalid + " whole"}) {
		t.Fatalf("reported %v", got)
	}
}

// Without the MPS control daemon's limit there is no slice: the allocation fails.
func TestKubeletSliceFailsWithoutMPSLimit(t *testing.T) {
	pod := makePod("p", 0, 0).Limit(tesserav1.ResourceGPUSlice, "1").Assignment(slice(gpus[0].UUID, 4096)).Obj()
	s := startWith(t, Options{ResourceName: tesserav1.ResourceGPUSlice, Slices: true, SharesPerGPU: 8, MPS: &fakeMPS{err: errors.New("control daemon not running")}}, pod)
	if _, err := admit(t, s, pod, 1); err == nil || !strings.Contains(err.Error(), "control daemon not running") {
		t.Fatalf("Allocate error = %v", err)
	}
}

// After a restart of the plugin, a pod the kubelet allocated before it but that has not
// started yet (its image still pulling: Pending, no container status written) is not
// taken for the younger pod the kubelet admits next: the younger pod gets its own GPUs.
func TestRestartedPluginKeepsPendingPodsApart(t *testing.T) {
	older := makePod("older", 0, 1).Assignment(slice(gpus[0].UUID, 1000)).Obj()
	younger := makePod("younger", 10, 1).Assignment(slice(gpus[1].UUID, 2000)).Obj()
	s := startWith(t, Options{SharesPerGPU: 4}, older, younger)
	r, err := admit(t, s, older, 1)
	if err != nil || !slices.Equal(injected(r), []string{gpus[0].UUID}) {
		t.Fatalf("older pod got %v, %v", r, err)
	}
	s.stop()
	restarted := serve(t, s.kubelet, s.plugin.opts)
	r, err = admit(t, restarted, younger, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := injected(r); !slices.Equal(got, []string{gpus[1].UUID}) || r.Envs[EnvMemoryLimitMiB] != "2000" {
		t.Fatalf("younger pod got %v (limit %s), want its own %s", got, r.Envs[EnvMemoryLimitMiB], gpus[1].UUID)
	}
}

// A pod whose two containers each ask for a GPU gets both, each its own, the second
// after the kubelet recorded the first: the ledger naming the first container does not
// make the second look allocated. After a restart, the next pod gets its own GPUs.
func TestKubeletAllocatesEveryContainerOfAPod(t *testing.T) {
	two := makePod("two", 0, 1).Assignment(tesserav1.GPUAssignment{Node: node, Containers: []tesserav1.ContainerGPUs{
		{Container: "main", UUIDs: []string{gpus[0].UUID}}, {Container: "second", UUIDs: []string{gpus[1].UUID}}}}).Obj()
	two.Spec.Containers = append(two.Spec.Containers, *two.Spec.Containers[0].DeepCopy())
	two.Spec.Containers[1].Name = "second"
	younger := makePod("younger", 10, 1).Assignment(slice(gpus[0].UUID, 2000)).Obj()
	s := startWith(t, Options{SharesPerGPU: 4}, two, younger)
	for i, c := range []string{"main", "second"} {
		r, err := admitContainer(t, s, two, c, 1)
		if err != nil || !slices.Equal(injected(r), []string{gpus[i].UUID}) {
			t.Fatalf("container %s got %v, %v; want %s", c, r, err, gpus[i].UUID)
		}
	}
	s.stop()
	restarted := serve(t, s.kubelet, s.plugin.opts)
	r, err := admit(t, restarted, younger, 1)
	if err != nil || r.Envs[EnvMemoryLimitMiB] != "2000" {
		t.Fatalf("younger pod got %v, %v", r, err)
	}
}

// The pod's status says the kubelet admitted it (and so allocated all its containers)
// once it carries container statuses: that is enough too, without the ledger.
func TestRestartedPluginSkipsAdmittedPods(t *testing.T) {
	older := makePod("older", 0, 1).Assignment(slice(gpus[0].UUID, 1000)).Obj()
	older.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
	younger := makePod("younger", 10, 1).Assignment(slice(gpus[1].UUID, 2000)).Obj()
	s := startWithoutLedger(t, Options{SharesPerGPU: 4}, older, younger)
	r, err := admit(t, s, younger, 1)
	if err != nil || !slices.Equal(injected(r), []string{gpus[1].UUID}) {
		t.Fatalf("younger pod got %v, %v", r, err)
	}
}

// Without the kubelet's ledger, Allocate refuses rather than guess.
func TestAllocateRefusesWithoutLedger(t *testing.T) {
	pod := makePod("p", 0, 1).Assignment(slice(gpus[0].UUID, 1000)).Obj()
	s := startWith(t, Options{SharesPerGPU: 4, Ledger: KubeletLedger{Socket: filepath.Join(os.TempDir(), "tessera-missing.sock")}}, pod)
	if _, err := allocate(t, s, pod, gpus[0].UUID+"::0"); err == nil || !strings.Contains(err.Error(), "cannot tell which pods are already allocated") {
		t.Fatalf("Allocate error = %v", err)
	}
}

func TestParseStrategies(t *testing.T) {
	got, err := ParseStrategies(" cdi-cri, volume-mounts,cdi-cri")
	if err != nil || !slices.Equal(got, []string{StrategyCDICRI, StrategyVolumeMounts}) {
		t.Fatalf("ParseStrategies = %v, %v", got, err)
	}
	for _, bad := range []string{"", " , ", "cdi"} {
		if _, err := ParseStrategies(bad); err == nil {
			t.Errorf("ParseStrategies(%q) succeeded", bad)
		}
	}
}
