package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GPUDevice is one physical GPU as the node agent discovered it through NVML.
type GPUDevice struct {
	// Index is NVML's device index on the node.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=63
	Index int32 `json:"index"`
	// UUID is the GPU's stable identifier, as in NVIDIA_VISIBLE_DEVICES.
	// +kubebuilder:validation:Pattern=`^(GPU|MIG)-[0-9a-fA-F-]+$`
	// +kubebuilder:validation:MaxLength=96
	UUID string `json:"uuid"`
	// Model is the product name, e.g. "NVIDIA A100-SXM4-80GB".
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Model string `json:"model,omitempty"`
	// MemoryMiB is the GPU's total memory.
	// +kubebuilder:validation:Minimum=1
	MemoryMiB int64 `json:"memoryMiB"`
	// NUMANode is the CPU NUMA node the GPU hangs off, -1 when unknown.
	// +kubebuilder:validation:Minimum=-1
	// +optional
	NUMANode int32 `json:"numaNode,omitempty"`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	PCIBusID string `json:"pciBusID,omitempty"`
	// +optional
	MIGEnabled bool `json:"migEnabled,omitempty"`
	Healthy    bool `json:"healthy"`
	// UnhealthyReason says why the GPU is unhealthy (Xid error, fallen off the bus ...).
	// +kubebuilder:validation:MaxLength=256
	// +optional
	UnhealthyReason string `json:"unhealthyReason,omitempty"`
	// Island groups GPUs joined by NVLink; GPUs with the same island talk fastest.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Island int32 `json:"island,omitempty"`
	// UtilizationPercent is the last sampled SM utilization.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	UtilizationPercent int32 `json:"utilizationPercent,omitempty"`
	// MemoryUsedMiB is the last sampled memory in use.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MemoryUsedMiB int64 `json:"memoryUsedMiB,omitempty"`
	// +optional
	TemperatureC int32 `json:"temperatureC,omitempty"`
}

// PCIeRelation is how two GPUs reach each other over PCIe, nearest first.
// +kubebuilder:validation:Enum=SameBoard;SingleSwitch;MultiSwitch;HostBridge;SameCPU;CrossCPU;Unknown
type PCIeRelation string

// PCIe relations, as NVML's topology levels.
const (
	PCIeSameBoard    PCIeRelation = "SameBoard"
	PCIeSingleSwitch PCIeRelation = "SingleSwitch"
	PCIeMultiSwitch  PCIeRelation = "MultiSwitch"
	PCIeHostBridge   PCIeRelation = "HostBridge"
	PCIeSameCPU      PCIeRelation = "SameCPU"
	PCIeCrossCPU     PCIeRelation = "CrossCPU"
	PCIeUnknown      PCIeRelation = "Unknown"
)

// GPULink is the connection between two GPUs of the node.
//
// +kubebuilder:validation:XValidation:rule="self.a < self.b",message="links[].a must be lower than links[].b; list each pair once"
type GPULink struct {
	// +kubebuilder:validation:Minimum=0
	A int32 `json:"a"`
	// +kubebuilder:validation:Minimum=0
	B int32 `json:"b"`
	// NVLinks is the number of NVLink connections between the pair; 0 means none.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	// +optional
	NVLinks int32 `json:"nvlinks,omitempty"`
	// +optional
	PCIe PCIeRelation `json:"pcie,omitempty"`
}

// GPUPodMemory is the GPU memory one pod holding Tessera-assigned GPUs used on the
// node, for right-sizing its workload's next runs (see GPUProfile). The node agent
// keeps a pod's entry a few minutes after the pod ends, with its final peak.
type GPUPodMemory struct {
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +kubebuilder:validation:MaxLength=36
	UID string `json:"uid"`
	// Workload is the key of the pod's workload (rightsize.WorkloadKey).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Workload string `json:"workload,omitempty"`
	// PeakMiB is the most GPU memory the pod's processes held at once on one GPU
	// (the largest per-GPU use of a multi-GPU pod).
	// +kubebuilder:validation:Minimum=0
	// +optional
	PeakMiB int64 `json:"peakMiB,omitempty"`
	// FirstMiB is its use at the first sample that saw any, telling preallocating
	// frameworks apart.
	// +kubebuilder:validation:Minimum=0
	// +optional
	FirstMiB int64 `json:"firstMiB,omitempty"`
	// GPUMemoryMiB is the total memory of the GPU the peak was on.
	// +kubebuilder:validation:Minimum=0
	// +optional
	GPUMemoryMiB int64 `json:"gpuMemoryMiB,omitempty"`
	// LimitMiB is the pod's slice of that GPU; 0 for a whole GPU.
	// +kubebuilder:validation:Minimum=0
	// +optional
	LimitMiB int64 `json:"limitMiB,omitempty"`
	// EndedTime is when the agent saw the pod end (terminated or gone); its peak is
	// final from then on.
	// +optional
	EndedTime *metav1.Time `json:"endedTime,omitempty"`
}

// GPUNodeStatus is the GPU inventory and activity of one node.
type GPUNodeStatus struct {
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=index
	// +optional
	Devices []GPUDevice `json:"devices,omitempty"`
	// +kubebuilder:validation:MaxItems=2016
	// +optional
	Links []GPULink `json:"links,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	DriverVersion string `json:"driverVersion,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	CUDAVersion string `json:"cudaVersion,omitempty"`
	// SharesPerGPU is how many tessera.dev/gpu shares the device plugin advertises per GPU.
	// +kubebuilder:validation:Minimum=1
	// +optional
	SharesPerGPU int32 `json:"sharesPerGPU,omitempty"`
	// LastActiveTime is the last time any GPU of the node was above the idle threshold.
	// +optional
	LastActiveTime *metav1.Time `json:"lastActiveTime,omitempty"`
	// ObservedTime is when the agent last sampled the devices.
	// +optional
	ObservedTime *metav1.Time `json:"observedTime,omitempty"`
	// Pods is the GPU memory used by the pods holding Tessera-assigned GPUs, running or
	// ended in the last few minutes.
	// +kubebuilder:validation:MaxItems=256
	// +listType=map
	// +listMapKey=uid
	// +optional
	Pods []GPUPodMemory `json:"pods,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GPUNode is the node agent's report of a node's GPUs; its name is the node's name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=gn
// +kubebuilder:printcolumn:name="GPUs",type=integer,JSONPath=`.status.devices[*].index`,priority=1
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.status.devices[0].model`
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.status.driverVersion`
// +kubebuilder:printcolumn:name="Last-Active",type=date,JSONPath=`.status.lastActiveTime`
type GPUNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Status GPUNodeStatus `json:"status,omitempty"`
}

// GPUNodeList is a list of GPUNodes.
//
// +kubebuilder:object:root=true
type GPUNodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GPUNode `json:"items"`
}
