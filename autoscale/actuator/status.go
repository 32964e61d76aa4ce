package actuator

import (
	"context"
	"fmt"
	"time"

	"github.com/tessera-gpu/tessera/autoscale"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
)

// maxRecords is the CRD's bound on status.recentScaleDowns.
const maxRecords = 100

// Ready condition reasons of a ScaleDownPolicy.
const (
	ReasonPlanned     = "Planned"
	ReasonInvalidSpec = "InvalidSpec"
)

// writeCandidates writes the plan's candidates and the Ready condition into the
// policy's status, when they changed.
func (a *Actuator) writeCandidates(ctx context.Context, obj *tesserav1.ScaleDownPolicy, plan *autoscale.Plan) error {
	return a.patchStatus(ctx, obj, func(st *tesserav1.ScaleDownPolicyStatus) {
		st.Candidates = nil
		for _, d := range plan.Candidates() {
			c := tesserav1.ScaleDownCandidate{Node: d.Node, Reason: d.Method}
			if d.IdleSince != nil {
				c.IdleSince = metav1.NewTime(d.IdleSince.Truncate(time.Second))
			}
			st.Candidates = append(st.Candidates, c)
		}
		msg := fmt.Sprintf("%d of %d GPU nodes are candidates", len(st.Candidates), len(plan.Nodes))
		if plan.DryRun {
			msg += " (dryRun: reports only)"
		}
		setReady(st, obj.Generation, metav1.ConditionTrue, ReasonPlanned, msg)
	})
}

// writeInvalid reports a spec that does not validate.
func (a *Actuator) writeInvalid(ctx context.Context, obj *tesserav1.ScaleDownPolicy, why error) error {
	return a.patchStatus(ctx, obj, func(st *tesserav1.ScaleDownPolicyStatus) {
		st.Candidates = nil
		setReady(st, obj.Generation, metav1.ConditionFalse, ReasonInvalidSpec, why.Error())
	})
}

// record adds rec (taken at now) to status.recentScaleDowns unless a record of the
// same node and Machine is there already, keeping the latest maxRecords.
func (a *Actuator) record(ctx context.Context, obj *tesserav1.ScaleDownPolicy, rec tesserav1.ScaleDownRecord, now time.Time) error {
	return a.patchStatus(ctx, obj, func(st *tesserav1.ScaleDownPolicyStatus) {
		for _, r := range st.RecentScaleDowns {
			if r.Node == rec.Node && r.Machine == rec.Machine {
				return
			}
		}
		rec.Time = metav1.NewTime(now.Truncate(time.Second))
		st.RecentScaleDowns = append(st.RecentScaleDowns, rec)
		if n := len(st.RecentScaleDowns); n > maxRecords {
			st.RecentScaleDowns = st.RecentScaleDowns[n-maxRecords:]
		}
	})
}

// unrecord removes node's record, for a scale-down undone before its group was lowered.
func (a *Actuator) unrecord(ctx context.Context, obj *tesserav1.ScaleDownPolicy, node string) error {
	return a.patchStatus(ctx, obj, func(st *tesserav1.ScaleDownPolicyStatus) {
		kept := st.RecentScaleDowns[:0]
		for _, r := range st.RecentScaleDowns {
			if r.Node != node {
				kept = append(kept, r)
			}
		}
		st.RecentScaleDowns = kept
	})
}

// patchStatus applies change to a copy of obj's status and writes it when it differs,
// failing with a conflict when the policy changed since it was read. On success obj
// holds the written status, so that later writes of the same round build on it.
func (a *Actuator) patchStatus(ctx context.Context, obj *tesserav1.ScaleDownPolicy, change func(*tesserav1.ScaleDownPolicyStatus)) error {
	next := obj.DeepCopy()
	change(&next.Status)
	next.Status.ObservedGeneration = obj.Generation
	if equality.Semantic.DeepEqual(next.Status, obj.Status) {
		return nil
	}
	if err := a.client.Status().Patch(ctx, next, client.MergeFromWithOptions(obj, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	// obj may be a shared cache object: replace it as a whole, never edit it in place.
	*obj = *next
	return nil
}

func setReady(st *tesserav1.ScaleDownPolicyStatus, gen int64, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: tesserav1.ConditionReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
}
