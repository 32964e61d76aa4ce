package webhooks

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/apitest"
)

// What the policies see of a pod's claims: whole GPUs of exact requests, the share of a
// share request and, for a firstAvailable request, what its first subrequest asks.
func TestClaimRequestsCountFirstAvailable(t *testing.T) {
	share := apitest.GPUClaim("share", "ns", 0, "10Gi")
	reader := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(
		apitest.GPUClaim("two", "ns", 2, ""), share, apitest.FirstAvailableClaim("alt", "ns", 3, `device.attributes["gpu.tessera.dev"].model == "H100"`, "")).Build()
	claims := []corev1.PodResourceClaim{{Name: "a", ResourceClaimName: ptr.To("two")}, {Name: "b", ResourceClaimName: ptr.To("alt")},
		{Name: "c", ResourceClaimName: ptr.To("share")}, {Name: "d", ResourceClaimName: ptr.To("missing")}}
	got, err := CachedClaims{Reader: reader}.ClaimRequests(context.Background(), "ns", claims)
	if err != nil {
		t.Fatal(err)
	}
	if q := got[tesserav1.ResourceGPU]; q.Cmp(resource.MustParse("5")) != 0 {
		t.Errorf("%s: %s, want 5 (2 exact, 3 first available)", tesserav1.ResourceGPU, q.String())
	}
	if q := got[tesserav1.ResourceGPUMemory]; q.Cmp(resource.MustParse("10240")) != 0 {
		t.Errorf("%s: %s, want 10240 MiB", tesserav1.ResourceGPUMemory, q.String())
	}
}
