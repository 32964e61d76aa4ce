package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ScaleDownPolicySpec says which GPU nodes may be removed once idle, and how carefully.
type ScaleDownPolicySpec struct {
	// NodeSelector picks the nodes this policy governs; empty selects every GPU node.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// IdleAfter is how long a node must stay idle (or underused) before it becomes a
	// candidate; Cluster Autoscaler's scale-down-unneeded-time has the same default.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:default="10m"
	// +optional
	IdleAfter *metav1.Duration `json:"idleAfter,omitempty"`

	// SurplusAfter is how long a node without GPU pods must stay so before it becomes a
	// candidate when it is beyond the headroom (bootTime); the nodes within the
	// headroom wait idleAfter. The default, 1m, is the consolidateAfter of Karpenter's
	// NodePool example. Set it to idleAfter to wait idleAfter for every node.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:default="1m"
	// +optional
	SurplusAfter *metav1.Duration `json:"surplusAfter,omitempty"`

	// BootTime is how long a node the policy removes takes to come back when work needs
	// it (from the request for a node to its GPUs reported). It sizes the headroom: the
	// GPUs that workloads created within the last bootTime hold on the policy's nodes,
	// less the GPUs free on its nodes with GPU pods, are kept on empty nodes for
	// idleAfter, since demand arriving at that rate would need them before a new node
	// could boot. Empty nodes beyond it go after surplusAfter.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:default="5m"
	// +optional
	BootTime *metav1.Duration `json:"bootTime,omitempty"`

	// GPUUtilizationThreshold is the utilization percent at or below which a pod's
	// allocated GPUs count as idle in the idle-GPU report (GPUsIdle events, the
	// allocated-idle metric and alert). It does not decide removals: a node's idle clock
	// is its GPUNode's lastActiveTime, which the node agent keeps by its own
	// --idle-utilization-percent.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=5
	// +optional
	GPUUtilizationThreshold int32 `json:"gpuUtilizationThreshold,omitempty"`

	// UnderusedGPUPercent, when above 0, also makes candidates of nodes whose allocated
	// GPU share stayed at or below this percent of their GPUs for idleAfter, when the
	// scheduler places their pods on other nodes without evicting anyone and no pod on
	// them is protected (safe-to-evict "false", do-not-disrupt). Their pods are evicted
	// and lose the work since their last checkpoint. 0 removes nodes without GPU pods
	// only. The default, 50, is Cluster Autoscaler's utilization threshold.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=50
	// +optional
	UnderusedGPUPercent *int32 `json:"underusedGPUPercent,omitempty"`

	// MaxParallel is how many nodes may be draining at once.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=1
	// +optional
	MaxParallel int32 `json:"maxParallel,omitempty"`

	// Cooldown is the pause after a node the policy selects joined the cluster before
	// the next scale-down, so that a node added for pending work is not removed before
	// that work reaches it: Cluster Autoscaler's scale-down-delay-after-add, with the
	// same default. A scale-down is not followed by a pause (Cluster Autoscaler's
	// scale-down-delay-after-delete is its 10-second scan interval); maxParallel bounds
	// how many nodes go at once.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:default="10m"
	// +optional
	Cooldown *metav1.Duration `json:"cooldown,omitempty"`

	// MinNodes is the fewest selected nodes that must remain. The default, 1, keeps a
	// pool from shrinking to nothing: a cluster autoscaler grows a node group from zero
	// only when it knows the group's node shape (for Cluster API, capacity annotations
	// on the MachineDeployment). Set 0 where it does.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	MinNodes *int32 `json:"minNodes,omitempty"`

	// PricePerGPUHour is the cost of one GPU hour, as a decimal string, for savings reports.
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	PricePerGPUHour string `json:"pricePerGPUHour,omitempty"`

	// DryRun reports candidates and decisions without cordoning or removing anything.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
}

// ScaleDownCandidate is a node the policy would remove.
type ScaleDownCandidate struct {
	// +kubebuilder:validation:MaxLength=253
	Node      string      `json:"node"`
	IdleSince metav1.Time `json:"idleSince"`
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`
}

// ScaleDownRecord is one node that was removed.
type ScaleDownRecord struct {
	// +kubebuilder:validation:MaxLength=253
	Node string      `json:"node"`
	Time metav1.Time `json:"time"`
	// +kubebuilder:validation:Minimum=0
	GPUs int32 `json:"gpus"`
	// Machine is the Cluster API Machine that was deleted, if any.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Machine string `json:"machine,omitempty"`
}

// ScaleDownPolicyStatus lists current candidates and the recent scale-downs.
type ScaleDownPolicyStatus struct {
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Candidates []ScaleDownCandidate `json:"candidates,omitempty"`
	// +kubebuilder:validation:MaxItems=100
	// +optional
	RecentScaleDowns []ScaleDownRecord `json:"recentScaleDowns,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ScaleDownPolicy governs the removal of long-idle GPU nodes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=sdp
// +kubebuilder:printcolumn:name="Idle-After",type=string,JSONPath=`.spec.idleAfter`
// +kubebuilder:printcolumn:name="Min-Nodes",type=integer,JSONPath=`.spec.minNodes`
// +kubebuilder:printcolumn:name="Dry-Run",type=boolean,JSONPath=`.spec.dryRun`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ScaleDownPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ScaleDownPolicySpec `json:"spec,omitempty"`
	// +optional
	Status ScaleDownPolicyStatus `json:"status,omitempty"`
}

// ScaleDownPolicyList is a list of ScaleDownPolicies.
//
// +kubebuilder:object:root=true
type ScaleDownPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ScaleDownPolicy `json:"items"`
}
