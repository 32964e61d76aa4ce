package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// LimitGuard refuses a GPU-memory limit that cannot be honoured
// (tesserav1.AnnotationGPUMemoryLimit, per pod or per container): not a quantity, a
// container's limit that names no container asking tessera.dev/gpu-memory, or a limit
// below the request. It reads pods on create and the pod templates of the workloads
// (podTemplates) on create and update. The validating webhook sees the pod as admission
// left it, so a request right-sizing raised above the limit is refused too. Whether a
// limit fits its GPU is known on the node: the node agent refuses a larger one.
type LimitGuard struct{}

var _ Guard = LimitGuard{}

// Check implements Guard.
func (LimitGuard) Check(req *admissionv1.AdmissionRequest) string {
	kind, op := req.Kind.Kind, req.Operation
	switch {
	case kind == KindPod && op == admissionv1.Create,
		kind != KindPod && podTemplates[kind] != nil && (op == admissionv1.Create || op == admissionv1.Update):
	default:
		return ""
	}
	// Almost no request sets a limit: look for the key before decoding.
	if !bytes.Contains(req.Object.Raw, []byte(tesserav1.AnnotationGPUMemoryLimit)) {
		return ""
	}
	var obj map[string]any
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return fmt.Sprintf("cannot read the %s's annotations: %v", kind, err)
	}
	var found []string
	for _, t := range templatesOf(kind, obj, false) {
		var tmpl struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec struct {
				Containers []corev1.Container `json:"containers"`
			} `json:"spec"`
		}
		if err := remarshal(t.tmpl, &tmpl); err != nil {
			return fmt.Sprintf("cannot read the %s's containers at %s: %v", kind, t.specPath(), err)
		}
		if err := tesserav1.CheckGPUMemoryLimits(tmpl.Metadata.Annotations, tmpl.Spec.Containers); err != nil {
			where := "the pod"
			if t.path != "" {
				where = t.path
			}
			found = append(found, where+": "+err.Error())
		}
	}
	return strings.Join(found, "; ")
}
