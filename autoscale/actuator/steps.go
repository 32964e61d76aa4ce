package actuator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tessera-gpu/tessera/autoscale"

	corev1 "k8s.io/api/core/v1"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/failpoint"
	"github.com/tessera-gpu/tessera/scheduler/cache"
)

// step advances one node's scale-down by one phase. policy, pl, c and state are nil
// for a scale-down whose ScaleDownPolicy is gone.
type step struct {
	a      *Actuator
	pl     *autoscale.Planner
	c      *autoscale.Cluster
	state  *cache.State
	node   *corev1.Node
	sd     *autoscale.ScaleDown
	policy *tesserav1.ScaleDownPolicy
	dryRun bool
	now    time.Time
}

// advance runs the action of the node's phase. Errors are retried next round, until
// the phase has lasted StepTimeout: then the scale-down fails and is undone.
func (s *step) advance(ctx context.Context) error {
	var err error
	switch s.sd.Phase {
	case autoscale.PhaseCandidate:
		err = s.revalidate(ctx)
	case autoscale.PhaseDraining:
		err = s.drain(ctx)
	case autoscale.PhaseDrained:
		err = s.mark(ctx)
	case autoscale.PhaseRemoving:
		err = s.remove(ctx)
	case autoscale.PhaseRemoved:
		err = s.removed(ctx)
	default:
		return s.undo(ctx, "ScaleDownFailed", fmt.Sprintf("unknown phase %q in annotation %s", s.sd.Phase, autoscale.AnnotationScaleDown))
	}
	if err == nil || s.sd.Phase == autoscale.PhaseCandidate || s.sd.Phase == autoscale.PhaseRemoved {
		return err
	}
	if s.now.Sub(s.sd.Since) >= s.a.opts.StepTimeout {
		return s.undo(ctx, "ScaleDownFailed", fmt.Sprintf("%s for %s: %v", s.sd.Phase, s.now.Sub(s.sd.Since).Round(time.Second), err))
	}
	if errors.As(err, new(waiting)) {
		return nil
	}
	return err
}

// revalidate plans again once RevalidateAfter passed: a node still a candidate is
// cordoned, any other has its taint removed.
func (s *step) revalidate(ctx context.Context) error {
	if s.dryRun {
		return s.undo(ctx, "ScaleDownCancelled", "the ScaleDownPolicy is in dryRun")
	}
	if s.now.Sub(s.sd.Since) < s.a.opts.RevalidateAfter {
		return nil
	}
	d := s.pl.Revalidate(s.c, s.node.Name)
	if !d.Candidate {
		return s.undo(ctx, "ScaleDownCancelled", fmt.Sprintf("no longer a candidate when planned again: %s: %s", d.Reason, d.Message))
	}
	if err := s.next(ctx, autoscale.PhaseDraining, func(n *corev1.Node) { n.Spec.Unschedulable = true }); err != nil {
		return err
	}
	s.a.events.Normal(s.node, "ScaleDownDraining", "Cordon", "still a candidate after %s (%s): cordoned; evicting its pods", s.a.opts.RevalidateAfter, d.Message)
	return failpoint.Inject(failpoint.AutoscalerCordoned)
}

// cancelled undoes the scale-down when a pending workload now needs the node, or a
// rule other than a PodDisruptionBudget keeps it; it reports whether it did.
func (s *step) cancelled(ctx context.Context) (bool, error) {
	if s.dryRun {
		return true, s.undo(ctx, "ScaleDownCancelled", "the ScaleDownPolicy is in dryRun")
	}
	b := s.c.Nodes[s.node.Name].Blocker
	if b == nil || b.Reason == autoscale.ReasonPDB {
		b = s.pl.Keep(s.c, s.node.Name)
	}
	if b == nil {
		return false, nil
	}
	return true, s.undo(ctx, "ScaleDownCancelled", fmt.Sprintf("%s: %s", b.Reason, b.Message))
}

// drain evicts the node's pods; once none is left, the node is Drained. Pods still
// terminating when StepTimeout passed are left to end with the node.
func (s *step) drain(ctx context.Context) error {
	if done, err := s.cancelled(ctx); done || err != nil {
		return err
	}
	left, err := s.a.evictAll(ctx, s.node, s.state)
	if err != nil {
		return err
	}
	if left.waiting > 0 || (left.terminating > 0 && s.now.Sub(s.sd.Since) < s.a.opts.StepTimeout) {
		return left.err()
	}
	// Pods still terminating past the timeout end with the node.
	if err := s.next(ctx, autoscale.PhaseDrained, nil); err != nil {
		return err
	}
	return failpoint.Inject(failpoint.AutoscalerDrained)
}

