package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// QueueSpec describes a queue's share of the cluster.
//
// +kubebuilder:validation:XValidation:rule="!has(self.deserved) || !has(self.capability) || self.deserved.all(r, !(r in self.capability) || quantity(string(self.deserved[r])).compareTo(quantity(string(self.capability[r]))) <= 0)",message="spec.deserved must not exceed spec.capability for any resource; lower deserved or raise capability",fieldPath=".deserved"
// +kubebuilder:validation:XValidation:rule="!has(self.guarantee) || !has(self.capability) || self.guarantee.all(r, !(r in self.capability) || quantity(string(self.guarantee[r])).compareTo(quantity(string(self.capability[r]))) <= 0)",message="spec.guarantee must not exceed spec.capability for any resource; lower guarantee or raise capability",fieldPath=".guarantee"
type QueueSpec struct {
	// Weight splits capacity that no queue deserves, in proportion to other queues' weights.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Weight int32 `json:"weight,omitempty"`

	// Deserved is what the queue gets under contention; idle deserved capacity is lent out
	// and reclaimed when the queue has pending work.
	// +kubebuilder:validation:MaxProperties=7
	// +optional
	Deserved corev1.ResourceList `json:"deserved,omitempty"`

	// Capability is a hard cap on what the queue's running jobs may hold.
	// +kubebuilder:validation:MaxProperties=7
	// +optional
	Capability corev1.ResourceList `json:"capability,omitempty"`

	// Guarantee is reserved for the queue and never lent to other queues.
	// +kubebuilder:validation:MaxProperties=7
	// +optional
	Guarantee corev1.ResourceList `json:"guarantee,omitempty"`

	// Parent names the parent queue; children share the parent's deserved capacity.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	Parent string `json:"parent,omitempty"`

	// Reclaimable lets other queues take back what this queue borrowed beyond its deserved share.
	// +kubebuilder:default=true
	// +optional
	Reclaimable *bool `json:"reclaimable,omitempty"`

	// Priority orders queues when their shares tie; higher goes first.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// NamespaceSelector selects the namespaces whose workloads may use the queue; the
	// admission webhook denies the others, and the scheduler charges none of their work
	// to the queue. Unset: every namespace (an empty selector also selects every
	// namespace). Namespaces carry the label
	// kubernetes.io/metadata.name, so a list of names is
	// {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [...]}]}.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.operator in ['In', 'NotIn'] && has(e.values) && size(e.values) > 0) || (e.operator in ['Exists', 'DoesNotExist'] && (!has(e.values) || size(e.values) == 0)))",message="spec.namespaceSelector.matchExpressions: operator must be In or NotIn with values, or Exists or DoesNotExist without values"
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// AllowedPriorityClasses are the PriorityClasses the queue's workloads may use; the
	// admission webhook denies others, and picks the default class among them; the
	// scheduler charges no work of another class to the queue. Empty: only the cluster's
	// default class (the PriorityClass with globalDefault, or none).
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +listType=set
	// +optional
	AllowedPriorityClasses []string `json:"allowedPriorityClasses,omitempty"`

	// MaxMinRuntime caps the minRuntime of the queue's PodGroups (and the scheduler's
	// default guard): no job of the queue is protected from preemption and reclaim for
	// longer. Against other queues' reclaim, minRuntime (like the pods' eviction
	// protection annotations) protects a job only while its queue holds no more than its
	// deserved share.
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="spec.maxMinRuntime must be between 1s and 24h"
	// +optional
	MaxMinRuntime *metav1.Duration `json:"maxMinRuntime,omitempty"`
	// GPURightSizing sizes the GPU-memory requests of the queue's pods from what their
	// workload's earlier runs used (GPUProfiles).
	// +optional
	GPURightSizing *GPURightSizing `json:"gpuRightSizing,omitempty"`
	// IdleReclaim takes back GPUs that the queue's running pods hold but leave idle.
	// +optional
	IdleReclaim *IdleReclaim `json:"idleReclaim,omitempty"`
}

// RightSizingMode says what admission does with a workload's GPU-memory recommendation.
// +kubebuilder:validation:Enum=Off;Recommend;Auto
type RightSizingMode string

