package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
	"github.com/tessera-gpu/tessera/scheduler"
	"github.com/tessera-gpu/tessera/scheduler/snapshot"
)

// TestClaimsParity places the same workload twice, once asking GPUs as extended
// resources (tessera.dev/gpu, tessera.dev/gpu-memory) and once through resource claims
// of Tessera's device classes, and expects the same pods on the same nodes and GPUs:
// queues, gangs, scoring and the GPU pick see one request either way.
func TestClaimsParity(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			type pod struct {
				name, group string
				gpus        int64
				memGiB      int64
			}
			var pods []pod
			for g := range 12 {
				size := 1 + rng.IntN(3)
				for i := range size {
					p := pod{name: fmt.Sprintf("j%d-%d", g, i), group: fmt.Sprintf("j%d", g)}
					if rng.IntN(2) == 0 {
						p.gpus = int64(1 + rng.IntN(4))
					} else {
						p.memGiB = int64(4 * (1 + rng.IntN(8)))
					}
					pods = append(pods, p)
				}
			}
			build := func(claims bool) map[string]string {
				b := snapshot.NewBuilder(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), snapshot.Options{DRA: claims})
				for n := range 4 {
					name := fmt.Sprintf("n%d", n)
					w := apitest.MakeGPUNode(name)
					for i := range 8 {
						w.Device(tesserav1.GPUDevice{Index: int32(i), UUID: apitest.GPUUUID(name, i), Model: "NVIDIA H100 80GB HBM3",
							MemoryMiB: 81920, NUMANode: int32(i / 4), Island: int32(i / 4), Healthy: true})
					}
					b.AddNode(apitest.MakeNode(name).Allocatable(corev1.ResourceCPU, "128").Allocatable(corev1.ResourceMemory, "1Ti").
						Allocatable(corev1.ResourcePods, "110").Obj(), w.Obj())
					if claims {
						b.AddResourceSlice(apitest.GPUSlice(name, 8, 81920, 1024, true, func(i int) string { return apitest.GPUUUID(name, i) }))
					}
				}
				for _, c := range apitest.DeviceClasses() {
					b.AddDeviceClass(c)
				}
				groups := map[string]int32{}
				for _, p := range pods {
					groups[p.group]++
				}
				for g, n := range groups {
					b.AddPodGroup(apitest.MakePodGroup(g, "ns").UID("uid-" + g).MinMember(n).Obj())
				}
				for i, p := range pods {
					w := apitest.MakePod(p.name, "ns").UID("uid-" + p.name).Created(time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)).
						SchedulerName(tesserav1.SchedulerName).CPU("1").Memory("1Gi").Group(p.group).Phase(corev1.PodPending)
					switch {
					case claims && p.gpus > 0:
						b.AddResourceClaim(apitest.GPUClaim(p.name, "ns", p.gpus, ""))
						w.ResourceClaim("gpu", p.name)
					case claims:
						b.AddResourceClaim(apitest.GPUClaim(p.name, "ns", 0, fmt.Sprintf("%dGi", p.memGiB)))
						w.ResourceClaim("gpu", p.name)
					case p.gpus > 0:
						w.GPU(p.gpus)
					default:
						w.GPUMemory(p.memGiB * 1024)
					}
					b.AddPod(w.Obj(), 0)
				}
				snap, errs := b.Build()
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				cfg, err := scheduler.Profile("tessera")
				if err != nil {
					t.Fatal(err)
				}
				s, err := scheduler.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]string{}
				for _, bd := range s.RunSession(snap).Bindings {
					var uuids []string
					for _, i := range bd.GPUs.Indices() {
						uuids = append(uuids, bd.Node.GPUs[i].UUID)
					}
					slices.Sort(uuids)
					out[bd.Task.Name] = fmt.Sprintf("%s %v %d", bd.Node.Name, uuids, bd.GPUMilli)
				}
				return out
			}
			ext, cl := build(false), build(true)
			if len(ext) == 0 {
				t.Fatal("nothing placed")
			}
			for _, p := range pods {
				if ext[p.name] != cl[p.name] {
					t.Errorf("%s: extended resources place it %q, claims %q", p.name, ext[p.name], cl[p.name])
				}
			}
		})
	}
}
