package autoscale_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tesserav1 "github.com/tessera-gpu/tessera/api/v1alpha1"
	"github.com/tessera-gpu/tessera/autoscale"
)

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

// reclaimRun feeds one pod's samples, a minute apart, to a planner and keeps its
// decisions by minute.
type reclaimRun struct {
	t     *testing.T
	r     autoscale.IdleReclaim
	queue autoscale.ReclaimQueue
	min   int
}

func newReclaimRun(t *testing.T, pol autoscale.ReclaimPolicy) *reclaimRun {
	return &reclaimRun{t: t, queue: autoscale.ReclaimQueue{Policy: pol, AllocatedGPUs: 4000, DeservedGPUs: 8000}}
}

// sample observes pod p at the next minute with utilization util; it returns the
// decision, or the zero decision when there is none.
func (rr *reclaimRun) sample(util float64, optOut bool) autoscale.ReclaimDecision {
	rr.t.Helper()
	rr.min++
	s := autoscale.ReclaimSample{Pod: "uid-p", Name: "ns/p", Queue: "q", GPUs: 2, Utilization: util, At: t0.Add(time.Duration(rr.min) * time.Minute)}
	asked := false
	ds := rr.r.Plan([]autoscale.ReclaimSample{s}, map[string]autoscale.ReclaimQueue{"q": rr.queue}, func(autoscale.ReclaimSample) (bool, error) {
		asked = true
		return optOut, nil
	})
	if asked && (len(ds) == 0 || ds[0].IdleFor < rr.queue.Policy.IdleFor) {
		rr.t.Fatalf("minute %d: asked for the opt-out of a pod not idle for idleFor", rr.min)
	}
	if len(ds) > 1 {
		rr.t.Fatalf("minute %d: %d decisions", rr.min, len(ds))
	}
	if len(ds) == 0 {
		return autoscale.ReclaimDecision{}
	}
	return ds[0]
}

// until samples idle minutes until a decision of step comes and returns it with the
// minute it came at.
func (rr *reclaimRun) until(step autoscale.ReclaimStep, optOut bool) (autoscale.ReclaimDecision, int) {
	rr.t.Helper()
	for range 600 {
		if d := rr.sample(0, optOut); d.Step == step {
			return d, rr.min
		}
	}
	rr.t.Fatalf("no %s in 600 minutes", step)
	return autoscale.ReclaimDecision{}, 0
}

var pol = autoscale.ReclaimPolicy{Threshold: 1, IdleFor: 10 * time.Minute, GracePeriod: 5 * time.Minute}

// A pod idle for idleFor (by the samples: first idle sample at minute 1) is told
// once; gracePeriod later its workload is due for suspension until Suspended.
func TestReclaimNotifiesThenSuspends(t *testing.T) {
	rr := newReclaimRun(t, pol)
	d, at := rr.until(autoscale.ReclaimNotify, false)
	if at != 11 || !d.Changed || d.IdleFor != 10*time.Minute || !d.IdleSince.Equal(t0.Add(time.Minute)) || !d.SuspendAt.Equal(t0.Add(16*time.Minute)) || d.GPUs != 2 {
		t.Fatalf("minute %d: %+v", at, d)
	}
	if d := rr.sample(0, false); d.Step != autoscale.ReclaimNotify || d.Changed {
		t.Fatalf("second notify round: %+v", d)
	}
	d, at = rr.until(autoscale.ReclaimSuspend, false)
	if at != 16 || !d.Changed || d.Done {
		t.Fatalf("minute %d: %+v", at, d)
	}
	if d := rr.sample(0, false); d.Step != autoscale.ReclaimSuspend || d.Changed || d.Done {
		t.Fatalf("a suspension not recorded is due again: %+v", d)
	}
	rr.r.Suspended("uid-p")
	if d := rr.sample(0, false); d.Step != autoscale.ReclaimSuspend || !d.Done {
		t.Fatalf("after Suspended: %+v", d)
	}
}

// Utilization at the threshold is idle; above it resets the clock, and a pod that
// was told hears that the reclaim is cancelled.
func TestReclaimThresholdAndResetOnUse(t *testing.T) {
	rr := newReclaimRun(t, pol)
	for range 9 {
		if d := rr.sample(1, false); d.Step != "" {
			t.Fatalf("minute %d: %+v", rr.min, d)
		}
	}
	if d := rr.sample(2, false); d.Step != "" {
		t.Fatalf("busy sample: %+v", d)
	}
	_, at := rr.until(autoscale.ReclaimNotify, false)
	if at != 21 {
		t.Fatalf("told at minute %d; the clock should restart at minute 11", at)
	}
	if d := rr.sample(50, false); d.Step != autoscale.ReclaimCancel || !d.Changed || d.IdleFor != 10*time.Minute {
		t.Fatalf("used again after being told: %+v", d)
	}
	if d := rr.sample(0, false); d.Step != "" {
		t.Fatalf("new stretch: %+v", d)
	}
	_, at = rr.until(autoscale.ReclaimSuspend, false)
	if at != 23+10+5 {
		t.Fatalf("suspended at minute %d: the grace period runs from the new notice", at)
	}
}

