package autoscale

import (
	"fmt"
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// checkpointWait is when to evict n's pods for the least total cost: the work they
// lose (GPU share × time since each one's last checkpoint) plus the node's GPUs paid
// for while waiting. It weighs now against each pod's next checkpoint and returns the
// cheapest wait (0: now) with the GPU-seconds an eviction would lose now and then.
// Pods that declare no checkpoints count as losing the same whenever they go.
func checkpointWait(n *framework.Node, now time.Time) (wait time.Duration, lostNow, lostThen float64) {
	var waits []time.Duration
	for _, t := range n.Tasks {
		if since, ok := t.SinceCheckpoint(now); ok {
			lostNow += gpuShare(t) * since.Seconds()
			waits = append(waits, t.CheckpointEvery-since)
		}
	}
	best, lostThen := lostNow, lostNow
	nodeGPUs := float64(len(n.GPUs))
	for _, w := range waits {
		lost := 0.0
		for _, t := range n.Tasks {
			lost += gpuShare(t) * t.SinceCheckpointAfter(now, w).Seconds()
		}
		if cost := nodeGPUs*w.Seconds() + lost; cost < best || (cost == best && w < wait) {
			best, wait, lostThen = cost, w, lost
		}
	}
	return wait, lostNow, lostThen
}

// gpuShare is the GPUs t holds, a share counting as its part of one.
func gpuShare(t *framework.Task) float64 {
	return float64(t.Placed.GPU) / framework.MilliPerGPU
}

// waitsForCheckpoint reports whether n's pods lose less if evicted after their next
// checkpoints, saying so in d.
func waitsForCheckpoint(n *framework.Node, now time.Time, d *Decision) bool {
	wait, lostNow, lostThen := checkpointWait(n, now)
	if wait <= 0 {
		return false
	}
	d.Reason = ReasonCheckpoint
	d.Message = fmt.Sprintf("evicting its pods now throws away %.2f GPU-hours of work since their checkpoints, more than waiting %s for their next ones costs: %.2f lost then, plus %.2f for the node's %d GPUs meanwhile",
		lostNow/3600, wait.Round(time.Second), lostThen/3600, float64(len(n.GPUs))*wait.Hours(), len(n.GPUs))
	return true
}
