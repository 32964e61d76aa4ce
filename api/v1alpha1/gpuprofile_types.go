package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GPUProfileSpec names the workload a profile describes.
type GPUProfileSpec struct {
	// Workload is the key the runs share: the pods' tessera.dev/workload label, or
	// their owner's kind and name ("Job/train-llama").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Workload string `json:"workload"`
}

// GPUProfileBucket is one bucket of the decayed histogram of per-run peaks.
type GPUProfileBucket struct {
	// Bucket is the bucket's index (exponential buckets, see the rightsize package).
	Bucket int32 `json:"bucket"`
	// WeightMicros is its weight, in millionths, at status.reference.
	WeightMicros int64 `json:"weightMicros"`
}

// GPUProfileStatus is the workload's GPU-memory history and the recommendation made
// from it.
type GPUProfileStatus struct {
	// Runs counts the finished runs recorded.
	// +optional
	Runs int32 `json:"runs,omitempty"`
	// MaxPeakMiB is the largest peak GPU memory of a run.
	// +optional
	MaxPeakMiB int64 `json:"maxPeakMiB,omitempty"`
	// GPUMemoryMiB is the memory of the GPU of the last run.
	// +optional
	GPUMemoryMiB int64 `json:"gpuMemoryMiB,omitempty"`
	// OOMs counts the runs in a row that ran out of GPU memory at a recommended slice.
	// +optional
	OOMs int32 `json:"ooms,omitempty"`
	// FloorMiB is the least slice of the next run, after one ran out of GPU memory.
	// +optional
	FloorMiB int64 `json:"floorMiB,omitempty"`
	// Preallocates is set once a run took the whole GPU from its start.
	// +optional
	Preallocates bool `json:"preallocates,omitempty"`
	// Reference is the time the histogram's weights stand at.
	// +optional
	Reference *metav1.Time `json:"reference,omitempty"`
	// Peaks is the decayed histogram of per-run peaks.
	// +kubebuilder:validation:MaxItems=512
	// +listType=atomic
	// +optional
	Peaks []GPUProfileBucket `json:"peaks,omitempty"`
	// RecommendedMiB is the GPU memory to ask for; 0 when there is no recommendation.
	// +optional
	RecommendedMiB int64 `json:"recommendedMiB,omitempty"`
	// TypicalMiB is the GPU memory a typical run peaks at: the p50 of the runs' peaks
	// plus a margin (rightsize.RecommendBurstable's request), at most RecommendedMiB;
	// what Auto right-sizing asks in a queue whose spec.gpuRightSizing.request is
	// Typical. 0 when there is no recommendation.
	// +optional
	TypicalMiB int64 `json:"typicalMiB,omitempty"`
	// RecommendedLimitMiB is the GPU-memory limit beside RecommendedMiB: near the
	// workload's upper bound (rightsize.RecommendBurstable), at most the GPU; 0 when
	// there is no recommendation. Auto right-sizing sets it as the pod's
	// tessera.dev/gpu-memory-limit, so that a run may use free memory above its request.
	// +optional
	RecommendedLimitMiB int64 `json:"recommendedLimitMiB,omitempty"`
	// Reason says how the recommendation was made, or why there is none.
	// +optional
	Reason string `json:"reason,omitempty"`
	// RecordedPods are the UIDs of the last pods recorded, newest last, so that a run
	// is recorded once.
	// +kubebuilder:validation:MaxItems=128
	// +listType=atomic
	// +optional
	RecordedPods []string `json:"recordedPods,omitempty"`
}

// GPUProfile is one workload's GPU-memory use over its runs, kept by the recommender,
// and the GPU-memory request recommended for its next run.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=gprof
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.spec.workload`
// +kubebuilder:printcolumn:name="Runs",type=integer,JSONPath=`.status.runs`
// +kubebuilder:printcolumn:name="Max-Peak-MiB",type=integer,JSONPath=`.status.maxPeakMiB`
// +kubebuilder:printcolumn:name="Recommended-MiB",type=integer,JSONPath=`.status.recommendedMiB`
// +kubebuilder:printcolumn:name="OOMs",type=integer,JSONPath=`.status.ooms`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GPUProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GPUProfileSpec `json:"spec"`
	// +optional
	Status GPUProfileStatus `json:"status,omitempty"`
}

// GPUProfileList is a list of GPUProfiles.
//
// +kubebuilder:object:root=true
type GPUProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GPUProfile `json:"items"`
}