// The opt-out spares a pod while its queue holds no more than it deserves; beyond
// it the pod is told, and suspended, with the reason.
func TestReclaimOptOutWithinDeserved(t *testing.T) {
	rr := newReclaimRun(t, pol)
	d, _ := rr.until(autoscale.ReclaimSpare, true)
	if !d.Changed || !strings.Contains(d.Note, `holds while queue q holds 4 of the 8 GPUs it deserves`) {
		t.Fatalf("%+v", d)
	}
	for range 30 {
		if d := rr.sample(0, true); d.Step != autoscale.ReclaimSpare || d.Changed {
			t.Fatalf("minute %d: %+v", rr.min, d)
		}
	}
	rr.queue.AllocatedGPUs = 9500
	d = rr.sample(0, true)
	if d.Step != autoscale.ReclaimNotify || !d.Changed || !strings.Contains(d.Note, "does not hold: queue q holds 9.5 GPUs, more than the 8 it deserves") {
		t.Fatalf("beyond deserved: %+v", d)
	}
	notified := rr.min
	d, at := rr.until(autoscale.ReclaimSuspend, true)
	if at != notified+5 || !strings.Contains(d.Note, "does not hold") {
		t.Fatalf("minute %d (told at %d): %+v", at, notified, d)
	}
}

// A dry run decides the same steps and says so; turned off, it suspends for real.
func TestReclaimDryRun(t *testing.T) {
	p := pol
	p.DryRun = true
	rr := newReclaimRun(t, p)
	d, at := rr.until(autoscale.ReclaimSuspend, false)
	if at != 16 || !d.DryRun {
		t.Fatalf("minute %d: %+v", at, d)
	}
	rr.r.Suspended("uid-p")
	if d := rr.sample(0, false); !d.Done || !d.DryRun {
		t.Fatalf("after the dry run's suspension: %+v", d)
	}
	rr.queue.Policy.DryRun = false
	if d := rr.sample(0, false); d.Step != autoscale.ReclaimSuspend || d.Done || d.DryRun {
		t.Fatalf("dryRun turned off: the suspension is due for real: %+v", d)
	}
}

// Pods of queues without a policy get nothing; pods that ended are forgotten.
// An opt-out that cannot be read leaves the pod as it stands.
func TestReclaimForgets(t *testing.T) {
	var r autoscale.IdleReclaim
	queues := map[string]autoscale.ReclaimQueue{"q": {Policy: pol}}
	for m := range 12 {
		at := t0.Add(time.Duration(m) * time.Minute)
		samples := []autoscale.ReclaimSample{{Pod: "a", Name: "ns/a", Queue: "q", At: at}, {Pod: "b", Name: "ns/b", Queue: "other", At: at}}
		if m == 5 {
			samples = samples[1:] // a ended and came back under the same UID: a new stretch
		}
		if ds := r.Plan(samples, queues, nil); len(ds) != 0 {
			t.Fatalf("minute %d: %+v", m, ds)
		}
	}
}

func TestReclaimOptOutUnreadable(t *testing.T) {
	var r autoscale.IdleReclaim
	queues := map[string]autoscale.ReclaimQueue{"q": {Policy: pol}}
	fail := func(autoscale.ReclaimSample) (bool, error) { return false, errors.New("forbidden") }
	for m := range 30 {
		s := autoscale.ReclaimSample{Pod: "a", Name: "ns/a", Queue: "q", At: t0.Add(time.Duration(m) * time.Minute)}
		if ds := r.Plan([]autoscale.ReclaimSample{s}, queues, fail); len(ds) != 0 {
			t.Fatalf("minute %d: %+v", m, ds)
		}
	}
	s := autoscale.ReclaimSample{Pod: "a", Name: "ns/a", Queue: "q", At: t0.Add(30 * time.Minute)}
	if ds := r.Plan([]autoscale.ReclaimSample{s}, queues, nil); len(ds) != 1 || ds[0].Step != autoscale.ReclaimNotify || ds[0].IdleFor != 30*time.Minute {
		t.Fatalf("readable again: %+v", ds)
	}
}

func TestReclaimPolicyFrom(t *testing.T) {
	q := &tesserav1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "q"}}
	if _, ok, err := autoscale.ReclaimPolicyFrom(q); ok || err != nil {
		t.Fatalf("no idleReclaim: %v %v", ok, err)
	}
	q.Spec.IdleReclaim = &tesserav1.IdleReclaim{UtilizationThreshold: 3}
	p, ok, err := autoscale.ReclaimPolicyFrom(q)
	want := autoscale.ReclaimPolicy{Threshold: 3, IdleFor: time.Hour, GracePeriod: 30 * time.Minute, DryRun: true}
	if !ok || err != nil || p != want {
		t.Fatalf("defaults: %+v %v %v", p, ok, err)
	}
	q.Spec.IdleReclaim = &tesserav1.IdleReclaim{IdleFor: &metav1.Duration{Duration: 2 * time.Hour}, GracePeriod: &metav1.Duration{}, DryRun: ptr.To(false)}
	if p, _, err := autoscale.ReclaimPolicyFrom(q); err != nil || p.IdleFor != 2*time.Hour || p.GracePeriod != 0 || p.DryRun {
		t.Fatalf("set: %+v %v", p, err)
	}
	for _, c := range []struct {
		spec tesserav1.IdleReclaim
		want string
	}{
		{tesserav1.IdleReclaim{UtilizationThreshold: 101}, "spec.idleReclaim.utilizationThreshold 101 must be a percent in [0, 100]"},
		{tesserav1.IdleReclaim{IdleFor: &metav1.Duration{}}, "spec.idleReclaim.idleFor 0s must be positive"},
		{tesserav1.IdleReclaim{GracePeriod: &metav1.Duration{Duration: -time.Minute}}, "spec.idleReclaim.gracePeriod -1m0s must not be negative"},
	} {
		q.Spec.IdleReclaim = &c.spec
		if _, _, err := autoscale.ReclaimPolicyFrom(q); err == nil || !strings.Contains(err.Error(), "queue q: "+c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
}
