package framework

import "time"

// SinceCheckpoint is how much of a running task's work an eviction at now would throw
// away: the time since its last checkpoint. ok is false when the task declares no
// checkpoints (its loss is unknown) or is not running.
func (t *Task) SinceCheckpoint(now time.Time) (lost time.Duration, ok bool) {
	if t.CheckpointEvery <= 0 || t.StartTime.IsZero() || now.Before(t.StartTime) {
		return 0, false
	}
	last := t.StartTime.Add(now.Sub(t.StartTime) / t.CheckpointEvery * t.CheckpointEvery)
	if t.CheckpointedAt.After(last) && !t.CheckpointedAt.After(now) {
		last = t.CheckpointedAt
	}
	return now.Sub(last), true
}

// SinceCheckpointAfter is SinceCheckpoint at now+wait, with the checkpoints of the
// declared interval still to come counted from the last one.
func (t *Task) SinceCheckpointAfter(now time.Time, wait time.Duration) time.Duration {
	lost, ok := t.SinceCheckpoint(now)
	if !ok {
		return 0
	}
	return (lost + wait) % t.CheckpointEvery
}
