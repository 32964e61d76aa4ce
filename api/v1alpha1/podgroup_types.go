package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodGroupPhase is where a gang is in its life.
// +kubebuilder:validation:Enum=Pending;Inqueue;Running;Completed;Failed
type PodGroupPhase string

// Phases of a PodGroup.
const (
	PodGroupPending   PodGroupPhase = "Pending"
	PodGroupInqueue   PodGroupPhase = "Inqueue"
	PodGroupRunning   PodGroupPhase = "Running"
	PodGroupCompleted PodGroupPhase = "Completed"
	PodGroupFailed    PodGroupPhase = "Failed"
)

// TopologyConstraint keeps a multi-node gang inside one topology domain.
//
// +kubebuilder:validation:XValidation:rule="has(self.required) || has(self.preferred)",message="spec.topology needs required or preferred; remove spec.topology to place the gang anywhere"
type TopologyConstraint struct {
	// Required is a node label key (a topology level such as tessera.dev/rack); all of the
	// gang's pods must land on nodes with the same value, or the gang waits.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +optional
	Required string `json:"required,omitempty"`
	// Preferred is a node label key that the gang should share if it can.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +optional
	Preferred string `json:"preferred,omitempty"`
}

// PodGroupSpec describes a gang: pods that run together or not at all.
type PodGroupSpec struct {
	// MinMember is how many pods must be placed together before any of them binds.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +optional
	MinMember int32 `json:"minMember,omitempty"`

	// MinResources is the least the gang needs in total before it is admitted.
	// +optional
	MinResources corev1.ResourceList `json:"minResources,omitempty"`

	// Queue names the Queue the gang is charged to; empty means the default queue.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	Queue string `json:"queue,omitempty"`

	// PriorityClassName gives the gang's priority.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// Topology keeps the gang's pods within one topology domain.
	// +optional
	Topology *TopologyConstraint `json:"topology,omitempty"`

	// MinRuntime protects a running gang from preemption and reclaim for this long.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +optional
	MinRuntime *metav1.Duration `json:"minRuntime,omitempty"`
}

// PodGroupStatus tells where the gang is and, while it waits, why.
type PodGroupStatus struct {
	// +kubebuilder:default=Pending
	// +optional
	Phase PodGroupPhase `json:"phase,omitempty"`
	// Conditions; Scheduled=False carries the reason and message that keep the gang pending.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	Scheduled int32 `json:"scheduled,omitempty"`
	// +optional
	Running int32 `json:"running,omitempty"`
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// PodGroup is a gang of pods scheduled all-or-nothing.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pg
// +kubebuilder:printcolumn:name="Queue",type=string,JSONPath=`.spec.queue`
// +kubebuilder:printcolumn:name="Min",type=integer,JSONPath=`.spec.minMember`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.running`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec PodGroupSpec `json:"spec,omitempty"`
	// +optional
	Status PodGroupStatus `json:"status,omitempty"`
}

// PodGroupList is a list of PodGroups.
//
// +kubebuilder:object:root=true
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGroup `json:"items"`
}
