package deviceplugin

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	pb "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// gpuKind is how pods ask for GPUs: whole GPUs (tessera.dev/gpu) or a memory slice
// (tessera.dev/gpu-slice, enforced through MPS).
type gpuKind struct {
	name string
	opts func() Options
	pod  func(name string, created int, uuid string, mib int64) *corev1.Pod
	// limit is the memory limit a container with pod's assignment gets.
	limit func(mib int64) string
}

var gpuKinds = []gpuKind{
	{
		name: "whole GPU",
		opts: func() Options { return Options{SharesPerGPU: 1} },
		pod: func(name string, created int, uuid string, _ int64) *corev1.Pod {
			return makePod(name, created, 1).Assignment(tesserav1.GPUAssignment{Node: node,
				Containers: []tesserav1.ContainerGPUs{{Container: "main", UUIDs: []string{uuid}}}}).Obj()
		},
		limit: func(int64) string { return "81920" },
	},
	{
		name: "slice",
		opts: func() Options {
			return Options{ResourceName: tesserav1.ResourceGPUSlice, Slices: true, SharesPerGPU: 8, MPS: &fakeMPS{}}
		},
		pod: func(name string, created int, uuid string, mib int64) *corev1.Pod {
			return makePod(name, created, 0).Limit(tesserav1.ResourceGPUSlice, "1").Limit(tesserav1.ResourceGPUMemory, strconv.FormatInt(mib, 10)).
				Assignment(slice(uuid, mib)).Obj()
		},
		limit: func(mib int64) string { return strconv.FormatInt(mib, 10) },
	},
}

// got checks that a container was handed uuid with the limit of mib.
func (k gpuKind) got(t *testing.T, who string, r *pb.ContainerAllocateResponse, uuid string, mib int64) {
	t.Helper()
	if got := injected(r); !slices.Equal(got, []string{uuid}) || r.Envs[EnvMemoryLimitMiB] != k.limit(mib) {
		t.Fatalf("%s got %v with a limit of %s MiB, want its own %s with %s MiB", who, got, r.Envs[EnvMemoryLimitMiB], uuid, k.limit(mib))
	}
}

