package deviceplugin

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	pb "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/nodeagent/gpu"
)

func slicePod(name string, created int, uuid string, mib int64) *corev1.Pod {
	return gpuKinds[1].pod(name, created, uuid, mib)
}

// sliceOptions serve the slice resource, with MPS when m is set.
func sliceOptions(m *fakeMPS) Options {
	opts := Options{ResourceName: tesserav1.ResourceGPUSlice, Slices: true, SharesPerGPU: 8}
	if m != nil {
		opts.MPS = m
	}
	return opts
}

// With MPS, a container with a slice reaches the MPS control daemon: its pipe directory
// is mounted and named in CUDA_MPS_PIPE_DIRECTORY, and the slice's limit is set in the
// container and in the daemon.
func TestKubeletSliceGoesThroughMPS(t *testing.T) {
	pod := slicePod("p", 0, gpus[0].UUID, 8192)
	m := &fakeMPS{}
	s := startWith(t, sliceOptions(m), pod)
	r, err := admit(t, s, pod, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(r.Mounts, func(m *pb.Mount) bool {
		return m.HostPath == testPipeDir && m.ContainerPath == testPipeDir && !m.ReadOnly
	}) {
		t.Fatalf("mounts %v, want the MPS pipe directory %s", r.Mounts, testPipeDir)
	}
	if r.Envs[EnvMPSPipeDir] != testPipeDir || r.Envs[EnvMPSMemoryLimit] != "0=8192M" || r.Envs[EnvMemoryLimitMiB] != "8192" {
		t.Fatalf("envs %v, want %s=%s and a limit of 8192 MiB", r.Envs, EnvMPSPipeDir, testPipeDir)
	}
	if got := m.limit(gpus[0].UUID); got != 8192 {
		t.Fatalf("MPS limit of %s = %d MiB, want 8192", gpus[0].UUID, got)
	}
	if got := injected(r); !slices.Equal(got, []string{gpus[0].UUID}) {
		t.Fatalf("the runtime injects %v, want %s", got, gpus[0].UUID)
	}
}

// A slice is refused where MPS cannot enforce it: on a GPU in DEFAULT compute mode (or
// one whose mode is unknown), and when no MPS control daemon answers. The error names
// the GPU, the mode and the fix.
func TestKubeletRefusesUnenforcedSlice(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode string
		down error
		want []string
	}{
		{"default compute mode", gpu.ComputeModeDefault, nil, []string{
			"GPU 1 (" + gpus[1].UUID + ") is in compute mode Default, not ExclusiveProcess",
			"nvidia-smi -i 1 -c EXCLUSIVE_PROCESS", "nvidia-cuda-mps-control -d", "GPU Operator's MPS sharing",
		}},
		{"unknown compute mode", "", nil, []string{"GPU 1 (" + gpus[1].UUID + ") is in compute mode unknown", "nvidia-smi -i 1 -c EXCLUSIVE_PROCESS"}},
		{"no control daemon", gpu.ComputeModeExclusiveProcess, errors.New("cannot find MPS control daemon process"), []string{
			"GPU 1 (" + gpus[1].UUID + "): no MPS control daemon answers on pipe directory " + testPipeDir,
			"nvidia-cuda-mps-control -d", "cannot find MPS control daemon process",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := slicePod("p", 0, gpus[1].UUID, 4096)
			m := &fakeMPS{down: tc.down}
			s := startWith(t, sliceOptions(m), pod)
			node := slices.Clone(gpus)
			node[1].ComputeMode = tc.mode
			s.plugin.SetGPUs(node)
			r, err := admit(t, s, pod, 1)
			if err == nil {
				t.Fatalf("the slice was handed out: %v", r)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("Allocate error = %v, want one containing %q", err, want)
				}
			}
			if got := m.limit(gpus[1].UUID); got != 0 {
				t.Fatalf("MPS limit set to %d MiB for a refused slice", got)
			}
		})
	}
}

// Without MPS, a slice is a limit the container is told: no compute mode is required
// and nothing of MPS is handed out.
func TestKubeletSliceWithoutMPS(t *testing.T) {
	pod := slicePod("p", 0, gpus[1].UUID, 4096)
	s := startWith(t, sliceOptions(nil), pod)
	node := slices.Clone(gpus)
	node[1].ComputeMode = gpu.ComputeModeDefault
	s.plugin.SetGPUs(node)
	r, err := admit(t, s, pod, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Envs[EnvMemoryLimitMiB] != "4096" || r.Envs[EnvMPSPipeDir] != "" || r.Envs[EnvMPSMemoryLimit] != "" || len(r.Mounts) > 0 {
		t.Fatalf("response %v, want the limit alone", r)
	}
}

// A slice with a GPU-memory limit gets the limit, not the request, as its MPS
// pinned-memory limit, in the container and in the daemon; a limit larger than the GPU
// is refused with the fix.
func TestKubeletSliceLimit(t *testing.T) {
	pod := slicePod("burst", 0, gpus[0].UUID, 8192)
	pod.Annotations[tesserav1.AnnotationGPUMemoryLimit] = "20Gi"
	m := &fakeMPS{}
	s := startWith(t, sliceOptions(m), pod)
	r, err := admit(t, s, pod, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Envs[EnvMPSMemoryLimit] != "0=20480M" || r.Envs[EnvMemoryLimitMiB] != "20480" {
		t.Fatalf("envs %v, want the limit of 20480 MiB", r.Envs)
	}
	if got := m.limit(gpus[0].UUID); got != 20480 {
		t.Fatalf("MPS limit of %s = %d MiB, want 20480", gpus[0].UUID, got)
	}

	big := slicePod("too-big", 1, gpus[1].UUID, 8192)
	big.Annotations[tesserav1.AnnotationGPUMemoryLimitPrefix+big.Spec.Containers[0].Name] = "1Ti"
	s = startWith(t, sliceOptions(&fakeMPS{}), big)
	if _, err := admit(t, s, big, 1); err == nil || !strings.Contains(err.Error(), "is larger than GPU "+gpus[1].UUID) ||
		!strings.Contains(err.Error(), "lower the limit") {
		t.Fatalf("error %v, want the limit refused as larger than the GPU", err)
	}
}
