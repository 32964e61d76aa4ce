package webhooks

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// ClaimSource reads the ResourceClaims, ResourceClaimTemplates and DeviceClasses that a
// pod's spec.resourceClaims name, so that the policies see the GPUs a pod asks through
// claims as they see those it asks as extended resources (input.workload.claimRequests).
type ClaimSource interface {
	// ClaimRequests is what claims ask of Tessera's devices (tesserav1.DRADriver):
	// tessera.dev/gpu whole GPUs, tessera.dev/gpu-memory MiB of a share. A claim or
	// template that does not exist yet asks nothing (the scheduler says why the pod
	// waits).
	ClaimRequests(ctx context.Context, namespace string, claims []corev1.PodResourceClaim) (corev1.ResourceList, error)
}

// CachedClaims reads claims, templates and classes from an informer cache.
type CachedClaims struct {
	Reader client.Reader
}

var _ ClaimSource = CachedClaims{}

// ClaimRequests implements ClaimSource.
func (c CachedClaims) ClaimRequests(ctx context.Context, namespace string, claims []corev1.PodResourceClaim) (corev1.ResourceList, error) {
	var whole, shareMiB int64
	for _, pc := range claims {
		spec, err := c.claimSpec(ctx, namespace, pc)
		if err != nil {
			return nil, err
		}
		if spec == nil {
			continue
		}
		for _, r := range spec.Devices.Requests {
			// A firstAvailable request asks what its first subrequest asks: the
			// scheduler takes only subrequests that ask the same.
			class, count, capacity := "", int64(0), (*resourcev1.CapacityRequirements)(nil)
			switch {
			case r.Exactly != nil:
				class, count, capacity = r.Exactly.DeviceClassName, r.Exactly.Count, r.Exactly.Capacity
			case len(r.FirstAvailable) > 0:
				first := r.FirstAvailable[0]
				class, count, capacity = first.DeviceClassName, first.Count, first.Capacity
			default:
				continue
			}
			ours, err := c.tesseraClass(ctx, class)
			if err != nil {
				return nil, err
			}
			if !ours {
				continue
			}
			if capacity != nil {
				if q, ok := capacity.Requests[tesserav1.DeviceCapacityMemory]; ok {
					shareMiB += (q.Value() + 1<<20 - 1) >> 20
					continue
				}
			}
			whole += max(count, 1)
		}
	}
	out := corev1.ResourceList{}
	if whole > 0 {
		out[tesserav1.ResourceGPU] = *resource.NewQuantity(whole, resource.DecimalSI)
	}
	if shareMiB > 0 {
		out[tesserav1.ResourceGPUMemory] = *resource.NewQuantity(shareMiB, resource.DecimalSI)
	}
	return out, nil
}

// claimSpec is the spec of the claim a pod names, or of the template its claim is made
// from; nil when it does not exist (yet).
func (c CachedClaims) claimSpec(ctx context.Context, namespace string, pc corev1.PodResourceClaim) (*resourcev1.ResourceClaimSpec, error) {
	switch {
	case pc.ResourceClaimName != nil:
		var rc resourcev1.ResourceClaim
		if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: *pc.ResourceClaimName}, &rc); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return &rc.Spec, nil
	case pc.ResourceClaimTemplateName != nil:
		var t resourcev1.ResourceClaimTemplate
		if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: *pc.ResourceClaimTemplateName}, &t); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return &t.Spec.Spec, nil
	}
	return nil, nil
}

// tesseraClass reports whether a DeviceClass selects Tessera's devices: one of the
// chart's classes, or a class whose selectors name the driver.
func (c CachedClaims) tesseraClass(ctx context.Context, name string) (bool, error) {
	if name == tesserav1.DeviceClassGPU || name == tesserav1.DeviceClassGPUShare {
		return true, nil
	}
	var dc resourcev1.DeviceClass
	if err := c.Reader.Get(ctx, client.ObjectKey{Name: name}, &dc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	for _, s := range dc.Spec.Selectors {
		if s.CEL != nil && strings.Contains(s.CEL.Expression, `"`+tesserav1.DRADriver+`"`) {
			return true, nil
		}
	}
	return false, nil
}

// addClaimRequests sets input.workload.claimRequests of a pod that names resource
// claims. A claim that cannot be read is left out (logged): admission does not fail on
// the cache.
func (h *Handler) addClaimRequests(ctx context.Context, req *admissionv1.AdmissionRequest, doc map[string]any) {
	if h.Claims == nil || req.Kind.Kind != KindPod {
		return
	}
	var pod corev1.Pod
	if err := decodeObject(req.Object.Raw, &pod); err != nil || len(pod.Spec.ResourceClaims) == 0 {
		return
	}
	reqs, err := h.Claims.ClaimRequests(ctx, req.Namespace, pod.Spec.ResourceClaims)
	if err != nil {
		h.Log.Info("cannot read the pod's resource claims; the policies see none", "pod", req.Namespace+"/"+pod.Name, "error", fmt.Sprint(err))
		return
	}
	if w, ok := doc["workload"].(map[string]any); ok && len(reqs) > 0 {
		w["claimRequests"] = resources(reqs)
	}
}