// mark marks the drained node's Machine for deletion, the last point where a pending
// workload cancels the scale-down. Without a Machine the node stays cordoned,
// labelled removable.
func (s *step) mark(ctx context.Context) error {
	if done, err := s.cancelled(ctx); done || err != nil {
		return err
	}
	machine := ""
	if s.a.infra != nil {
		var err error
		if machine, err = s.a.infra.Mark(ctx, s.node, s.now); err != nil {
			return fmt.Errorf("mark the Machine for deletion: %w", err)
		}
		if err := failpoint.Inject(failpoint.AutoscalerMachineMarked); err != nil {
			return err
		}
	}
	if machine == "" {
		err := s.next(ctx, autoscale.PhaseRemoved, func(n *corev1.Node) { setLabel(n, autoscale.LabelRemovable, "true") })
		if err == nil {
			s.a.events.Normal(s.node, "LeftCordoned", "ScaleDown", "drained; no Cluster API Machine behind it, so it stays cordoned and labelled %s=true: delete the node and its instance, or uncordon it to keep it", autoscale.LabelRemovable)
		}
		return err
	}
	s.sd.Machine = machine
	return s.next(ctx, autoscale.PhaseRemoving, nil)
}

// remove records the scale-down in the policy's status, then lowers the node group by
// one; both are idempotent, so a crash between them repeats neither.
func (s *step) remove(ctx context.Context) error {
	gpus, model := gpusOf(s.node)
	if s.policy != nil {
		rec := tesserav1.ScaleDownRecord{Node: s.node.Name, GPUs: int32(gpus), Machine: s.sd.Machine}
		if err := s.a.record(ctx, s.policy, rec, s.now); err != nil {
			return err
		}
	}
	// Recorded first: another node's Lower may take this Machine once its mark settled.
	if wait := s.a.opts.MarkSettle - s.now.Sub(s.sd.Since); wait > 0 {
		return waiting{fmt.Sprintf("the Machine %s was marked %s ago; its group is lowered once the mark is %s old", s.sd.Machine, s.now.Sub(s.sd.Since).Round(time.Second), s.a.opts.MarkSettle)}
	}
	if s.a.infra == nil {
		return fmt.Errorf("the Machine %s is marked, but no Cluster API management cluster is configured", s.sd.Machine)
	}
	what, err := s.a.infra.Lower(ctx, s.node, s.now.Add(-s.a.opts.MarkSettle))
	if err == nil {
		err = failpoint.Inject(failpoint.AutoscalerLowered)
	}
	if w := (waiting{}); errors.As(err, &w) {
		return w
	}
	if err != nil {
		return fmt.Errorf("lower the node group: %w", err)
	}
	if err := s.next(ctx, autoscale.PhaseRemoved, nil); err != nil {
		return err
	}
	s.a.metrics.ScaledDownNodes.WithLabelValues(s.sd.Method, model).Inc()
	s.a.events.Normal(s.node, "ScaledDown", "ScaleDown", "%s with %d GPUs (%s) removed: Machine %s marked %s, %s (ScaleDownPolicy %s)",
		s.sd.Method, gpus, model, s.sd.Machine, "cluster.x-k8s.io/delete-machine", what, s.sd.Policy)
	return nil
}

// removed watches a finished scale-down: a node left cordoned without a Machine that
// someone uncordoned is kept, and its marks are taken off.
func (s *step) removed(ctx context.Context) error {
	if s.sd.Machine != "" || s.node.Spec.Unschedulable {
		return nil
	}
	return s.undo(ctx, "ScaleDownCancelled", "uncordoned after the drain: kept")
}

// next moves the node to phase, applying change to it in the same write.
func (s *step) next(ctx context.Context, phase autoscale.Phase, change func(*corev1.Node)) error {
	sd := *s.sd
	sd.Phase, sd.Since = phase, s.now
	return patchNode(ctx, s.a.client, s.node, func(n *corev1.Node) {
		if change != nil {
			change(n)
		}
		setState(n, &sd)
	})
}

// undo takes the scale-down back: the Machine's marks, the status record, the taint,
// the label, the cordon (unless the node was cordoned before) and the state. reason
// is the event's reason.
func (s *step) undo(ctx context.Context, reason, why string) error {
	if s.a.infra != nil && (s.sd.Phase == autoscale.PhaseDrained || s.sd.Phase == autoscale.PhaseRemoving) {
		if err := s.a.infra.Unmark(ctx, s.node); err != nil {
			return fmt.Errorf("take the deletion mark off the Machine: %w", err)
		}
	}
	if s.policy != nil && s.sd.Phase == autoscale.PhaseRemoving {
		if err := s.a.unrecord(ctx, s.policy, s.node.Name); err != nil {
			return err
		}
	}
	err := patchNode(ctx, s.a.client, s.node, func(n *corev1.Node) {
		delete(n.Annotations, autoscale.AnnotationScaleDown)
		delete(n.Labels, autoscale.LabelRemovable)
		n.Spec.Unschedulable = s.sd.WasUnschedulable
		kept := n.Spec.Taints[:0]
		for _, t := range n.Spec.Taints {
			if t.Key != autoscale.TaintCandidate {
				kept = append(kept, t)
			}
		}
		n.Spec.Taints = kept
	})
	if err != nil {
		return err
	}
	undone := "taint removed, node uncordoned"
	if s.sd.WasUnschedulable {
		undone = "taint removed, node left cordoned as it was before"
	}
	if reason == "ScaleDownFailed" {
		s.a.events.Warn(s.node, reason, "ScaleDown", "%s; scale-down undone: %s", why, undone)
	} else {
		s.a.events.Normal(s.node, reason, "ScaleDown", "%s; scale-down undone: %s", why, undone)
	}
	return nil
}
