package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
)

// GPUDeliveryEnvPrefixes are the environment variable prefixes through which a container
// is told which GPUs it has and how much of their memory: the NVIDIA container toolkit's
// NVIDIA_VISIBLE_DEVICES (and the rest of its NVIDIA_* settings), MPS's
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, and Tessera's TESSERA_GPU_MEMORY_LIMIT_MIB. The node
// agent's device plugin sets them from the scheduler's assignment; a pod that sets them
// itself would see GPUs it was not given.
var GPUDeliveryEnvPrefixes = []string{"NVIDIA_", "CUDA_MPS_", "TESSERA_"}

// EnvGuard refuses GPU delivery env (GPUDeliveryEnvPrefixes) in any container of a pod
// or of a pod template: in env names, and in envFrom prefixes that could produce such a
// name. The keys of the ConfigMaps and Secrets an envFrom without such a prefix imports
// are not known at admission (and may change later); they are not checked.
type EnvGuard struct{}

var _ Guard = EnvGuard{}

// Check implements Guard.
func (EnvGuard) Check(req *admissionv1.AdmissionRequest) string {
	kind, op := req.Kind.Kind, req.Operation
	switch {
	case kind == KindPod && op == admissionv1.Create,
		kind == KindPod && op == admissionv1.Update && req.SubResource == "ephemeralcontainers",
		kind != KindPod && podTemplates[kind] != nil && (op == admissionv1.Create || op == admissionv1.Update):
	default:
		return ""
	}
	// Almost no request names such a variable or imports env: look before decoding.
	if !mentionsEnv(req.Object.Raw) {
		return ""
	}
	var obj map[string]any
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return fmt.Sprintf("cannot read the %s's containers: %v", kind, err)
	}
	var found []string
	for _, t := range templatesOf(kind, obj, false) {
		var spec envSpec
		if err := remarshal(t.tmpl["spec"], &spec); err != nil {
			return fmt.Sprintf("cannot read the %s's containers at %s: %v", kind, t.specPath(), err)
		}
		found = append(found, spec.deliveryEnv(t.specPath())...)
	}
	return strings.Join(found, "; ")
}

func mentionsEnv(raw []byte) bool {
	if bytes.Contains(raw, []byte(`"envFrom"`)) {
		return true
	}
	for _, p := range GPUDeliveryEnvPrefixes {
		if bytes.Contains(raw, []byte(p)) {
			return true
		}
	}
	return false
}

// envSpec is the part of a pod spec that sets environment variables.
type envSpec struct {
	InitContainers      []envContainer `json:"initContainers"`
	Containers          []envContainer `json:"containers"`
	EphemeralContainers []envContainer `json:"ephemeralContainers"`
}

type envContainer struct {
	Name string `json:"name"`
	Env  []struct {
		Name string `json:"name"`
	} `json:"env"`
	EnvFrom []struct {
		Prefix string `json:"prefix"`
	} `json:"envFrom"`
}

// deliveryEnv lists the GPU delivery env the spec at path sets, one message each.
func (s *envSpec) deliveryEnv(path string) []string {
	var out []string
	for _, list := range []struct {
		field      string
		containers []envContainer
	}{{"initContainers", s.InitContainers}, {"containers", s.Containers}, {"ephemeralContainers", s.EphemeralContainers}} {
		for i, c := range list.containers {
			where := fmt.Sprintf("%s.%s[%d] (name %q)", path, list.field, i, c.Name)
			for _, e := range c.Env {
				if deliveryName(e.Name) {
					out = append(out, fmt.Sprintf("%s env %s: GPU delivery env is set by Tessera's device plugin; remove it", where, e.Name))
				}
			}
			for j, f := range c.EnvFrom {
				if deliveryPrefix(f.Prefix) {
					out = append(out, fmt.Sprintf("%s envFrom[%d] prefix %q: it can produce GPU delivery env (%s*), which is set by Tessera's device plugin; use another prefix",
						where, j, f.Prefix, strings.Join(GPUDeliveryEnvPrefixes, "*, ")))
				}
			}
		}
	}
	return out
}

func deliveryName(name string) bool {
	for _, p := range GPUDeliveryEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// deliveryPrefix: an envFrom prefix that starts a GPU delivery name, or that a delivery
// prefix starts with ("NV" + key "IDIA_VISIBLE_DEVICES"). An empty prefix imports the
// keys as they are; they are not known here.
func deliveryPrefix(prefix string) bool {
	if prefix == "" {
		return false
	}
	for _, p := range GPUDeliveryEnvPrefixes {
		if strings.HasPrefix(prefix, p) || strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}