// Two pods are bound to the node and the kubelet admits the younger first (it received
// it first). The younger pod gets its own GPU, or a refusal: never the older pod's.
func TestKubeletAdmitsYoungerPodFirst(t *testing.T) {
	for _, k := range gpuKinds {
		older := func() *corev1.Pod { return k.pod("older", 0, gpus[0].UUID, 8192) }
		younger := func() *corev1.Pod { return k.pod("younger", 10, gpus[1].UUID, 4096) }
		// The kubelet lists the pods it received: the younger, not the older.
		t.Run(k.name+"/kubelet record", func(t *testing.T) {
			o, y := older(), younger()
			s := startWith(t, k.opts(), o, y)
			r, err := admit(t, s, y, 1)
			if err != nil {
				t.Fatal(err)
			}
			k.got(t, "the younger pod", r, gpus[1].UUID, 4096)
			if r, err = admit(t, s, o, 1); err != nil {
				t.Fatal(err)
			}
			k.got(t, "the older pod", r, gpus[0].UUID, 8192)
		})
		// Without the kubelet's record both pods could be the one: refused.
		t.Run(k.name+"/no kubelet record", func(t *testing.T) {
			o, y := older(), younger()
			s := startWithoutLedger(t, k.opts(), o, y)
			r, err := admit(t, s, y, 1)
			if err == nil {
				t.Fatalf("the younger pod got %v, want a refusal", injected(r))
			}
			for _, want := range []string{"cannot tell which of the pods team-a/older, team-a/younger", "--pod-resources-socket"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("Allocate error = %v, want one containing %q", err, want)
				}
			}
		})
		// The older pod is bound after the kubelet asked for its preferred devices for
		// the younger one: the devices it allocates then name the younger pod.
		t.Run(k.name+"/preferred devices", func(t *testing.T) {
			o, y := older(), younger()
			s := startWithoutLedger(t, k.opts(), y)
			r, err := admitBetween(t, s, y, "main", 1, func() {
				if _, err := s.kube().CoreV1().Pods(o.Namespace).Create(t.Context(), o, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			k.got(t, "the younger pod", r, gpus[1].UUID, 4096)
			if r, err = admit(t, s, o, 1); err != nil {
				t.Fatal(err)
			}
			k.got(t, "the older pod", r, gpus[0].UUID, 8192)
		})
	}
}

// Devices the kubelet passes that do not follow the preference for another pod name no
// pod: with two candidates assigned different GPUs, Allocate refuses.
func TestAllocateRefusesDevicesSteeredToNoCandidate(t *testing.T) {
	o := makePod("older", 0, 1).Assignment(slice(gpus[0].UUID, 1000)).Obj()
	y := makePod("younger", 10, 1).Assignment(slice(gpus[1].UUID, 2000)).Obj()
	s := startWithoutLedger(t, Options{SharesPerGPU: 4}, o, y)
	if r, err := allocate(t, s, y, gpus[1].UUID+"::0"); err == nil || !strings.Contains(err.Error(), "cannot tell which of the pods") {
		t.Fatalf("Allocate = %v, %v; want a refusal", r, err)
	}
}

// A pod deleted and created again under the same name is another pod: the devices the
// kubelet allocated to the first do not make the second look allocated, and neither
// pod's GPUs go to the other or to a third pod.
func TestRecreatedPodIsAnotherPod(t *testing.T) {
	first := makePod("a", 0, 1).Assignment(slice(gpus[0].UUID, 1000)).Obj()
	again := func() *corev1.Pod {
		return makePod("a", 20, 1).UID("uid-a-again").Annotation(tesserav1.AnnotationBoundPodUID, "uid-a-again").
			Assignment(slice(gpus[1].UUID, 2000)).Obj()
	}
	recreate := func(t *testing.T, s setup, pods ...*corev1.Pod) {
		t.Helper()
		if err := s.kube().CoreV1().Pods(first.Namespace).Delete(t.Context(), first.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			if _, err := s.kube().CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("kubelet record", func(t *testing.T) {
		s := startWith(t, Options{SharesPerGPU: 4}, first)
		if r, err := admit(t, s, first, 1); err != nil || r.Envs[EnvMemoryLimitMiB] != "1000" {
			t.Fatalf("first pod a got %v, %v", r, err)
		}
		a, b := again(), makePod("b", 10, 1).Assignment(slice(gpus[0].UUID, 3000)).Obj()
		recreate(t, s, a, b)
		// The kubelet has not removed the first pod a yet; it admits b.
		r, err := admit(t, s, b, 1)
		if err != nil || r.Envs[EnvMemoryLimitMiB] != "3000" {
			t.Fatalf("pod b got %v, %v; want its own slice of 3000 MiB", r, err)
		}
		s.kubelet.drop(first)
		if r, err = admit(t, s, a, 1); err != nil {
			t.Fatal(err)
		}
		if got := injected(r); !slices.Equal(got, []string{gpus[1].UUID}) || r.Envs[EnvMemoryLimitMiB] != "2000" {
			t.Fatalf("the second pod a got %v with %s MiB, want its own %s with 2000", got, r.Envs[EnvMemoryLimitMiB], gpus[1].UUID)
		}
	})
	t.Run("no kubelet record", func(t *testing.T) {
		s := startWithoutLedger(t, Options{SharesPerGPU: 4}, first)
		if r, err := admit(t, s, first, 1); err != nil || r.Envs[EnvMemoryLimitMiB] != "1000" {
			t.Fatalf("first pod a got %v, %v", r, err)
		}
		a := again()
		recreate(t, s, a)
		r, err := admit(t, s, a, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := injected(r); !slices.Equal(got, []string{gpus[1].UUID}) || r.Envs[EnvMemoryLimitMiB] != "2000" {
			t.Fatalf("the second pod a got %v with %s MiB, want its own %s with 2000", got, r.Envs[EnvMemoryLimitMiB], gpus[1].UUID)
		}
	})
}

// Pods the kubelet admits one after the other whose assignments are alike need no
// telling apart: either gets the same.
func TestAllocateAlikeCandidates(t *testing.T) {
	p := makePod("p", 0, 1).Assignment(slice(gpus[0].UUID, 1000)).Obj()
	q := makePod("q", 10, 1).Assignment(slice(gpus[0].UUID, 1000)).Obj()
	s := startWithoutLedger(t, Options{SharesPerGPU: 4}, p, q)
	for _, pod := range []*corev1.Pod{q, p} {
		r, err := admit(t, s, pod, 1)
		if err != nil || !slices.Equal(injected(r), []string{gpus[0].UUID}) || r.Envs[EnvMemoryLimitMiB] != "1000" {
			t.Fatalf("%s got %v, %v", pod.Name, r, err)
		}
	}
}
