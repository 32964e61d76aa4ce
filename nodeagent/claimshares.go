package nodeagent

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
)

// claimNames are the ResourceClaims pod holds: those its spec names, those made from its
// templates, and the one the scheduler made for its extended resources.
func claimNames(pod *corev1.Pod) []string {
	var out []string
	for i := range pod.Spec.ResourceClaims {
		if name, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i]); err == nil && name != nil {
			out = append(out, *name)
		}
	}
	if s := pod.Status.ExtendedResourceClaimStatus; s != nil && s.ResourceClaimName != "" {
		out = append(out, s.ResourceClaimName)
	}
	return out
}

// withClaimShares adds to assigned the memory shares that the node's running pods hold
// through claims (the DRA driver's allocations), so that pressure eviction weighs them
// as it weighs slices of the device plugin. Claims are read once per pod and kept while
// they stay reserved for it.
func (a *Agent) withClaimShares(ctx context.Context, pods []corev1.Pod, assigned map[types.UID]assignedPod) map[types.UID]assignedPod {
	if a.dra == nil {
		return assigned
	}
	seen, claimed := map[string]bool{}, map[types.UID]assignedPod{}
	for i := range pods {
		p := &pods[i]
		if _, slices := assigned[p.UID]; slices || p.Spec.NodeName != a.cfg.NodeName || ended(p) {
			continue // a pod gets its GPUs through the device plugin or through claims
		}
		for _, name := range claimNames(p) {
			key := p.Namespace + "/" + name
			seen[key] = true
			c := a.claimFor(ctx, key, p)
			if c == nil {
				continue
			}
			for _, s := range a.dra.Shares(c) {
				ap, ok := claimed[p.UID]
				if !ok {
					ap = assignedPod{pod: p, requestMiB: map[string]int64{}, limitMiB: map[string]int64{}}
					claimed[p.UID] = ap
				}
				ap.requestMiB[s.UUID] += s.RequestMiB
				ap.limitMiB[s.UUID] += s.LimitMiB
			}
		}
	}
	for key := range a.claims {
		if !seen[key] {
			delete(a.claims, key)
		}
	}
	for uid, ap := range claimed {
		assigned[uid] = ap
	}
	return assigned
}

// claimFor is claim key (namespace/name) as reserved for pod: from what the agent read
// before, else from the API server; nil when it is not (yet) reserved for the pod.
func (a *Agent) claimFor(ctx context.Context, key string, pod *corev1.Pod) *resourceapi.ResourceClaim {
	if c := a.claims[key]; reservedFor(c, pod.UID) {
		return c
	}
	name := key[len(pod.Namespace)+1:]
	c, err := a.deps.Kube.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		a.deps.Log.V(1).Info("Cannot read a pod's ResourceClaim for GPU memory pressure; read again next sample", "claim", key, "error", err.Error())
		return nil
	}
	if !reservedFor(c, pod.UID) {
		return nil
	}
	a.claims[key] = c
	return c
}

func reservedFor(c *resourceapi.ResourceClaim, uid types.UID) bool {
	if c == nil {
		return false
	}
	for _, r := range c.Status.ReservedFor {
		if r.UID == uid {
			return true
		}
	}
	return false
}
