package snapshot

import (
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
)

func asObjectError(err error, target **ObjectError) bool { return errors.As(err, target) }

// epoch is the reference creation time of test objects.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testNode is a node of 64 CPUs, 512Gi and 110 pods, labelled with its hostname.
func testNode(name string) *apitest.NodeWrapper {
	return apitest.MakeNode(name).Label(corev1.LabelHostname, name).
		Allocatable(corev1.ResourceCPU, "64").Allocatable(corev1.ResourceMemory, "512Gi").Allocatable(corev1.ResourcePods, "110")
}

// gpuNode publishes count healthy GPUs for node name, two NVLink islands, listed in reverse.
func gpuNode(name string, count int) *tesserav1.GPUNode {
	w := apitest.MakeGPUNode(name)
	for i := count - 1; i >= 0; i-- {
		w.Device(tesserav1.GPUDevice{Index: int32(i), UUID: uuid(name, i), Model: "NVIDIA H100 80GB HBM3",
			MemoryMiB: 81559, NUMANode: int32(i * 2 / count), Island: int32(i / 4), Healthy: true})
	}
	return w.Obj()
}

func uuid(node string, i int) string { return apitest.GPUUUID(node, i) }

// testPod is a pending pod for Tessera created at epoch, uid "uid-<name>", whose
// container "main" asks 1 CPU and 1Gi.
func testPod(name, ns string) *apitest.PodWrapper {
	return apitest.MakePod(name, ns).UID("uid-" + name).Created(epoch).SchedulerName(tesserav1.SchedulerName).
		CPU("1").Memory("1Gi").Phase(corev1.PodPending)
}

// assign is a device assignment of the uuids on node to container "main".
func assign(node string, uuids ...string) tesserav1.GPUAssignment {
	return tesserav1.GPUAssignment{Node: node, Containers: []tesserav1.ContainerGPUs{{Container: apitest.Container, UUIDs: uuids}}}
}

// testPodGroup is a gang of min pods of queue (none: "") created at epoch, uid "uid-pg-<name>".
func testPodGroup(name, ns, queue string, min int32) *apitest.PodGroupWrapper {
	return apitest.MakePodGroup(name, ns).UID("uid-pg-" + name).Created(epoch).Queue(queue).MinMember(min)
}

// testJob is a batch Job created at epoch, uid "uid-<name>".
func testJob(name, ns string, parallelism int32) *apitest.JobWrapper {
	return apitest.MakeJob(name, ns).UID("uid-" + name).Created(epoch).Parallelism(parallelism)
}
