package actuator

import (
	"context"
	"strconv"

	"github.com/tessera-gpu/tessera/autoscale"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// patchNode applies change to a copy of node (which may be a shared cache object) and
// writes the difference as a merge patch that fails with a conflict when the node
// changed since it was read: taints are a list, and a stale patch would drop others'.
func patchNode(ctx context.Context, c client.Client, node *corev1.Node, change func(*corev1.Node)) error {
	n := node.DeepCopy()
	change(n)
	return c.Patch(ctx, n, client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{}))
}

// setState writes sd into n's annotation.
func setState(n *corev1.Node, sd *autoscale.ScaleDown) {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[autoscale.AnnotationScaleDown] = sd.Encode()
}

func setLabel(n *corev1.Node, k, v string) {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[k] = v
}

// gpusOf is the node's GPU count and model as its labels and capacity say.
func gpusOf(n *corev1.Node) (int, string) {
	gpus := 0
	if q, ok := n.Status.Capacity[tesserav1.ResourceGPU]; ok {
		gpus = int(q.Value())
	} else if q, ok := n.Status.Capacity[tesserav1.ResourceNvidiaGPU]; ok {
		gpus = int(q.Value())
	}
	if c, err := strconv.Atoi(n.Labels[tesserav1.LabelGPUCount]); err == nil && c > 0 {
		gpus = c
	}
	return gpus, n.Labels[tesserav1.LabelGPUModel]
}
