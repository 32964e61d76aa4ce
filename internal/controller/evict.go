package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Evict asks the Eviction API to evict pod, with the pod's UID as a precondition so
// that a pod recreated under the same name is never hit. The API server answers 429
// (apierrors.IsTooManyRequests) while a PodDisruptionBudget allows no disruption, 404
// or 409 when the pod is gone or was replaced.
func Evict(ctx context.Context, c client.SubResourceClientConstructor, pod *corev1.Pod) error {
	uid := pod.UID
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}}
	return c.SubResource("eviction").Create(ctx, pod, ev)
}
