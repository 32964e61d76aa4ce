package minruntime

import (
	"time"

	"github.com/tessera-gpu/tessera/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "minruntime"

// MinRuntime is the victim filter.
type MinRuntime struct {
	// Default applies to jobs that set no minRuntime.
	Default time.Duration
}

var _ framework.VictimFilter = MinRuntime{}

// Name implements framework.Plugin.
func (MinRuntime) Name() string { return Name }

// Evictable implements framework.VictimFilter.
func (m MinRuntime) Evictable(j *framework.Job, now time.Time) bool {
	d := j.MinRuntime
	if d == 0 {
		d = m.Default
	}
	if d == 0 {
		return true
	}
	start := j.StartedAt()
	return start.IsZero() || now.Sub(start) >= d
}
