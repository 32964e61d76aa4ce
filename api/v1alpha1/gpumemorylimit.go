package v1alpha1

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// GPU-memory limits. Kubernetes makes an extended resource's limit equal to its
// request, so the limit of a container's tessera.dev/gpu-memory request travels beside
// it: in an annotation for pods asking the extended resource, in the claim's opaque
// device configuration (GPUShareConfig) for DRA claims. The scheduler packs requests;
// the node agent lets a container use memory up to its limit (the MPS pinned-memory
// limit) while the GPU has it free, and evicts the pod furthest above its request when
// the GPU runs short (pressure eviction). Without a limit, limit = request: the pod is
// never evicted that way.
const (
	// AnnotationGPUMemoryLimit on a pod is the GPU-memory limit of each of its containers
	// that asks ResourceGPUMemory: a quantity of bytes ("24Gi", "24576Mi"), or a plain
	// number of MiB like the request ("24576"). At least the request, at most the GPU's
	// memory.
	AnnotationGPUMemoryLimit = "tessera.dev/gpu-memory-limit"
	// AnnotationGPUMemoryLimitPrefix followed by a container's name is that container's
	// limit, which takes precedence over AnnotationGPUMemoryLimit.
	AnnotationGPUMemoryLimitPrefix = AnnotationGPUMemoryLimit + "."
)

// GPUShareConfigKind is the kind of the opaque device configuration, for driver
// DRADriver, that sets a DRA claim's GPU-memory limit:
//
//	config:
//	- opaque:
//	    driver: gpu.tessera.dev
//	    parameters: {apiVersion: gpu.tessera.dev/v1alpha1, kind: GPUShareConfig, memoryLimit: 24Gi}
const GPUShareConfigKind = "GPUShareConfig"

// GPUShareConfigAPIVersion is the apiVersion of a GPUShareConfig.
const GPUShareConfigAPIVersion = DRADriver + "/v1alpha1"

// GPUShareConfig is the opaque configuration of a DRA claim's memory share.
type GPUShareConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// MemoryLimit is the GPU memory the claim's containers may use, as
	// AnnotationGPUMemoryLimit takes it; at least the share the claim consumes.
	MemoryLimit string `json:"memoryLimit,omitempty"`
}

// ParseGPUShareConfig decodes a GPUShareConfig from an opaque configuration's
// parameters; field names the field in errors.
func ParseGPUShareConfig(raw []byte, field string) (GPUShareConfig, error) {
	var c GPUShareConfig
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%s: %w; want {apiVersion: %s, kind: %s, memoryLimit: 24Gi}", field, err, GPUShareConfigAPIVersion, GPUShareConfigKind)
	}
	if c.APIVersion != GPUShareConfigAPIVersion || c.Kind != GPUShareConfigKind {
		return c, fmt.Errorf("%s: apiVersion %q kind %q: want apiVersion %s, kind %s", field, c.APIVersion, c.Kind, GPUShareConfigAPIVersion, GPUShareConfigKind)
	}
	return c, nil
}

// ParseGPUMemoryMiB reads a GPU-memory amount: a plain number is MiB, as
// ResourceGPUMemory counts; a quantity with a suffix is bytes ("24Gi"), rounded down to
// MiB. field names where it was read, for the error.
func ParseGPUMemoryMiB(field, value string) (int64, error) {
	if n, err := strconv.ParseInt(value, 10, 64); err == nil {
		if n <= 0 {
			return 0, fmt.Errorf("%s is %q: must be positive", field, value)
		}
		return n, nil
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return 0, fmt.Errorf("%s is %q, not a quantity: give bytes with a suffix (24Gi, 24576Mi) or a plain number of MiB", field, value)
	}
	mib := q.Value() >> 20
	if mib <= 0 {
		return 0, fmt.Errorf("%s is %q: less than 1 MiB (a number without suffix is MiB, with a suffix bytes)", field, value)
	}
	return mib, nil
}

// GPUMemoryRequestMiB is what container c asks of ResourceGPUMemory (its request, or
// its limit when it sets only that), in MiB; 0 when it asks none.
func GPUMemoryRequestMiB(c *corev1.Container) int64 {
	if q, ok := c.Resources.Requests[ResourceGPUMemory]; ok {
		return q.Value()
	}
	if q, ok := c.Resources.Limits[ResourceGPUMemory]; ok {
		return q.Value()
	}
	return 0
}

// GPUMemoryLimitMiB is the GPU-memory limit of the named container, whose request is
// requestMiB, from the pod's annotations: its own annotation, else the pod's, else the
// request. A limit below the request is an error.
func GPUMemoryLimitMiB(annotations map[string]string, container string, requestMiB int64) (int64, error) {
	key := AnnotationGPUMemoryLimitPrefix + container
	v, ok := annotations[key]
	if !ok {
		key = AnnotationGPUMemoryLimit
		v, ok = annotations[key]
	}
	if !ok {
		return requestMiB, nil
	}
	field := "metadata.annotations[" + key + "]"
	mib, err := ParseGPUMemoryMiB(field, v)
	if err != nil {
		return 0, err
	}
	if mib < requestMiB {
		return 0, fmt.Errorf("%s is %d MiB, below container %q's %s request of %d MiB: a limit is at least the request (remove it for limit = request)",
			field, mib, container, ResourceGPUMemory, requestMiB)
	}
	return mib, nil
}

// CheckGPUMemoryLimits validates the GPU-memory limit annotations of a pod (or pod
// template) with these containers: every value a quantity, every per-container key
// naming a container that asks ResourceGPUMemory, and no limit below its request.
// Whether a limit fits the GPU is checked where the GPU is known (the node agent).
func CheckGPUMemoryLimits(annotations map[string]string, containers []corev1.Container) error {
	requests := map[string]int64{}
	for i := range containers {
		if mib := GPUMemoryRequestMiB(&containers[i]); mib > 0 {
			requests[containers[i].Name] = mib
		}
	}
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		if k == AnnotationGPUMemoryLimit || strings.HasPrefix(k, AnnotationGPUMemoryLimitPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var errs []string
	for _, k := range keys {
		if name, ok := strings.CutPrefix(k, AnnotationGPUMemoryLimitPrefix); ok {
			if _, asks := requests[name]; !asks {
				errs = append(errs, fmt.Sprintf("metadata.annotations[%s] names container %q, which asks no %s: name a container that asks it, or remove the annotation",
					k, name, ResourceGPUMemory))
				continue
			}
		}
		if len(requests) == 0 {
			errs = append(errs, fmt.Sprintf("metadata.annotations[%s]: no container asks %s, so there is no request to limit: ask %s, or remove the annotation",
				k, ResourceGPUMemory, ResourceGPUMemory))
		}
		if _, err := ParseGPUMemoryMiB("metadata.annotations["+k+"]", annotations[k]); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	names := make([]string, 0, len(requests))
	for n := range requests {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := GPUMemoryLimitMiB(annotations, n, requests[n]); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
