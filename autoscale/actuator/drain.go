package actuator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tessera-gpu/tessera/autoscale"

	"github.com/tessera-gpu/tessera/internal/controller"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tessera-gpu/tessera/scheduler/cache"
)

// drainLeft is what a drain round left on the node.
type drainLeft struct {
	// waiting are pods not evicted yet (a PodDisruptionBudget refused, or an error).
	waiting int
	// terminating are evicted pods that have not ended yet.
	terminating int
	blocked     []string
}

// waiting is an error for a step that waits for others: not reported while the step
// has time left, its cause once it timed out.
type waiting struct{ msg string }

func (w waiting) Error() string { return w.msg }

// Wait is the error of a step that must wait for msg: the step is tried again next
// round, and no failure is counted.
func Wait(msg string) error { return waiting{msg} }

// err says what the drain still waits for.
func (l drainLeft) err() error {
	if len(l.blocked) > 0 {
		return waiting{fmt.Sprintf("eviction of %v refused by a PodDisruptionBudget", l.blocked)}
	}
	return waiting{fmt.Sprintf("%d pods still terminating", l.terminating)}
}

// evictAll evicts every pod of node that a drain evicts (Evicted) and that is not
// terminating yet, through the Eviction API with a UID precondition. A 429 (a
// PodDisruptionBudget allows no disruption now) is recorded as an event on the pod and
// retried next round.
func (a *Actuator) evictAll(ctx context.Context, node *corev1.Node, st *cache.State) (drainLeft, error) {
	var pods []*corev1.Pod
	for _, p := range st.Pods {
		if p.Spec.NodeName == node.Name && autoscale.Evicted(p) {
			pods = append(pods, p)
		}
	}
	slices.SortFunc(pods, func(x, y *corev1.Pod) int { return cmp.Compare(x.Namespace+"/"+x.Name, y.Namespace+"/"+y.Name) })
	var left drainLeft
	var errs []error
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			left.terminating++
			continue
		}
		err := controller.Evict(ctx, a.client, p)
		switch {
		case err == nil:
			left.terminating++
			a.events.Normal(p, "Evicted", "Drain", "evicted to scale node %s down", node.Name)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// gone, or replaced by a pod of the same name that this drain never saw
		case apierrors.IsTooManyRequests(err):
			left.waiting++
			left.blocked = append(left.blocked, p.Namespace+"/"+p.Name)
			a.events.Warn(p, "EvictionBlocked", "Drain", "a PodDisruptionBudget allows no disruption now; node %s waits for it and retries (%v)", node.Name, err)
		default:
			left.waiting++
			errs = append(errs, fmt.Errorf("evict %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	return left, errors.Join(errs...)
}
