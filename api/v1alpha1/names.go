package v1alpha1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func metav1AddToGroupVersion(s *runtime.Scheme) { metav1.AddToGroupVersion(s, GroupVersion) }

// SchedulerName is the schedulerName that hands a pod to Tessera.
const SchedulerName = "tessera"

// Extended resources.
const (
	// ResourceGPU counts whole GPUs (or GPU shares, on nodes that advertise shares).
	ResourceGPU corev1.ResourceName = "tessera.dev/gpu"
	// ResourceGPUMemory is GPU memory in MiB; a request asks for a slice of one GPU.
	ResourceGPUMemory corev1.ResourceName = "tessera.dev/gpu-memory"
	// ResourceGPUSlice is the node agent's device for a GPU-memory slice: the admission
	// webhook asks one of it for every container that asks ResourceGPUMemory, so that the
	// kubelet has the device plugin allocate the container its GPU and limit (node
	// status resources such as ResourceGPUMemory reach no device plugin). The scheduler
	// places by ResourceGPUMemory and ignores it.
	ResourceGPUSlice corev1.ResourceName = "tessera.dev/gpu-slice"
	// ResourceNvidiaGPU is the NVIDIA device plugin's resource, read for compatibility.
	ResourceNvidiaGPU corev1.ResourceName = "nvidia.com/gpu"
)

// Labels and annotations.
const (
	// LabelQueue on a workload names its queue; fixed once the pod or PodGroup exists.
	LabelQueue = "tessera.dev/queue"
	// LabelPodGroup on a pod names the gang (PodGroup) it belongs to; fixed once the pod exists.
	LabelPodGroup = "tessera.dev/pod-group"
	// LabelGPUModel on a node is its GPUs' product name (spaces as dashes), set by the node agent.
	LabelGPUModel = "tessera.dev/gpu-model"
	// LabelGPUCount on a node is how many GPUs it has, set by the node agent.
	LabelGPUCount = "tessera.dev/gpu-count"
	// LabelRack on a node is its rack, a topology level for multi-node gangs.
	LabelRack = "tessera.dev/rack"
	// LabelZone on a node is its zone, the widest default topology level.
	LabelZone = "topology.kubernetes.io/zone"
	// AnnotationMinAvailable on a Job or pod is its gang size; fixed once the pod exists.
	AnnotationMinAvailable = "tessera.dev/min-available"
	// AnnotationGPUAssign on a pod is the GPUs (and slice) the scheduler assigned it,
	// written through the Binding; only the scheduler may write it.
	AnnotationGPUAssign = "tessera.dev/gpu-assignment"
	// AnnotationExpectedRuntime on a pod, PodGroup or Job is how long one run is
	// expected to take (a Go duration such as "90m"): the scheduler lets it run on nodes
	// held for a waiting gang when it should end before the gang starts. Unset, the
	// Job's activeDeadlineSeconds or the history of its class stands in.
	AnnotationExpectedRuntime = "tessera.dev/expected-runtime"
	// AnnotationCheckpointInterval on a pod is how often it saves its progress (a Go
	// duration such as "30m"), counted from its start: the autoscaler evicts it to free a
	// node right after a checkpoint when that costs less than evicting it at once.
	AnnotationCheckpointInterval = "tessera.dev/checkpoint-interval"
	// AnnotationCheckpointedAt on a pod is when it last saved its progress (RFC 3339),
	// for jobs whose checkpoints drift from the interval; the job writes it.
	AnnotationCheckpointedAt = "tessera.dev/checkpointed-at"
	// AnnotationQueue on a Namespace names the default queue of its workloads.
	AnnotationQueue = "tessera.dev/queue"
	// LabelPlatform set to "true" on a Namespace makes it a platform namespace: workloads
	// there that Tessera does not manage (no GPU, no queue, another scheduler) may name any
	// priority class. Set by the platform team; tenants may not label namespaces.
	LabelPlatform = "tessera.dev/platform"
	// AnnotationBoundPodUID is written by the scheduler with the GPU assignment, through
	// the Binding that places the pod: the pod's UID. The node agent hands out an
	// assignment only to the pod whose UID it names, so a pod created with both
	// annotations forged is refused even if admission let it through: the API server
	// picks the UID when it stores the pod.
	AnnotationBoundPodUID = "tessera.dev/bound-pod-uid"
	// LabelWorkload on a pod names the workload whose runs share a GPU-memory history
	// (GPUProfile); unset, the pod's owner (kind and name) is its workload.
	LabelWorkload = "tessera.dev/workload"
	// AnnotationGPUMemoryPeak on a pod is the most GPU memory its processes used at
	// once, in MiB, written by the node agent as it grows.
	AnnotationGPUMemoryPeak = "tessera.dev/gpu-memory-peak"
	// AnnotationGPUMemoryRecommendation on a pod is the GPU-memory recommendation
	// admission found for its workload, in MiB, with how it was made.
	AnnotationGPUMemoryRecommendation = "tessera.dev/gpu-memory-recommendation"
	// AnnotationRightSizedFrom on a pod is the GPU request admission replaced with a
	// recommended slice (Queue spec.gpuRightSizing.mode Auto).
	AnnotationRightSizedFrom = "tessera.dev/right-sized-from"
	// AnnotationIdleReclaim set to "false" on a pod or its workload spares it from its
	// queue's idle reclaim while the queue holds no more than its deserved share.
	AnnotationIdleReclaim = "tessera.dev/idle-reclaim"
)

