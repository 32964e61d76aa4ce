package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ContainerGPUs is the GPUs the scheduler assigned to one container of a pod.
type ContainerGPUs struct {
	// Container is the container's name.
	Container string `json:"container"`
	// UUIDs are the GPUs, as NVIDIA_VISIBLE_DEVICES lists them.
	UUIDs []string `json:"uuids"`
	// MemoryMiB is the container's slice of each GPU; 0 means whole GPUs.
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
}

// GPUAssignment is the value of the tessera.dev/gpu-assignment annotation, written by the
// scheduler before binding and read by the node agent's device plugin.
type GPUAssignment struct {
	// Node is the node the assignment was made for; the device plugin refuses others.
	Node       string          `json:"node"`
	Containers []ContainerGPUs `json:"containers"`
}

// Encode returns the annotation value.
func (a GPUAssignment) Encode() string {
	b, _ := json.Marshal(a) // cannot fail: plain strings and numbers
	return string(b)
}

// ParseGPUAssignment decodes and checks an annotation value.
func ParseGPUAssignment(s string) (GPUAssignment, error) {
	var a GPUAssignment
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("annotation %s: %w", AnnotationGPUAssign, err)
	}
	if a.Node == "" {
		return a, fmt.Errorf("annotation %s: node is empty", AnnotationGPUAssign)
	}
	for i, c := range a.Containers {
		switch {
		case c.Container == "":
			return a, fmt.Errorf("annotation %s: containers[%d].container is empty", AnnotationGPUAssign, i)
		case len(c.UUIDs) == 0:
			return a, fmt.Errorf("annotation %s: containers[%d].uuids is empty", AnnotationGPUAssign, i)
		case c.MemoryMiB < 0:
			return a, fmt.Errorf("annotation %s: containers[%d].memoryMiB is negative", AnnotationGPUAssign, i)
		case c.MemoryMiB > 0 && len(c.UUIDs) != 1:
			return a, fmt.Errorf("annotation %s: containers[%d] has a memory slice on %d GPUs; a slice is on exactly one GPU", AnnotationGPUAssign, i, len(c.UUIDs))
		}
	}
	return a, nil
}

// Container returns the assignment of the named container.
func (a GPUAssignment) Container(name string) (ContainerGPUs, bool) {
	for _, c := range a.Containers {
		if c.Container == name {
			return c, true
		}
	}
	return ContainerGPUs{}, false
}
