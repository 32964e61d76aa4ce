package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Enforcement is what happens when a policy denies a request.
// +kubebuilder:validation:Enum=deny;warn;dryrun
type Enforcement string

// Enforcement actions.
const (
	EnforcementDeny   Enforcement = "deny"
	EnforcementWarn   Enforcement = "warn"
	EnforcementDryRun Enforcement = "dryrun"
)

// AdmissionTarget is a kind of object a policy is evaluated on: Pod, Job, PodGroup,
// Queue, or a workload controller's custom resource (JobSet, RayCluster, RayJob,
// LeaderWorkerSet, PyTorchJob, MPIJob), decided on as a whole when it is created.
// +kubebuilder:validation:Enum=Pod;Job;PodGroup;Queue;JobSet;RayCluster;RayJob;LeaderWorkerSet;PyTorchJob;MPIJob
type AdmissionTarget string

// AdmissionPolicySpec is a Rego module applied to incoming workloads.
type AdmissionPolicySpec struct {
	// Rego is the policy source; its package must be below tessera.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=262144
	Rego string `json:"rego"`

	// Targets are the kinds the policy applies to.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +listType=set
	Targets []AdmissionTarget `json:"targets"`

	// Enforcement: deny rejects, warn admits with a warning, dryrun only logs.
	// +kubebuilder:default=deny
	// +optional
	Enforcement Enforcement `json:"enforcement,omitempty"`

	// ReplaceBuiltin replaces the built-in policy of the same name (queue, scheduler,
	// priority, gang, gpu, queues). A policy named like a built-in without it is
	// rejected, so that no built-in check is dropped by accident.
	// +optional
	ReplaceBuiltin bool `json:"replaceBuiltin,omitempty"`

	// Order sorts policies; lower runs first and later policies see earlier patches.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Order int32 `json:"order,omitempty"`
}

// AdmissionPolicyStatus reports whether the policy compiled and serves.
type AdmissionPolicyStatus struct {
	// +optional
	Compiled bool `json:"compiled,omitempty"`
	// Errors are the compiler's or tests' messages, file:row first.
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Errors []string `json:"errors,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastGood is the last spec that compiled and passed its tests, at generation
	// LastGoodGeneration. While a later spec fails, LastGood keeps serving, also after
	// the webhook restarts.
	// +optional
	LastGood *AdmissionPolicySpec `json:"lastGood,omitempty"`
	// +optional
	LastGoodGeneration int64 `json:"lastGoodGeneration,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AdmissionPolicy adds a Rego admission policy, or replaces a built-in one
// (spec.replaceBuiltin).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ap
// +kubebuilder:printcolumn:name="Enforcement",type=string,JSONPath=`.spec.enforcement`
// +kubebuilder:printcolumn:name="Order",type=integer,JSONPath=`.spec.order`
// +kubebuilder:printcolumn:name="Compiled",type=boolean,JSONPath=`.status.compiled`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AdmissionPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AdmissionPolicySpec `json:"spec"`
	// +optional
	Status AdmissionPolicyStatus `json:"status,omitempty"`
}

// AdmissionPolicyList is a list of AdmissionPolicies.
//
// +kubebuilder:object:root=true
type AdmissionPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AdmissionPolicy `json:"items"`
}