// EventReasonGPUMemoryPressure is the reason of the Warning event the node agent records
// on a pod it evicts because its GPU ran short of memory while the pod used more than its
// request; `tessera explain` reads it.
const EventReasonGPUMemoryPressure = "GPUMemoryPressure"

// SchedulingStateAnnotations are the pod annotations only the scheduler writes (through
// the Binding that places the pod); the admission webhook refuses them from anybody
// else, on create and on update, and the node agent trusts them for that reason.
var SchedulingStateAnnotations = []string{AnnotationGPUAssign, AnnotationBoundPodUID}

// Labels and annotations of other batch systems that Tessera reads (never requires).
const (
	VolcanoQueueName      = "scheduling.volcano.sh/queue-name"
	VolcanoGroupName      = "scheduling.k8s.io/group-name"
	VolcanoGroupMinMember = "scheduling.volcano.sh/group-min-member"
	KueueQueueName        = "kueue.x-k8s.io/queue-name"
	// KueuePodGroupName and KueuePodGroupTotalCount make plain pods one gang (Kueue's
	// pod groups); CoschedulingPodGroup names the scheduler-plugins PodGroup of a pod.
	KueuePodGroupName       = "kueue.x-k8s.io/pod-group-name"
	KueuePodGroupTotalCount = "kueue.x-k8s.io/pod-group-total-count"
	CoschedulingPodGroup    = "scheduling.x-k8s.io/pod-group"
)

// DefaultQueue is the queue of a workload that names none.
const DefaultQueue = "default"

// DefaultMaxMinRuntime is a Queue's spec.maxMinRuntime when it sets none.
const DefaultMaxMinRuntime = 30 * time.Minute

// Condition types shared by the kinds. A PodGroup's Scheduled=False condition carries
// the scheduler's reason code (scheduler/framework: Unschedulable, GangIncomplete, GangPodsMissing,
// QueueCapabilityExceeded, ...) and its message.
const (
	ConditionReady     = "Ready"
	ConditionScheduled = "Scheduled"
	ConditionCompiled  = "Compiled"
	ConditionHealthy   = "Healthy"
)

// DefaultTopologyLevels are the node labels, narrowest first, that group nodes into
// topology domains for multi-node gangs.
var DefaultTopologyLevels = []string{LabelRack, LabelZone}

// DurationOrZero returns d's value, or zero for nil.
func DurationOrZero(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

// Dynamic Resource Allocation (resource.k8s.io/v1): the node agent publishes each GPU
// as a device of DRADriver in a pool named after its node; DeviceClassGPU claims whole
// GPUs and DeviceClassGPUShare a share of one GPU's DeviceCapacityMemory.
const (
	DRADriver            = "gpu.tessera.dev"
	DeviceClassGPU       = "gpu.tessera.dev"
	DeviceClassGPUShare  = "gpu-share.tessera.dev"
	DeviceCapacityMemory = "memory"
	// DeviceAttributeUUID is the device attribute holding the GPU's UUID, and
	// DeviceAttributeSharing the one saying it takes memory shares.
	DeviceAttributeUUID    = "uuid"
	DeviceAttributeSharing = "sharing"
)

// ExtendedResourceClaimsKubelet is the first kubelet release (major.minor) whose feature
// DRAExtendedResource is always on: it prepares the claim a pod's
// status.extendedResourceClaimStatus names for the pod's extended resources. Where the
// scheduler and the node agent are left to decide (auto), a node whose kubelet is at
// least this release gets the GPUs of pods asking tessera.dev/gpu or
// tessera.dev/gpu-memory through a claim the scheduler makes, never the device plugin.
const ExtendedResourceClaimsKubelet = "1.37"

// GPUMemoryPressurePercent is the share of a GPU's memory, in percent, above which the
// sum of its pods' actual use counts as pressure: the pod furthest above its GPU-memory
// request, relative to its request, is evicted. 95% leaves about 4 GiB of an 80 GiB GPU,
// room for a caching allocator's next segments and a new CUDA context between two
// samples, before a pod within its request runs out. The node agent's default and the
// simulator's burstable arm.
const GPUMemoryPressurePercent = 95