// Right-sizing modes.
const (
	// RightSizingOff leaves requests as they are and shows policies no recommendation.
	RightSizingOff RightSizingMode = "Off"
	// RightSizingRecommend shows policies the recommendation (input.recommendation) and
	// records it on the pod (tessera.dev/gpu-memory-recommendation), changing nothing.
	RightSizingRecommend RightSizingMode = "Recommend"
	// RightSizingAuto also turns a container's request for one whole GPU into a slice
	// of the recommended size when the pod is created; running pods are never resized.
	RightSizingAuto RightSizingMode = "Auto"
)

// GPURightSizing is a queue's use of GPU-memory recommendations.
type GPURightSizing struct {
	// Mode is Off, Recommend or Auto.
	// +kubebuilder:default=Off
	// +optional
	Mode RightSizingMode `json:"mode,omitempty"`
	// Request is what Auto packs a pod on: Peak (the default), near the peak of most
	// of its workload's runs (their p95 + a margin); or Typical, near the peak of a
	// typical run (the p50 + a margin), the run bursting up to its limit (the upper
	// bound) while the GPU has that memory free, and the node agent evicting the pod
	// furthest above its request when the GPU's memory runs short. Either way a pod
	// gets the recommended limit as tessera.dev/gpu-memory-limit.
	// +kubebuilder:default=Peak
	// +optional
	Request RightSizingRequest `json:"request,omitempty"`
}

// RightSizingRequest says which recommended request Auto right-sizing gives a pod.
// +kubebuilder:validation:Enum=Peak;Typical
type RightSizingRequest string

// Right-sizing requests.
const (
	// RightSizingPeak packs on the peak of most runs (GPUProfile status.recommendedMiB).
	RightSizingPeak RightSizingRequest = "Peak"
	// RightSizingTypical packs on a typical run's peak (status.typicalMiB) and lets
	// the pod burst to its limit.
	RightSizingTypical RightSizingRequest = "Typical"
)

// IdleReclaim is a queue's policy for allocated GPUs left idle: the pod is told (an
// Event and the tessera_gpu_idle_reclaim_pending_gpus metric) once every GPU it holds
// stayed at or below UtilizationThreshold for IdleFor, and its workload is suspended
// GracePeriod later unless the GPUs were used again. A pod or workload annotated
// tessera.dev/idle-reclaim: "false" is spared while its queue holds no more than its
// deserved share.
type IdleReclaim struct {
	// UtilizationThreshold is the GPU utilization, in percent, at or below which a GPU
	// counts as idle.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	UtilizationThreshold int32 `json:"utilizationThreshold,omitempty"`
	// IdleFor is how long a pod's GPUs must stay idle before it is told.
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5m')",message="spec.idleReclaim.idleFor must be at least 5m"
	// +optional
	IdleFor *metav1.Duration `json:"idleFor,omitempty"`
	// GracePeriod is how long after being told an idle pod's workload is suspended.
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	GracePeriod *metav1.Duration `json:"gracePeriod,omitempty"`
	// DryRun tells and reports what would be suspended, and suspends nothing. Start
	// with it, as with ScaleDownPolicies.
	// +kubebuilder:default=true
	// +optional
	DryRun *bool `json:"dryRun,omitempty"`
}

// QueueStatus reports what the queue holds and how many jobs wait in it.
type QueueStatus struct {
	// Allocated is the sum of requests of the queue's running pods.
	// +optional
	Allocated corev1.ResourceList `json:"allocated,omitempty"`
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// +optional
	Inqueue int32 `json:"inqueue,omitempty"`
	// +optional
	Running int32 `json:"running,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Queue is a share of the cluster that jobs are submitted to.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=tq
// +kubebuilder:validation:XValidation:rule="!has(self.spec.parent) || self.spec.parent != self.metadata.name",message="spec.parent must name another queue, not the queue itself"
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=`.spec.weight`
// +kubebuilder:printcolumn:name="Deserved-GPU",type=string,JSONPath=`.spec.deserved.tessera\.dev/gpu`
// +kubebuilder:printcolumn:name="Capability-GPU",type=string,JSONPath=`.spec.capability.tessera\.dev/gpu`
// +kubebuilder:printcolumn:name="Allocated-GPU",type=string,JSONPath=`.status.allocated.tessera\.dev/gpu`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pending`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Queue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec QueueSpec `json:"spec,omitempty"`
	// +optional
	Status QueueStatus `json:"status,omitempty"`
}

// QueueList is a list of Queues.
//
// +kubebuilder:object:root=true
type QueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Queue `json:"items"`
}
